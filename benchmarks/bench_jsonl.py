"""Benchmark (issue 12 part 2): the whole CLI `urbandp release` on ITMS-shaped JSON Lines vs the pandas baseline.

Both run in the same invocation, each as its own process timed from the outside (interpreter start-up, imports,
reading, release and writing included; peak memory per process). The file is synthetic ITMS JSON Lines (nested
``location.coordinates``, one record per line, the synthetic fleet's dirty rows included), generated once into
benchmarks/data/. The baseline is benchmarks/baseline_itms_pandas.py reading the JSON Lines the way the seed
scripts did: ``pandas.read_json(lines=True)``, coordinates taken from the nested dicts, then the same pandas + h3
row-wise release as in bench_fleet.py.

    .venv/bin/python benchmarks/bench_jsonl.py                       # 600 k records, urbandp vs baseline
    .venv/bin/python benchmarks/bench_jsonl.py --large-days 10       # also urbandp alone on 540 vehicles x 10 days

``--bad-lines N`` writes a copy of the file with N malformed lines spread through it and times urbandp on it too
(the bad lines are quarantined as ``unparseable_record`` without a line-by-line fallback).
``--repeat N`` (default 3) runs urbandp and the baseline N times each, alternating, after one warm-up run of each
(not counted), and reports the median runs. Both run with bytecode caches, as installed packages do.
Targets: >= 6x the baseline on 600 k records; >= 1 M records/s on 20 M records. Results: benchmarks/results/jsonl.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import write_results

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
ROOT = HERE.parent


def read_itms_jsonl(path: str | Path):  # type: ignore[no-untyped-def]
    """Seed-style reader: ``pandas.read_json(lines=True)``, lng/lat from the nested ``location`` dicts."""
    import pandas as pd

    df = pd.read_json(path, lines=True, dtype=False, convert_dates=False)
    coords = df["location"].map(lambda loc: loc.get("coordinates") if isinstance(loc, dict) else None)
    return pd.DataFrame(
        {
            "license_plate": df["license_plate"],
            "observationDateTime": df["observationDateTime"],
            "lng": pd.to_numeric(coords.str[0], errors="coerce"),
            "lat": pd.to_numeric(coords.str[1], errors="coerce"),
            "speed": pd.to_numeric(df["speed"], errors="coerce"),
        }
    )


def run_baseline(path: Path) -> dict[str, float]:
    """In the child process: the pandas release on the JSON Lines file (module imports included in the wall time)."""
    sys.path.insert(0, str(HERE))
    import baseline_itms_pandas as base

    base.read_itms_parquet = read_itms_jsonl  # type: ignore[assignment]  # same release, JSON Lines reader
    out = base.baseline_release(path, noise_scale=1.0)
    return {"hats": float(len(out["hat_speed"]))}


def _timed(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Wall seconds and peak RSS (GB) of one child process; its last stdout line may carry JSON extras."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=ROOT)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed: {cmd}\n{proc.stderr[-3000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    extras: dict[str, float] = {}
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    if last.startswith("{"):
        extras = json.loads(last)
    # ru_maxrss of children is the max over all children so far: each measured child runs in a fresh wrapper
    return {"seconds": seconds, "peak_gb": max(peak, before) / 1e6, **extras}


def _wrapped(args: list[str]) -> dict[str, float]:
    """Run `bench_jsonl.py --measure ...` in a fresh process so each child's peak RSS is its own."""
    proc = subprocess.run(
        [sys.executable, __file__, "--measure", *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"benchmark wrapper failed: {args}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(kind: str, path: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    # As installed: pip compiles the package's bytecode at install, so a run does not recompile it. A sandbox
    # with PYTHONDONTWRITEBYTECODE=1 made every urbandp run recompile its ~60 modules (0.10 s of 1.8 s) while the
    # one-file baseline compiled nothing; the caches are written by the first (warm-up) run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if kind == "baseline":
        return _timed([sys.executable, __file__, "--run-baseline", str(path)], env)
    out = Path(tempfile.mkdtemp(prefix="bench-jsonl-"))
    try:
        cmd = [sys.executable, "-m", "urbandp", "release", str(path), "--out", str(out / "release")]
        cmd += ["--no-map", "--epsilon-per-day", "10"]
        r = _timed(cmd, env)
        privacy = json.loads((out / "release" / "privacy.json").read_text())
        r["hats"] = float(privacy.get("hats_released", 0))
        r["records_in_release"] = float(privacy.get("records_in", 0))
        return r
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _median_run(runs: list[dict[str, float]]) -> dict[str, float]:
    """The run with the median wall time, with every run's seconds listed."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    return {**ordered[len(ordered) // 2], "runs_seconds": [r["seconds"] for r in runs]}  # type: ignore[dict-item]


def _ensure_file(vehicles: int, days: int) -> tuple[Path, int]:
    from urbandp._synth.fleet import FleetSpec, write_fleet_days

    DATA.mkdir(exist_ok=True)
    path = DATA / f"itms_{vehicles}v_{days}d.jsonl"
    count = path.with_suffix(".count")
    if not path.exists() or not count.exists():
        print(f"generating {path} ...", flush=True)
        _, n = write_fleet_days(FleetSpec(vehicles=vehicles, days=days, seed=7), path)
        count.write_text(str(n))
    return path, int(count.read_text())


def _with_bad_lines(path: Path, n_bad: int) -> Path:
    out = path.with_name(f"{path.stem}_bad{n_bad}.jsonl")
    if not out.exists():
        lines = path.read_bytes().split(b"\n")
        step = max(1, len(lines) // (n_bad + 1))
        for k in range(1, n_bad + 1):
            lines[k * step] = lines[k * step][: len(lines[k * step]) // 2]  # a record cut in half
        out.write_bytes(b"\n".join(lines))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run-baseline", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument(
        "--vehicles", type=int, default=488, help="fleet size of the side-by-side file (488: ~600 k)"
    )
    ap.add_argument("--large-days", type=int, default=0, help="also time urbandp on 540 vehicles x N days")
    ap.add_argument("--bad-lines", type=int, default=100, help="malformed lines in the dirty copy (0 = skip)")
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs of urbandp and the baseline, alternating; medians are reported",
    )
    a = ap.parse_args()
    if a.run_baseline:
        print(json.dumps(run_baseline(a.run_baseline)))
        return
    if a.measure:
        print(json.dumps(measure(a.measure[0], Path(a.measure[1]))))
        return

    load_before = os.getloadavg()
    path, n = _ensure_file(a.vehicles, 1)
    results: dict[str, dict[str, float]] = {}
    ours: list[dict[str, float]] = []
    base_runs: list[dict[str, float]] = []
    _wrapped(["ours", str(path)])  # warm-up, not counted: writes the bytecode caches, as an install does
    _wrapped(["baseline", str(path)])
    for _ in range(max(1, a.repeat)):  # alternating, so a slow spell of the machine hits both sides
        ours.append(_wrapped(["ours", str(path)]))
        base_runs.append(_wrapped(["baseline", str(path)]))
    results["urbandp release (whole CLI)"] = {**_median_run(ours), "records": n}
    if a.bad_lines:
        dirty = _with_bad_lines(path, a.bad_lines)
        results[f"urbandp release, {a.bad_lines} malformed lines"] = {
            **_wrapped(["ours", str(dirty)]),
            "records": n,
        }
    results["baseline: pandas read_json(lines) + h3 row-wise"] = {**_median_run(base_runs), "records": n}
    if a.large_days:
        big, n_big = _ensure_file(540, a.large_days)
        results[f"urbandp release (whole CLI), {n_big / 1e6:.1f} M records"] = {
            **_wrapped(["ours", str(big)]),
            "records": n_big,
        }
    base = results["baseline: pandas read_json(lines) + h3 row-wise"]
    base_rate = base["records"] / base["seconds"]
    print(
        f"\n{'run':56s} {'records':>12s} {'seconds':>9s} {'records/s':>12s} {'peak GB':>8s} {'vs baseline':>11s}"
    )
    for name, r in results.items():
        rate = r["records"] / r["seconds"]
        r["records_per_s"] = rate
        r["ratio_vs_baseline"] = rate / base_rate
        print(
            f"{name:56s} {int(r['records']):12,d} {r['seconds']:9.2f} {rate:12,.0f} {r['peak_gb']:8.2f} "
            f"{rate / base_rate:10.1f}x"
        )
    write_results("jsonl", results, load_before)


if __name__ == "__main__":
    main()
