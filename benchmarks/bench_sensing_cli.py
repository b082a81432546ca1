"""Benchmark (issue 12 part 3): the sensing CLI as a whole, side by side with its baselines in one run.

Every urbandp figure is one `python -m urbandp sensing ...` process timed from the outside (start-up, imports,
reading, fitting, writing and the plot included), peak RSS per process.

1. `sensing interpolate` on 1,400 synthetic readings in one window, 100 x 100 grid (100 m cells), defaults
   (grid.parquet, map PNG, no cross-validation); also with `--cv` (folds reuse the window's fit). Baseline in the
   same run: scikit-learn GaussianProcessRegressor fit (Matern 3/2 + noise, 2 restarts, as bench_sensing.py)
   plus predict on the same 10,000 cells, timed in-process (its imports excluded: favourable to it).
2. `sensing dp-map` on the Kolkata mobile data (../shared/data/kolkata-pm25/Mobile_Autumn.csv, the
   docs/sensing.md command: 1 km cells, public box).
3. `sensing query` on the Kolkata grid (Mobile_Autumn, 500 m cells, every hour: a grid of ~1.9 M rows): one
   AVERAGE query on grid.parquet and on grid.csv, against the former reader (read the whole grid.csv, then filter).

    .venv/bin/python benchmarks/bench_sensing_cli.py [--skip-dp-map]

Targets: interpolate <= 4 s and >= 5x scikit-learn's fit + predict; dp-map <= 30 s; one query <= 1 s and
<= 200 MB. Results: benchmarks/results/sensing_cli.json.
"""

from __future__ import annotations

import argparse
import json
import math
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
ROOT = HERE.parent
KOLKATA = ROOT.parent / "shared" / "data" / "kolkata-pm25" / "Mobile_Autumn.csv"
KOLKATA_BOX = "22.45,88.30,22.65,88.47"
RECT = "22.50,88.32,22.56,88.37"


def _grid_box() -> str:
    """The 100 x 100 grid of bench_sensing.py: 9,999 m square from (22.50, 88.33)."""
    m = 6_371_008.8 * math.pi / 180.0
    return f"22.5,88.33,{22.50 + 9_999.0 / m},{88.33 + 9_999.0 / (m * math.cos(math.radians(22.50)))}"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def measure(cmd: list[str]) -> dict[str, float]:
    """In a fresh wrapper process: wall seconds and peak RSS of one child command."""
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=_env(), cwd=ROOT)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed: {cmd}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e3  # MB
    lines = proc.stdout.strip().splitlines()
    extras = json.loads(lines[-1]) if lines and lines[-1].startswith("{") and "--rect" not in cmd else {}
    return {"seconds": seconds, "peak_mb": peak, **extras}


def _wrapped(cmd: list[str]) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--measure", json.dumps(cmd)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"benchmark wrapper failed: {cmd}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sklearn_fit_predict(readings_csv: str) -> dict[str, float]:
    """In a child: scikit-learn fit (2 restarts) + predict mean and std on the 100 x 100 grid, one BLAS thread."""
    import polars as pl
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel
    from threadpoolctl import threadpool_limits

    from urbandp.sensing._grid import SquareGrid
    from urbandp.sensing._interpolation import KM

    df = pl.read_csv(readings_csv)
    box = [float(v) for v in _grid_box().split(",")]
    grid = SquareGrid(box[0], box[1], box[2], box[3], 100.0)
    x = grid.to_metres(df["lat"].to_numpy(), df["lon"].to_numpy()) / KM
    y = df["value"].to_numpy()
    ys = (y - y.mean()) / y.std()
    cells = grid.centroids_metres() / KM
    kernel = ConstantKernel(1.0, (1e-2, 1e2)) * Matern(1.0, (1e-3, 1e3), nu=1.5) + WhiteKernel(
        0.1, (1e-6, 10.0)
    )
    with threadpool_limits(limits=1, user_api="blas"):
        t = time.perf_counter()
        model = GaussianProcessRegressor(kernel, n_restarts_optimizer=2, random_state=0).fit(x, ys)
        fit = time.perf_counter() - t
        t = time.perf_counter()
        model.predict(cells, return_std=True)
        predict = time.perf_counter() - t
    return {"fit_s": fit, "predict_s": predict, "fit_predict_s": fit + predict, "cells": float(len(cells))}


