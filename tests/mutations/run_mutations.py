"""Named mutations of the privacy core, each run against the tests that should catch it (issue 30).

Usage, from the repository root (the project's virtual environment active or named by its python):

    python tests/mutations/run_mutations.py            # every mutation; a table, exit 1 if any survives
    python tests/mutations/run_mutations.py --list     # the mutations and their tests
    python tests/mutations/run_mutations.py top_k_smallest fieller_z_doubled   # some of them

For each mutation: ``src/`` is copied to a temporary folder, one textual change is made there (the original text
must occur exactly once), and the mutation's tests run with ``PYTHONPATH`` pointing at the mutated copy. The
mutation is *caught* when pytest reports a failure (exit 1), *survived* when every test passes. The unmutated
tests are run once first: a mutation counts only if its tests pass on the real code.

This file is not a test module (pytest collects ``test_*.py`` only) and defines no test functions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FLEET = "tests/unit/fleet"
PRIVACY = "tests/unit/privacy"
MAPS = f"{PRIVACY}/test_loss_maps.py"


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # under src/urbandp
    old: str
    new: str
    tests: tuple[str, ...]
    what: str


MUTATIONS = (
    Mutation(
        "top_k_smallest",
        "fleet/composition.py",
        "v = np.sort(np.asarray(values, dtype=float))[::-1]",
        "v = np.sort(np.asarray(values, dtype=float))",
        (f"{FLEET}/test_accounting_edges.py",),
        "per-day cost sums the K smallest per-HAT costs",
    ),
    Mutation(
        "threshold_l2_floor",
        "fleet/selection.py",
        "return (days * k, math.ceil(days * math.sqrt(k)), days)",
        "return (days * k, math.floor(days * math.sqrt(k)), days)",
        (f"{FLEET}/test_window_l2.py",),
        "Gaussian threshold distance floor(sqrt K) (sigma 2.0 for 2.83 at K 8)",
    ),
    Mutation(
        "fieller_z_doubled",
        "fleet/measure.py",
        "return noise.half_width() / noise.std",
        "return 2.0 * noise.half_width() / noise.std",
        (f"{FLEET}/test_accounting_edges.py",),
        "Fieller intervals twice as wide",
    ),
    Mutation(
        "withheld_1sd",
        "fleet/measure.py",
        "ok = noisy_n >= max(1.0, 2.0 * sd_n)",
        "ok = noisy_n >= max(1.0, 1.0 * sd_n)",
        (f"{FLEET}/test_accounting_edges.py",),
        "means withheld below 1 sd of the count instead of 2 sd",
    ),
    Mutation(
        "bounded_laplace_b_x0.9",
        "sensing/bounded_laplace.py",
        "        b = self.scale\n",
        "        b = 0.9 * self.scale\n",
        (f"{PRIVACY}/test_sampler_scales.py",),
        "bounded Laplace draws at 0.9 b",
    ),
    Mutation(
        "sampler_scale_x0.9",
        "privacy/noise.py",
        "m = make(dp.vector_domain(atom), metric, scale)",
        "m = make(dp.vector_domain(atom), metric, 0.9 * scale)",
        (f"{PRIVACY}/test_sampler_scales.py",),
        "every OpenDP sampler draws at 0.9 x its scale",
    ),
    Mutation(
        "sampler_scale_x1.1",
        "privacy/noise.py",
        "m = make(dp.vector_domain(atom), metric, scale)",
        "m = make(dp.vector_domain(atom), metric, 1.1 * scale)",
        (f"{PRIVACY}/test_sampler_scales.py",),
        "every OpenDP sampler draws at 1.1 x its scale (utility only, but a wrong stated error)",
    ),
    Mutation(
        "discrete_gaussian_is_laplace",
        "privacy/noise.py",
        "_per_scale(\n            np.asarray(values, dtype=np.int64), scale, self._sampler(gaussian=True, integer=True)",
        "_per_scale(\n            np.asarray(values, dtype=np.int64), scale, self._sampler(gaussian=False, integer=True)",
        (f"{PRIVACY}/test_sampler_scales.py",),
        "discrete Gaussian calls draw discrete Laplace noise",
    ),
    Mutation(
        "window_l2_ceil",
        "fleet/selection.py",
        "twin.map((days * k, window_l2(k, days), float(days)))",
        "twin.map((days * k, float(math.ceil(window_l2(k, days))), float(days)))",
        (f"{FLEET}/test_window_l2.py",),
        "window map back at ceil(D sqrt K) (item 7: 121 for 108 at K 12, D 3)",
    ),
    Mutation(
        "window_one_day",
        "fleet/selection.py",
        "twin.map((days * k, window_l2(k, days), float(days)))",
        "twin.map((k, window_l2(k, 1), 1.0))",
        (f"{FLEET}/test_window_l2.py",),
        "the selection's window cost read at one day's distance",
    ),
    Mutation(
        "rho_composition_max",
        "privacy/loss.py",
        "min(1.0, self.delta + other.delta), self.rho + other.rho)",
        "min(1.0, self.delta + other.delta), max(self.rho, other.rho))",
        (MAPS, f"{PRIVACY}/test_privacy_core.py", f"{FLEET}/test_window_l2.py"),
        "composed rho is the largest step's instead of the sum",
    ),
    Mutation(
        "group_rho_linear",
        "privacy/loss.py",
        "return Loss(epsilon=k * self.epsilon, rho=k * k * self.rho)",
        "return Loss(epsilon=k * self.epsilon, rho=k * self.rho)",
        (MAPS, f"{PRIVACY}/test_privacy_core.py", f"{FLEET}/test_window_l2.py"),
        "group privacy over D days multiplies rho by D instead of D^2",
    ),
    Mutation(
        "laplace_sensitivity_halved",
        "privacy/noise.py",
        "dp.absolute_distance(T=float), float(scale))\n    return float(m.map(float(sensitivity)))\n\n\ndef laplace_scale",
        "dp.absolute_distance(T=float), float(scale))\n    return float(m.map(0.5 * float(sensitivity)))\n\n\n"
        "def laplace_scale",
        (MAPS, f"{PRIVACY}/test_noise_and_ledger.py"),
        "Laplace epsilon at half the sensitivity",
    ),
    Mutation(
        "gaussian_sensitivity_halved",
        "privacy/noise.py",
        "dp.absolute_distance(T=float), float(scale))\n    return float(m.map(float(sensitivity)))\n\n\ndef zcdp_epsilon",
        "dp.absolute_distance(T=float), float(scale))\n    return float(m.map(0.5 * float(sensitivity)))\n\n\n"
        "def zcdp_epsilon",
        (MAPS, f"{PRIVACY}/test_privacy_core.py", f"{FLEET}/test_window_l2.py"),
        "Gaussian rho at half the L2 sensitivity",
    ),
    Mutation(
        "zcdp_conversion_at_rho_over_2",
        "privacy/noise.py",
        "d_in = float(np.nextafter(np.sqrt(2.0 * rho), np.inf))",
        "d_in = float(np.nextafter(np.sqrt(rho), np.inf))",
        (f"{PRIVACY}/test_privacy_core.py",),
        "rho converted to (epsilon, delta) as if it were rho / 2",
    ),
)


def run_tests(tests: tuple[str, ...], src: Path, timeout: float) -> tuple[int, float]:
    """pytest on ``tests`` with ``src`` first on the import path: (exit code, seconds)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    start = time.monotonic()
    try:
        rc = subprocess.run(
            cmd, cwd=REPO, env=env, capture_output=True, timeout=timeout, check=False
        ).returncode
    except subprocess.TimeoutExpired:
        rc = -1
    return rc, time.monotonic() - start


