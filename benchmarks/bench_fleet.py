"""Benchmark (issue 2): records/s from Parquet input to released HAT tables, urbandp vs the ITMS-style baseline.

Both run in the same invocation, each in its own process (so peak memory is measured separately), on the same
synthetic ITMS-shaped Parquet file (generated once, ~20 M records: 540 vehicles x 30 days). The baseline is
benchmarks/baseline_itms_pandas.py: pandas + h3-py applied row by row, as the original ITMS scripts did.

    .venv/bin/python benchmarks/bench_fleet.py                       # 20 M records, full baseline (~4 min)
    .venv/bin/python benchmarks/bench_fleet.py --baseline-records 2000000   # baseline on the first 2 M rows

Targets: >= 2,000,000 records/s, >= 10x the baseline, peak memory < 4 GB. Results: benchmarks/results/fleet.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # Linux: kilobytes


def run_ours(path: Path, mode: str) -> dict[str, float]:
    from urbandp.fleet._options import HatReleaseConfig
    from urbandp.fleet._pipeline import _write_release, release_fleet

    if mode == "report-method":
        cfg = HatReleaseConfig(noise_scale=1.0, neighbouring="replace-one", selection="public-threshold")
    else:
        cfg = HatReleaseConfig(epsilon_per_day=10.0, domain_bbox=(21.0, 72.6, 21.35, 73.05))
    t = time.perf_counter()
    release, loaded = release_fleet([path], cfg)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:  # the release and its owner_only/ sibling, discarded
        _write_release(Path(tmp) / f"out-{mode}", release, loaded, with_map=False)
    seconds = time.perf_counter() - t
    return {
        "seconds": seconds,
        "records": loaded.records_in,
        "peak_gb": _peak_gb(),
        "hats": release.privacy["hats_released"],
    }


def run_baseline(path: Path) -> dict[str, float]:
    sys.path.insert(0, str(HERE))
    import pyarrow.parquet as pq

    from baseline_itms_pandas import baseline_release

    records = pq.ParquetFile(path).metadata.num_rows
    t = time.perf_counter()
    out = baseline_release(path, noise_scale=1.0)
    seconds = time.perf_counter() - t
    return {"seconds": seconds, "records": records, "peak_gb": _peak_gb(), "hats": len(out["hat_speed"])}


def _child(args: list[str]) -> dict[str, float]:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed: {args}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _ensure_file(vehicles: int, days: int) -> Path:
    from urbandp._synth.fleet import FleetSpec, write_fleet_days

    DATA.mkdir(exist_ok=True)
    path = DATA / f"fleet_{vehicles}v_{days}d.parquet"
    if not path.exists():
        print(f"generating {path} ...", flush=True)
        write_fleet_days(FleetSpec(vehicles=vehicles, days=days, seed=7), path)
    return path


def _subset(path: Path, rows: int) -> Path:
    import polars as pl

    out = path.with_name(f"{path.stem}_first{rows}.parquet")
    if not out.exists():
        pl.scan_parquet(path).head(rows).sink_parquet(out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", choices=["ours", "baseline"], help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="report-method", help=argparse.SUPPRESS)
    ap.add_argument("file", nargs="?", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--vehicles", type=int, default=540)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument(
        "--baseline-records", type=int, default=0, help="run the baseline on the first N rows only"
    )
    a = ap.parse_args()
    if a.run == "ours":
        print(json.dumps(run_ours(a.file, a.mode)))
        return
    if a.run == "baseline":
        print(json.dumps(run_baseline(a.file)))
        return

    path = _ensure_file(a.vehicles, a.days)
    results = {
        "urbandp (report method: replace-one, public threshold)": _child(
            ["--run", "ours", "--mode", "report-method", str(path)]
        ),
        "urbandp (default: add/remove, DP selection)": _child(
            ["--run", "ours", "--mode", "default", str(path)]
        ),
    }
    base_path = _subset(path, a.baseline_records) if a.baseline_records else path
    results["baseline: pandas + h3 row-wise (ITMS scripts)"] = _child(["--run", "baseline", str(base_path)])
    base_rate = (
        results["baseline: pandas + h3 row-wise (ITMS scripts)"]["records"]
        / results["baseline: pandas + h3 row-wise (ITMS scripts)"]["seconds"]
    )
    print(
        f"\n{'run':56s} {'records':>12s} {'seconds':>9s} {'records/s':>12s} {'peak GB':>8s} {'vs baseline':>11s}"
    )
    for name, r in results.items():
        rate = r["records"] / r["seconds"]
        r["records_per_s"] = rate
        r["ratio_vs_baseline"] = rate / base_rate
        print(
            f"{name:56s} {r['records']:12,d} {r['seconds']:9.2f} {rate:12,.0f} {r['peak_gb']:8.2f} {rate / base_rate:10.1f}x"
        )
    meta = {
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
        "load_avg_before": __import__("os").getloadavg(),
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "fleet.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
