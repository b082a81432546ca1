"""Named mutations of the privacy core, each run against the few fast tests that should catch it.

Usage, from the repository root (the project's virtual environment active or named by its python):

    python tests/mutations/run_mutations.py            # every mutation; a table, exit 1 if any is not caught
    python tests/mutations/run_mutations.py --list     # the mutations and their tests
    python tests/mutations/run_mutations.py --check    # only that every mutation still finds its text
    python tests/mutations/run_mutations.py --markdown # the table of docs/privacy-core.md ("Mutation check")
    python tests/mutations/run_mutations.py top_k_smallest fieller_z_doubled   # some of them

For each mutation: ``src/`` is copied to a temporary folder, one textual change is made there (the original text
must occur exactly once), and the mutation's tests run with ``PYTHONPATH`` pointing at the mutated copy
(``pytest -x -q -p no:cacheprovider``). A mutation is *caught* when pytest reports a failing test (exit 1). It
*survived* when every test passes, and is *not applied* when its text is no longer in the source (the code moved
on: the mutation must be rewritten, or it tests nothing); both make the script exit 1, as does any other pytest
outcome (an import error, a timeout). The unmutated tests are run once first: if they fail the script exits 2.
Mutations run ``--jobs`` at a time (default 2); the whole set takes about two minutes on two cores.

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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FLEET = "tests/unit/fleet"
PRIVACY = "tests/unit/privacy"
SURVIVORS = f"{PRIVACY}/test_mutation_survivors.py"
EDGES = f"{FLEET}/test_composition_edges.py"
WINDOW = f"{FLEET}/test_window_l2.py"
MAPS = f"{PRIVACY}/test_loss_maps.py"
CORE = f"{PRIVACY}/test_privacy_core.py"
SAMPLERS = f"{PRIVACY}/test_sampler_scales.py"
DOMAIN = f"{FLEET}/test_public_domain_release.py"
PM_MAP = "tests/unit/sensing/test_pm_map_reading_loss.py"


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # under src/urbandp
    old: str
    new: str
    tests: tuple[str, ...]  # test files or node ids, relative to the repository root
    what: str


MUTATIONS = (
    # --- composition and the fleet's accounting -----------------------------------------------------------------
    Mutation(
        "top_k_smallest",
        "fleet/_account_composition.py",
        "v = np.sort(np.asarray(values, dtype=float))[::-1]",
        "v = np.sort(np.asarray(values, dtype=float))",
        (f"{EDGES}::test_top_k_sum_takes_the_k_largest_of_mixed_costs",),
        "per-day cost sums the K smallest per-HAT costs",
    ),
    Mutation(
        "rho_composition_max",
        "_privacy/loss.py",
        "min(1.0, self.delta + other.delta), self.rho + other.rho)",
        "min(1.0, self.delta + other.delta), max(self.rho, other.rho))",
        (MAPS,),
        "composed rho is the largest step's instead of the sum",
    ),
    Mutation(
        "group_rho_linear",
        "_privacy/loss.py",
        "return Loss(epsilon=k * self.epsilon, rho=k * k * self.rho)",
        "return Loss(epsilon=k * self.epsilon, rho=k * self.rho)",
        (MAPS,),
        "group privacy over D days multiplies rho by D instead of D^2",
    ),
    Mutation(
        "loss_times_delta_unmultiplied",
        "_privacy/loss.py",
        "return Loss(k * self.epsilon, min(1.0, k * self.delta), k * self.rho)",
        "return Loss(k * self.epsilon, self.delta, k * self.rho)",
        (f"{SURVIVORS}::test_loss_times_multiplies_every_part",),
        "k-fold composition leaves delta at one step's",
    ),
    Mutation(
        "store_total_ignores_spent",
        "_privacy/budget_store.py",
        "if have + asked > cap + TOL:",
        "if asked > cap + TOL:",
        ("tests/unit/budget/test_budget_store.py::test_rho_total_caps_the_group_cost_over_all_releases",),
        "a total cap is checked against one release's window loss, not all releases' composed",
    ),
    Mutation(
        "default_window_one_day",
        "_privacy/session.py",
        "return self.loss_per_day.times(len(self.days)) if self.unit in SPANNING_UNITS else self.loss_per_day",
        "return self.loss_per_day",
        (f"{SURVIVORS}::test_a_spanning_unit_s_default_window_composes_its_days",),
        "the default window loss of a spanning unit is one day's, not its days' composed",
    ),
    # --- OpenDP's maps and samplers -----------------------------------------------------------------------------
    Mutation(
        "laplace_sensitivity_halved",
        "_privacy/mechanisms.py",
        "return Laplace(float(scale)).loss(sensitivity).epsilon",
        "return Laplace(float(scale)).loss(0.5 * sensitivity).epsilon",
        (MAPS,),
        "Laplace epsilon at half the sensitivity",
    ),
    Mutation(
        "gaussian_sensitivity_halved",
        "_privacy/mechanisms.py",
        "return Gaussian(float(scale)).loss(sensitivity).rho",
        "return Gaussian(float(scale)).loss(0.5 * sensitivity).rho",
        (MAPS,),
        "Gaussian rho at half the L2 sensitivity",
    ),
    Mutation(
        "zcdp_conversion_at_rho_over_2",
        "_privacy/noise.py",
        "d_in = float(np.nextafter(np.sqrt(2.0 * rho), np.inf))",
        "d_in = float(np.nextafter(np.sqrt(rho), np.inf))",
        (f"{CORE}::test_a_zcdp_charge_is_booked_at_its_converted_epsilon",),
        "rho converted to (epsilon, delta) as if it were rho / 2",
    ),
    Mutation(
        "bounded_laplace_b_x0.9",
        "sensing/_bounded_laplace.py",
        "        b = self.scale\n",
        "        b = 0.9 * self.scale\n",
        (f"{SAMPLERS}::test_bounded_laplace_draws_at_its_calibrated_scale_within_a_tenth",),
        "bounded Laplace draws at 0.9 b",
    ),
    Mutation(
        "sampler_scale_x0.9",
        "_privacy/noise.py",
        "m = make(dp.vector_domain(atom), metric, scale)",
        "m = make(dp.vector_domain(atom), metric, 0.9 * scale)",
        (f"{SAMPLERS}::test_sampler_has_its_stated_scale_within_a_tenth",),
        "every OpenDP sampler draws at 0.9 x its scale",
    ),
    Mutation(
        "sampler_scale_x1.1",
        "_privacy/noise.py",
        "m = make(dp.vector_domain(atom), metric, scale)",
        "m = make(dp.vector_domain(atom), metric, 1.1 * scale)",
        (f"{SAMPLERS}::test_sampler_has_its_stated_scale_within_a_tenth",),
        "every OpenDP sampler draws at 1.1 x its scale (utility only, but a wrong stated error)",
    ),
    Mutation(
        "discrete_gaussian_is_laplace",
        "_privacy/noise.py",
        "return self._draw(values, scale, gaussian=True, integer=True)",
        "return self._draw(values, scale, gaussian=False, integer=True)",
        (f"{SAMPLERS}::test_sampler_has_its_stated_scale_within_a_tenth",),
        "discrete Gaussian calls draw discrete Laplace noise",
    ),
    # --- the fleet's selection over a window (L2 distances) -----------------------------------------------------
    Mutation(
        "threshold_l2_floor",
        "fleet/_measure_selection.py",
        "return (days * k, math.ceil(days * math.sqrt(k)), days)",
        "return (days * k, math.floor(days * math.sqrt(k)), days)",
        (f"{WINDOW}::test_one_day_gaussian_distance_rounds_up_at_non_square_k",),
        "Gaussian threshold distance floor(sqrt K) (sigma 2.0 for 2.83 at K 8)",
    ),
    Mutation(
        "window_l2_ceil",
        "fleet/_measure_selection.py",
        "twin.map((days * k, window_l2(k, days), float(days)))",
        "twin.map((days * k, float(math.ceil(window_l2(k, days))), float(days)))",
        (f"{WINDOW}::test_gaussian_window_cost_is_d_squared_times_the_day",),
        "window map back at ceil(D sqrt K) (121 for 108 at K 12, D 3)",
    ),
    Mutation(
        "window_one_day",
        "fleet/_measure_selection.py",
        "twin.map((days * k, window_l2(k, days), float(days)))",
        "twin.map((k, window_l2(k, 1), 1.0))",
        (f"{WINDOW}::test_gaussian_window_cost_is_d_squared_times_the_day",),
        "the selection's window cost read at one day's distance",
    ),
    # --- public domains -------------------------------------------------------------------------------------------
    Mutation(
        "domain_gaussian_day_at_one_hat",
        "fleet/_measure_selection.py",
        "cost_day = gaussian_rho(math.sqrt(k), scale)",
        "cost_day = gaussian_rho(1.0, scale)",
        (f"{SURVIVORS}::test_a_public_extent_charges_k_hats_a_day_and_d_squared_over_the_window",),
        "a public domain's Gaussian day costs one HAT's rho instead of K HATs' (L2 sqrt K)",
    ),
    Mutation(
        "domain_laplace_day_at_one_hat",
        "fleet/_measure_selection.py",
        "cost_day = counts.loss(k).epsilon",
        "cost_day = counts.loss(1).epsilon",
        (f"{SURVIVORS}::test_a_public_extent_charges_k_hats_a_day_and_d_squared_over_the_window",),
        "a public domain's Laplace day costs one HAT's epsilon instead of K HATs'",
    ),
    Mutation(
        "domain_gaussian_window_sqrt_d",
        "fleet/_measure_selection.py",
        "window = (gaussian_rho(days * math.sqrt(k), scale), 0.0)",
        "window = (gaussian_rho(math.sqrt(days * k), scale), 0.0)",
        (f"{SURVIVORS}::test_a_public_extent_charges_k_hats_a_day_and_d_squared_over_the_window",),
        "a public domain's Gaussian window at L2 sqrt(D K) instead of D sqrt K",
    ),
    Mutation(
        "fp_threshold_gaussian_minus_1sd",
        "fleet/_measure_selection.py",
        "t = scale * NormalDist().inv_cdf(1.0 - f / m) if gaussian",
        "t = scale * (NormalDist().inv_cdf(1.0 - f / m) - 1.0) if gaussian",
        (f"{SURVIVORS}::test_an_extent_releases_only_counts_past_the_false_positive_threshold",),
        "a public extent's Gaussian false-positive threshold 1 sd lower (more empty HATs shown)",
    ),
    Mutation(
        "fp_threshold_laplace_minus_1sd",
        "fleet/_measure_selection.py",
        "else math.ceil(scale * math.log(m / (2.0 * f)))",
        "else math.ceil(scale * (math.log(m / (2.0 * f)) - math.sqrt(2.0)))",
        (f"{SURVIVORS}::test_an_extent_releases_only_counts_past_the_false_positive_threshold",),
        "a public extent's Laplace false-positive threshold 1 sd lower (more empty HATs shown)",
    ),
    # --- L2-normalised contributions ------------------------------------------------------------------------------
    Mutation(
        "l2_weight_unnormalised",
        "fleet/_measure.py",
        'return contributions.with_columns((1.0 / m.sqrt()).alias("weight"))',
        'return contributions.with_columns((1.0 / m.sqrt() ** 0.5).alias("weight"))',
        (f"{DOMAIN}::test_l2_weights_move_the_counts_by_exactly_1_and_the_centred_sums_by_at_most_u_over_2",),
        "L2 weights m^-1/4 instead of m^-1/2 (a vehicle-day's L2 norm above 1)",
    ),
    # --- what is shown: intervals, withheld means, pooling --------------------------------------------------------
    Mutation(
        "fieller_z_doubled",
        "fleet/_measure.py",
        "return noise.half_width() / noise.std",
        "return 2.0 * noise.half_width() / noise.std",
        (f"{EDGES}::test_fieller_interval_covers_95_percent_not_more_not_less",),
        "Fieller intervals twice as wide",
    ),
    Mutation(
        "withheld_1sd",
        "fleet/_measure.py",
        "ok = (noisy_n >= max(1.0, 2.0 * sd_n)) & shown",
        "ok = (noisy_n >= max(1.0, 1.0 * sd_n)) & shown",
        (f"{SURVIVORS}::test_a_gaussian_count_between_1_96_and_2_sd_is_withheld",),
        "means withheld below 1 sd of the count instead of 2 sd (the Gaussian band 1.96 to 2 sd shown)",
    ),
    Mutation(
        "count_interval_reaches_0_threshold",
        "fleet/_measure.py",
        "    return low, high, low > 0\n",
        "    return low, high, low >= 0\n",
        (f"{SURVIVORS}::test_a_count_at_the_selection_threshold_shows_no_mean",),
        "a mean shown where the count's interval given selection reaches 0",
    ),
    Mutation(
        "count_interval_reaches_0_route",
        "fleet/_measure.py",
        "return low, high, passed & (low > 0)",
        "return low, high, passed",
        (f"{SURVIVORS}::test_a_route_domain_hat_just_past_the_threshold_shows_no_mean",),
        "a route domain's mean shown where the count's interval reaches 0",
    ),
    Mutation(
        "pooling_tau_moment",
        "fleet/_postprocess_pooling.py",
        "tau2 = max(_spread_upper_bound((y - mu) ** 2, var + v), floor)",
        "tau2 = max(float(np.mean((y - mu) ** 2 - (var + v))), floor)",
        (f"{SURVIVORS}::test_pool_fits_the_spread_at_the_q_profile_upper_bound",),
        "pooling's tau^2 from the plain moment estimate instead of the Q-profile upper bound",
    ),
    # --- guards -----------------------------------------------------------------------------------------------------
    Mutation(
        "session_delta_guard_removed",
        "_privacy/session.py",
        'guards.check_delta(loss_per_day.delta, "delta (per unit and day)")',
        "pass",
        (f"{SURVIVORS}::test_a_session_alone_refuses_a_delta_above_the_limit",),
        "a ReleaseCharge alone books any delta per unit and day",
    ),
    Mutation(
        "session_conversion_delta_guard_removed",
        "_privacy/session.py",
        'guards.check_delta(self.conversion_delta, "delta")',
        "pass",
        (f"{SURVIVORS}::test_the_session_s_guards_at_their_limits",),
        "a ReleaseCharge alone converts zCDP at any delta",
    ),
    Mutation(
        "guards_max_delta_x10",
        "_privacy/guards.py",
        "MAX_DELTA = 1e-5\n",
        "MAX_DELTA = 1e-4\n",
        (f"{SURVIVORS}::test_the_session_s_guards_at_their_limits",),
        "the largest delta accepted ten times higher",
    ),
    Mutation(
        "guards_sane_epsilon_x2",
        "_privacy/guards.py",
        "    elif eps > SANE_EPSILON:\n",
        "    elif eps > 2 * SANE_EPSILON:\n",
        (f"{SURVIVORS}::test_the_session_s_guards_at_their_limits",),
        "the meaningless-loss guard at epsilon 200 instead of 100",
    ),
    Mutation(
        "guards_not_dp_refusal_removed",
        "_privacy/guards.py",
        "    if dataset is not None and reasons:\n",
        "    if False:\n",
        (
            f"{SURVIVORS}::test_the_session_s_guards_at_their_limits",
            f"{CORE}::test_not_dp_release_refused_with_a_dataset",
        ),
        "a release labelled NOT DP booked to a budget dataset",
    ),
    Mutation(
        "counts_spec_delta_guard_removed",
        "counts/_options.py",
        '        check_delta(self.delta, "delta")\n',
        "",
        (f"{SURVIVORS}::test_the_counts_release_refuses_a_delta_above_the_limit_before_reading_the_input",),
        "the counts release accepts any delta from Python",
    ),
    # --- sensing pm-map -------------------------------------------------------------------------------------------
    Mutation(
        "pm_map_reading_loss_as_unit",
        "sensing/_pm_map_mechanism.py",
        "return self.count.loss(2.0) + self.total.loss(self.clip)",
        "return self.loss_per_unit()",
        (f"{PM_MAP}::test_loss_per_reading_is_two_epsilon_over_m",),
        "pm-map states a reading's loss as its vehicle-window's (true: 2 epsilon / M)",
    ),
    Mutation(
        "pm_map_evenly_spaced_ranks",
        "sensing/_pm_map_mechanism.py",
        "keep[order] = rank_sorted < int(max_readings)",
        "keep[order] = (rank_sorted * int(max_readings)) % np.maximum(np.diff(np.append(group_start, n))"
        "[np.cumsum(new_group) - 1], 1) < int(max_readings)",
        (f"{PM_MAP}::test_removing_one_reading_changes_at_most_two_kept_readings",),
        "pm-map keeps readings by their ranks' spacing (removing one reading swaps many kept readings)",
    ),
)


def run_tests(tests: tuple[str, ...], src: Path, timeout: float) -> tuple[int, float, str]:
    """pytest on ``tests`` with ``src`` first on the import path: (exit code, seconds, last output lines)."""
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    start = time.monotonic()
    try:
        out = subprocess.run(
            cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
        rc, tail = out.returncode, "\n".join((out.stdout + out.stderr).strip().splitlines()[-5:])
    except subprocess.TimeoutExpired:
        rc, tail = -1, f"timed out after {timeout:.0f} s"
    return rc, time.monotonic() - start, tail


def imported_from(src: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(src)}
    code = "import urbandp; print(urbandp.__file__)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def occurrences(m: Mutation) -> int:
    """How often the mutation's original text occurs in the real source (it must be exactly once)."""
    return (REPO / "src" / "urbandp" / m.path).read_text().count(m.old)


