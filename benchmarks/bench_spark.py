"""Benchmark (issue 12): the fleet release with the record-level stage on Spark, side by side with Polars.

For each size (synthetic ITMS-shaped Parquet, generated once per size under benchmarks/data/) the same release
(report method: presence-public, public threshold, no map) runs in its own process with ``--engine polars`` (the
baseline), then with Spark ``local[1]`` and ``local[2]``. Reported per run: wall seconds of ``release_fleet`` +
``_write_release`` (Spark session start-up excluded, reported apart), records/s, the ratio to Polars, and peak
memory sampled every 0.1 s: the driver (the Python driver plus the JVM, which in local mode also hosts the
executors) and the whole process tree (with the Python workers).

    .venv/bin/python benchmarks/bench_spark.py                  # 2 M and 10 M records
    .venv/bin/python benchmarks/bench_spark.py --sizes 2,10,20  # millions of records

Results: benchmarks/results/spark.json (and a Markdown table on stdout for docs/scale-out.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"


def dataset(millions: int) -> Path:
    """A synthetic fleet of about ``millions`` M records (500 vehicles, 1,000 records per vehicle-day)."""
    from urbandp._synth.fleet import generate_fleet, write_fleet

    path = DATA / f"spark-fleet-{millions}m.parquet"
    if not path.exists():
        DATA.mkdir(exist_ok=True)
        days = max(1, round(millions * 1_000_000 / (500 * 1000)))
        write_fleet(generate_fleet(vehicles=500, days=days, seed=12, records_per_vehicle_day=1000.0), path)
    return path


class PeakMemory:
    """Peak RSS of this process plus its descendants, sampled in a thread (the JVM is a child of the driver)."""

    def __init__(self) -> None:
        import psutil

        self.me = psutil.Process()
        self.driver = 0
        self.tree = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            try:
                children = self.me.children(recursive=True)
                rss = {p.pid: p.memory_info().rss for p in children}
                own = self.me.memory_info().rss
                jvm = sum(r for p in children if "java" in p.name() for r in [rss.get(p.pid, 0)])
                self.driver = max(self.driver, own + jvm)
                self.tree = max(self.tree, own + sum(rss.values()))
            except psutil.Error:
                pass
            time.sleep(0.1)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_one(path: Path, engine: str, master: str | None) -> dict[str, float | str | None]:
    from urbandp.fleet._options import HatReleaseConfig
    from urbandp.fleet._pipeline import _write_release, release_fleet

    cfg = HatReleaseConfig(noise_scale=1.0, neighbouring="replace-one", selection="public-threshold")
    with PeakMemory() as peak:
        startup = None
        if engine == "spark":
            from urbandp._contributions.spark_session import get_spark

            t0 = time.perf_counter()
            get_spark(master)
            startup = time.perf_counter() - t0
        t = time.perf_counter()
        release, loaded = release_fleet([path], cfg, engine=engine, spark_master=master)
        with tempfile.TemporaryDirectory() as tmp:
            _write_release(Path(tmp) / "out", release, loaded, with_map=False)
        seconds = time.perf_counter() - t
    return {
        "engine": engine if master is None else f"spark {master}",
        "records": loaded.records_in,
        "seconds": seconds,
        "startup_seconds": startup,
        "records_per_s": loaded.records_in / seconds,
        "peak_driver_gb": peak.driver / 1e9,
        "peak_tree_gb": peak.tree / 1e9,
        "hats": release.privacy["hats_released"],
        "contributions": int(release.privacy["records_in_window"]),  # type: ignore[arg-type]
    }


def _child(args: list[str]) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}
    out = subprocess.run(
        [sys.executable, __file__, "--one", *args], capture_output=True, text=True, env=env, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"benchmark child failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="2,10", help="millions of records, comma-separated")
    parser.add_argument(
        "--label", default="latest", help="key of this run in results/spark.json (others are kept)"
    )
    parser.add_argument("--one", nargs=3, metavar=("PATH", "ENGINE", "MASTER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        path, engine, master = args.one
        print(json.dumps(run_one(Path(path), engine, None if master == "-" else master)))
        return
    load_before = os.getloadavg()
    rows = []
    for millions in [int(x) for x in args.sizes.split(",")]:
        path = dataset(millions)
        base = _child([str(path), "polars", "-"])
        rows.append({**base, "size_m": millions, "ratio_to_polars": 1.0})
        for master in ("local[1]", "local[2]"):
            r = _child([str(path), "spark", master])
            rows.append({**r, "size_m": millions, "ratio_to_polars": base["seconds"] / r["seconds"]})  # type: ignore[operator]
            print(json.dumps(rows[-1]), flush=True)
    load = os.getloadavg()
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
        "load_before": list(load_before),
        "rows": rows,
    }
    (HERE / "results").mkdir(exist_ok=True)
    out = HERE / "results" / "spark.json"
    runs = json.loads(out.read_text()) if out.exists() else {}
    runs = runs if isinstance(runs, dict) and "rows" not in runs else {}
    runs[args.label] = result
    out.write_text(json.dumps(runs, indent=2) + "\n")
    print("| records | engine | seconds | records/s | x Polars speed | peak driver GB | peak tree GB |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['records']:,} | {r['engine']} | {r['seconds']:.1f} | {r['records_per_s']:,.0f} | "
            f"{r['ratio_to_polars']:.3f} | {r['peak_driver_gb']:.2f} | {r['peak_tree_gb']:.2f} |"
        )
    print(result["machine"])


if __name__ == "__main__":
    main()