def imported_from(src: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(src)}
    code = "import urbandp; print(urbandp.__file__)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def mutate(m: Mutation, tmp: Path) -> Path:
    """A copy of src/ with the one textual change; raises if the original text is not there exactly once."""
    src = tmp / "src"
    shutil.copytree(REPO / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
    target = src / "urbandp" / m.path
    text = target.read_text()
    if text.count(m.old) != 1:
        raise SystemExit(f"mutation {m.name}: the original text occurs {text.count(m.old)} times in {m.path}")
    target.write_text(text.replace(m.old, m.new))
    return src


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="mutations to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutations and their tests")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per pytest run")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.names or m.name in args.names]
    unknown = set(args.names) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown mutation(s): {', '.join(sorted(unknown))}")
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name:32} {m.path:28} {m.what}\n{'':32} tests: {' '.join(m.tests)}")
        return 0
    tests = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
    rc, secs = run_tests(tests, REPO / "src", args.timeout)
    if rc != 0:
        print(f"the unmutated tests do not pass (pytest exit {rc}): fix them first", file=sys.stderr)
        return 2
    print(f"unmutated: {len(tests)} test files pass ({secs:.0f} s)")
    print(f"{'mutation':32} {'result':9} {'secs':>5}  what")
    survived = 0
    for m in chosen:
        with tempfile.TemporaryDirectory(prefix=f"mut-{m.name}-") as tmp:
            src = mutate(m, Path(tmp))
            if not imported_from(src).startswith(str(src)):
                raise SystemExit(f"mutation {m.name}: urbandp is not imported from the mutated copy")
            rc, secs = run_tests(m.tests, src, args.timeout)
        result = {0: "SURVIVED", 1: "caught"}.get(rc, f"error {rc}")
        survived += result != "caught"
        print(f"{m.name:32} {result:9} {secs:5.0f}  {m.what}", flush=True)
    print(f"{len(chosen) - survived} of {len(chosen)} mutations caught")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