def mutate(m: Mutation, tmp: Path) -> Path:
    """A copy of src/ with the one textual change (the caller has checked that the text occurs once)."""
    src = tmp / "src"
    shutil.copytree(REPO / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    target = src / "urbandp" / m.path
    target.write_text(target.read_text().replace(m.old, m.new))
    return src


def run_one(m: Mutation, timeout: float) -> tuple[str, float, str]:
    """(result, seconds, pytest's last lines) of one mutation."""
    if occurrences(m) != 1:
        return (
            f"NOT APPLIED ({occurrences(m)}x)",
            0.0,
            f"{m.path}: the original text occurs {occurrences(m)} times",
        )
    with tempfile.TemporaryDirectory(prefix=f"mut-{m.name}-") as tmp:
        src = mutate(m, Path(tmp))
        rc, secs, tail = run_tests(m.tests, src, timeout)
    result = {0: "SURVIVED", 1: "caught"}.get(rc, f"error {rc}")
    return result, secs, tail


def markdown() -> str:
    """The mutation table of docs/privacy-core.md, from :data:`MUTATIONS` (one source)."""
    lines = ["| mutation | in | what it breaks |", "|---|---|---|"]
    for m in MUTATIONS:
        lines.append(f"| `{m.name}` | `{m.path}` | {m.what} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="mutations to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutations and their tests")
    parser.add_argument("--check", action="store_true", help="only check that every mutation finds its text")
    parser.add_argument("--markdown", action="store_true", help="print the docs table of the mutations")
    parser.add_argument("--jobs", type=int, default=2, help="mutations run at once (default 2)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per pytest run")
    args = parser.parse_args(argv)
    unknown = set(args.names) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown mutation(s): {', '.join(sorted(unknown))}")
    chosen = [m for m in MUTATIONS if not args.names or m.name in args.names]
    if args.list:
        for m in chosen:
            print(f"{m.name:40} {m.path:28} {m.what}\n{'':40} tests: {' '.join(m.tests)}")
        return 0
    if args.markdown:
        print(markdown(), end="")
        return 0
    stale = [m for m in chosen if occurrences(m) != 1]
    for m in stale:
        print(f"{m.name}: NOT APPLIED, its text occurs {occurrences(m)} times in {m.path}", file=sys.stderr)
    if args.check:
        print(f"{len(chosen) - len(stale)} of {len(chosen)} mutations find their text once")
        return 1 if stale else 0
    started = time.monotonic()
    tests = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
    rc, secs, tail = run_tests(tests, REPO / "src", args.timeout)
    if rc != 0:
        print(f"the unmutated tests do not pass (pytest exit {rc}): fix them first\n{tail}", file=sys.stderr)
        return 2
    print(f"unmutated: {len(tests)} test files or tests pass ({secs:.0f} s)")
    with tempfile.TemporaryDirectory(
        prefix="mut-probe-"
    ) as tmp:  # PYTHONPATH wins over the installed package
        probe = Mutation("probe", "__init__.py", "", "", (), "")
        src = mutate(probe, Path(tmp))
        if not imported_from(src).startswith(str(src)):
            print("urbandp is not imported from the mutated copy: PYTHONPATH does not win", file=sys.stderr)
            return 2
    print(f"{'mutation':40} {'result':16} {'secs':>5}  what", flush=True)
    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for m, (result, secs, tail) in zip(
            chosen, pool.map(lambda m: run_one(m, args.timeout), chosen), strict=True
        ):
            failed += result != "caught"
            print(f"{m.name:40} {result:16} {secs:5.0f}  {m.what}", flush=True)
            if result != "caught" and not result.startswith("SURVIVED"):
                print(f"{'':40} {tail}", flush=True)
    print(
        f"{len(chosen) - failed} of {len(chosen)} mutations caught in {time.monotonic() - started:.0f} s"
        + (f"; {failed} survived or did not apply" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
