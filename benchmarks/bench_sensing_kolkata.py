"""The Kolkata season map against the fixed stations: does the DP PM2.5 map keep the spatial signal?

One window over the whole season (``--window whole``: autumn 2023, 15 Sep - 31 Oct, the bus readings of
``Mobile_Autumn.csv``; spring 2023 as the second season), 1 km cells over the city's box, epsilon 4 (and 1) per
reading. For each smoother (GP, IDW) it measures

* **spread**: the standard deviation of the map across the grid's cells, DP and non-private, and their ratio;
* **RMSE at the stations**: the map at each fixed station's cell against the station's season mean
  (``Static_*.csv``), DP and non-private, and their ratio.

The non-private map is what an analyst with the raw readings would draw: the same smoother (the GP of
:mod:`urbandp.sensing._gp`, or IDW) fitted on every clipped bus reading of the season, predicted at the cell
centres. Also reported (``exact_cells``): each cell with readings at its exact mean and the smoother elsewhere,
whose spread is mostly the sampling noise of cells with one or two readings. The DP rows are averaged over ``--repeats`` releases (OpenDP's sampler). Writes
``results/sensing_kolkata.json``.

Daily windows (``daily``, autumn): the same measures per day (the map's spread across cells and its RMSE at the
stations against their daily means), their medians over the days with at least three clear cells, at epsilon 1
and 4 per reading, GP smoother, one release each.

    .venv/bin/python benchmarks/bench_sensing_kolkata.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from urbandp._privacy.noise import OpenDPNoise
from urbandp.sensing._grid import SquareGrid
from urbandp.sensing._interpolation import KM, fit_window, idw_predict
from urbandp.sensing._pm_map_mechanism import (
    DEFAULT_CLIP,
    cell_aggregates,
    measure_pm_map,
    plan_pm_map,
    smooth_cells,
    smooth_window,
)
from urbandp.sensing._readings import read_readings

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "kolkata-pm25"
RESULTS = Path(__file__).resolve().parent / "results" / "sensing_kolkata.json"
BBOX = (22.45, 88.30, 22.65, 88.47)
SEASONS = {"autumn": ("2023-09-15", "2023-11-01"), "spring": ("2023-04-23", "2023-04-29")}
EPSILONS = (4.0, 1.0)
SMOOTHERS = ("gp", "idw")


def station_means(season: str, grid: SquareGrid) -> tuple[np.ndarray, np.ndarray]:
    """(cell index, season mean) of each fixed station inside the grid."""
    static, _ = read_readings(DATA / f"Static_{season.title()}.csv", None, None, BBOX)
    cells = grid.cell_id(static.lat, static.lon)
    keys: dict[tuple[float, float], list[float]] = {}
    for la, lo, v in zip(static.lat, static.lon, static.value, strict=True):
        keys.setdefault((float(la), float(lo)), []).append(float(v))
    lat = np.array([k[0] for k in keys])
    lon = np.array([k[1] for k in keys])
    cells = grid.cell_id(lat, lon)
    means = np.array([np.mean(v) for v in keys.values()])
    ok = cells >= 0
    return cells[ok], means[ok]


def rmse(a: np.ndarray, b: np.ndarray) -> float:
    return math.sqrt(float(np.mean((a - b) ** 2)))


def season(name: str, repeats: int) -> dict[str, Any]:
    start, end = SEASONS[name]
    mobile, _ = read_readings(DATA / f"Mobile_{name.title()}.csv", None, None, BBOX)
    grid = SquareGrid(*BBOX, 1000.0)
    s, e = np.datetime64(start, "m"), np.datetime64(end, "m")
    t = mobile.time.astype("datetime64[m]")
    mobile = mobile.subset((t >= s) & (t < e))
    minutes = int((e - s) // np.timedelta64(1, "m"))
    windows = np.array([s])
    agg = cell_aggregates(mobile, grid, windows, minutes, DEFAULT_CLIP)
    cells, truth = station_means(name, grid)
    x_new = grid.centroids_metres() / KM
    counts = agg.counts[0]
    seen = counts > 0
    exact = np.where(seen, DEFAULT_CLIP / 2.0 + agg.centred_sums[0] / np.maximum(counts, 1.0), np.nan)
    out: dict[str, Any] = {
        "window": [start, end],
        "cells": grid.n_cells,
        "cells_with_readings": int(seen.sum()),
        "cells_with_30_readings": int((counts >= 30).sum()),
        "readings": int(counts.sum()),
        "stations": len(truth),
        "smoothers": {},
    }
    noise = OpenDPNoise()
    for smoother in SMOOTHERS:
        exact_map = smooth_cells(grid, x_new, exact[seen], np.flatnonzero(seen), smoother, DEFAULT_CLIP)
        t0 = time.perf_counter()
        xy = grid.to_metres(mobile.lat, mobile.lon) / KM
        clipped = np.clip(mobile.value, 0.0, DEFAULT_CLIP)
        if smoother == "gp":
            base = fit_window(xy, clipped).predict(x_new)[0]
        else:
            base = idw_predict(xy, clipped, x_new)
        row: dict[str, Any] = {
            "nonprivate": {
                "spread": float(np.std(base)),
                "rmse": rmse(base[cells], truth),
                "seconds": time.perf_counter() - t0,
            },
            "exact_cells": {"spread": float(np.std(exact_map)), "rmse": rmse(exact_map[cells], truth)},
            "dp": {},
        }
        for eps in EPSILONS:
            plan = plan_pm_map(eps)
            spread, err, corr = [], [], []
            t0 = time.perf_counter()
            for _ in range(repeats):
                noisy = measure_pm_map(plan, agg, noise)
                m = smooth_window(plan, noisy, 0, grid, x_new, smoother)
                spread.append(float(np.std(m)))
                err.append(rmse(m[cells], truth))
                corr.append(float(np.corrcoef(m, base)[0, 1]) if np.std(m) > 0 else 0.0)
            sp, rm = float(np.mean(spread)), float(np.mean(err))
            row["dp"][str(eps)] = {
                "spread": sp,
                "spread_min": float(np.min(spread)),
                "spread_ratio": sp / row["nonprivate"]["spread"],
                "spread_ratio_min": float(np.min(spread)) / row["nonprivate"]["spread"],
                "rmse": rm,
                "rmse_ratio": rm / row["nonprivate"]["rmse"],
                "rmse_max": float(np.max(err)),
                "correlation_with_nonprivate_map": float(np.mean(corr)),
                "seconds_per_release": (time.perf_counter() - t0) / repeats,
            }
            print(f"  {name} {smoother} epsilon {eps}: {row['dp'][str(eps)]}", flush=True)
        print(f"  {name} {smoother} non-private: {row['nonprivate']}", flush=True)
        out["smoothers"][smoother] = row
    return out


def daily(epsilons: tuple[float, ...] = EPSILONS) -> dict[str, Any]:
    """Autumn in daily windows: median spread and RMSE at the stations, DP (GP) and non-private (GP on the
    day's readings)."""
    start, end = SEASONS["autumn"]
    mobile, _ = read_readings(DATA / "Mobile_Autumn.csv", None, None, BBOX)
    static, _ = read_readings(DATA / "Static_Autumn.csv", None, None, BBOX)
    grid = SquareGrid(*BBOX, 1000.0)
    s, e = np.datetime64(start, "m"), np.datetime64(end, "m")
    windows = np.arange(s, e, np.timedelta64(1, "D")).astype("datetime64[m]")
    agg = cell_aggregates(mobile, grid, windows, 1440, DEFAULT_CLIP)
    x_new = grid.centroids_metres() / KM
    xy = grid.to_metres(mobile.lat, mobile.lon) / KM
    day_of = mobile.time.astype("datetime64[D]")
    s_day, s_cell = static.time.astype("datetime64[D]"), grid.cell_id(static.lat, static.lon)
    rows: dict[str, dict[str, list[float]]] = {"nonprivate": {"spread": [], "rmse": []}}
    rows.update({str(eps): {"spread": [], "rmse": []} for eps in epsilons})
    noisy = {eps: measure_pm_map(plan_pm_map(eps), agg, OpenDPNoise()) for eps in epsilons}
    used = 0
    for i, w in enumerate(windows):
        day = w.astype("datetime64[D]")
        m = day_of == day
        st = (s_day == day) & (s_cell >= 0)
        if int(m.sum()) < 3 or not st.any():
            continue
        cells = np.unique(s_cell[st])
        truth = np.array([static.value[st & (s_cell == c)].mean() for c in cells])
        base = fit_window(xy[m], np.clip(mobile.value[m], 0.0, DEFAULT_CLIP)).predict(x_new)[0]
        rows["nonprivate"]["spread"].append(float(np.std(base)))
        rows["nonprivate"]["rmse"].append(rmse(base[cells], truth))
        for eps in epsilons:
            dp = smooth_window(plan_pm_map(eps), noisy[eps], i, grid, x_new, "gp")
            rows[str(eps)]["spread"].append(float(np.std(dp)))
            rows[str(eps)]["rmse"].append(rmse(dp[cells], truth))
        used += 1
    out: dict[str, Any] = {"days": used}
    for name, r in rows.items():
        out[name] = {
            "median_spread": float(np.median(r["spread"])),
            "median_rmse": float(np.median(r["rmse"])),
        }
        print(f"  daily {name}: {out[name]}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seasons", default="autumn,spring")
    args = ap.parse_args()
    result = {
        "bbox": list(BBOX),
        "cell_metres": 1000,
        "clip": DEFAULT_CLIP,
        "repeats": args.repeats,
        "seasons": {name: season(name, args.repeats) for name in args.seasons.split(",")},
        "daily": daily(),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