def former_query(grid_csv: str) -> dict[str, float]:
    """In a child: the former `sensing query` reader: the whole grid.csv into memory, then the window filter."""
    import polars as pl

    t = time.perf_counter()
    g = pl.read_csv(grid_csv)
    w = g["window"].unique(maintain_order=True).to_list()[0]
    la = sorted(float(v) for v in RECT.split(",")[0::2])
    lo = sorted(float(v) for v in RECT.split(",")[1::2])
    gw = g.filter(pl.col("window") == w).sort("cell_id")
    n = gw.filter(pl.col("lat").is_between(*la) & pl.col("lon").is_between(*lo)).height
    return {"read_filter_s": time.perf_counter() - t, "cells": float(n)}


def _query_cmd(grid_file: Path) -> list[str]:
    return [sys.executable, "-m", "urbandp", "sensing", "query", str(grid_file), "--rect", RECT]
    # sigma2 bounds appended by the caller


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    ap.add_argument("--sklearn", help=argparse.SUPPRESS)
    ap.add_argument("--former-query", help=argparse.SUPPRESS)
    ap.add_argument("--skip-dp-map", action="store_true")
    a = ap.parse_args()
    if a.measure:
        print(json.dumps(measure(json.loads(a.measure))))
        return
    if a.sklearn:
        print(json.dumps(sklearn_fit_predict(a.sklearn)))
        return
    if a.former_query:
        print(json.dumps(former_query(a.former_query)))
        return

    sys.path.insert(0, str(ROOT / "src"))
    from urbandp.sensing._synth import synth_readings

    load_before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="bench-sensing-cli-"))
    results: dict[str, dict[str, float]] = {}
    try:
        readings = tmp / "readings_1400.csv"
        synth_readings(1400, vehicles=10, hours=1, seed=1).write_csv(readings)
        py = sys.executable
        interp = [py, "-m", "urbandp", "sensing", "interpolate", str(readings), "--bbox", _grid_box()]
        interp += ["--cell-metres", "100"]
        results["interpolate 1,400 readings, 100x100 grid (whole CLI, defaults)"] = _wrapped(
            [*interp, "--out", str(tmp / "i1")]
        )
        results["interpolate ... --cv (5 folds reusing the fit)"] = _wrapped(
            [*interp, "--out", str(tmp / "i2"), "--cv"]
        )
        sk = _wrapped([py, __file__, "--sklearn", str(readings)])
        sk["process_seconds"], sk["seconds"] = sk["seconds"], sk["fit_predict_s"]
        results["baseline: scikit-learn fit + predict (in-process, imports excluded)"] = sk

        if KOLKATA.exists():
            if not a.skip_dp_map:
                results["dp-map Kolkata Mobile_Autumn, 1 km cells (whole CLI)"] = _wrapped(
                    [
                        py,
                        "-m",
                        "urbandp",
                        "sensing",
                        "dp-map",
                        str(KOLKATA),
                        "--bbox",
                        KOLKATA_BOX,
                        "--cell-metres",
                        "1000",
                        "--epsilon",
                        "1",
                        "--out",
                        str(tmp / "dp"),
                    ]
                )
            base = [
                py,
                "-m",
                "urbandp",
                "sensing",
                "interpolate",
                str(KOLKATA),
                "--cell-metres",
                "500",
                "--no-plot",
            ]
            results["interpolate Kolkata Mobile_Autumn, 500 m (grid.parquet)"] = _wrapped(
                [*base, "--out", str(tmp / "k")]
            )
            subprocess.run(
                [*base, "--out", str(tmp / "kc"), "--grid-format", "csv"],
                env=_env(),
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
            sizes = {
                f: (tmp / d / f).stat().st_size / 1e6 for d, f in (("k", "grid.parquet"), ("kc", "grid.csv"))
            }
            bounds = ["--sigma2-min", "0", "--sigma2-max", "800"]
            for name, f in (
                ("grid.parquet", tmp / "k" / "grid.parquet"),
                ("grid.csv", tmp / "kc" / "grid.csv"),
            ):
                r = _wrapped([*_query_cmd(f), *bounds])
                r["file_mb"] = sizes[f.name]
                results[f"query AVERAGE on {name} ({sizes[f.name]:.0f} MB), whole CLI"] = r
            former = _wrapped([py, __file__, "--former-query", str(tmp / "kc" / "grid.csv")])
            results["baseline: former query reader (whole grid.csv read, then filtered)"] = former
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    sk_s = results["baseline: scikit-learn fit + predict (in-process, imports excluded)"]["seconds"]
    print(f"\n{'run':78s} {'seconds':>8s} {'peak MB':>8s} {'sklearn / this':>14s}")
    for name, r in results.items():
        print(f"{name:78s} {r['seconds']:8.2f} {r['peak_mb']:8.0f} {sk_s / r['seconds']:13.1f}x")
    write_results("sensing_cli", results, load_before)


if __name__ == "__main__":
    main()
