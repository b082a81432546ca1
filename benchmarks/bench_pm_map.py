"""Issue 22: RMSE of the DP PM2.5 map at the Kolkata static stations, against the non-private GP and IDW.

For every window (hourly, and daily) with a static reading and at least three mobile readings, PM2.5 is predicted
at the static stations' locations from the mobile (bus) readings of that window:

* non-private: the GP of :mod:`urbandp.sensing._gp` on the raw readings, IDW (power 2) on them, and their mean;
* DP (:mod:`urbandp.sensing._pm_map_mechanism`): noisy clipped sums and counts per 1 km cell and window at epsilon per
  reading, then the GP or IDW on the clear cells (post-processing), or the window's pooled noisy mean.

and compared with what the static stations measured in that window (their mean per station and window). The DP
rows are averaged over ``--repeats`` noise draws (OpenDP's sampler). Writes ``results/pm_map.json`` and
``docs/img/sensing_pm_map_rmse.png``.

What the vehicle-window unit costs (issue 30), ``--vehicle``: the Kolkata files have no vehicle id, so there the
vehicle unit at bound M is measured as what it is for the noise, the reading unit's mechanisms at sensitivities
M and M C/2 (no truncation possible: it assumes no bus has more than M readings in a window, which the files
cannot show). On the synthetic fleet (``urbandp sensing synth``: vehicle ids, a known field) the truncation is
real: RMSE of the window mean and of the cells' IDW map against the true field at the cell centres, per M, at the
same epsilon per unit. Writes ``results/pm_map_vehicle.json``.

    .venv/bin/python benchmarks/bench_pm_map.py [--repeats 3] [--vehicle]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from urbandp._privacy.noise import OpenDPNoise
from urbandp.sensing._dp_map_mechanism import public_windows
from urbandp.sensing._grid import SquareGrid
from urbandp.sensing._interpolation import KM, fit_window, idw_predict
from urbandp.sensing._pm_map_mechanism import (
    DEFAULT_CLIP,
    cell_aggregates,
    measure_pm_map,
    plan_pm_map,
    smooth_window,
    window_means,
)
from urbandp.sensing._readings import read_readings, window_starts

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "kolkata-pm25"
BBOX = (22.45, 88.30, 22.65, 88.47)
EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
LABELS = {
    "gp": "DP cells, GP smoothed",
    "idw": "DP cells, IDW smoothed",
    "pooled": "DP window mean (all cells pooled)",
}


def station_truth(static_values, grid, window_minutes):  # type: ignore[no-untyped-def]
    """Per (window, station location): the mean of the static readings there."""
    starts = window_starts(static_values.time, window_minutes)
    keys = {}
    for w, la, lo, v in zip(starts, static_values.lat, static_values.lon, static_values.value, strict=True):
        keys.setdefault((w, la, lo), []).append(v)
    out: dict[np.datetime64, list[tuple[np.ndarray, float]]] = {}
    for (w, la, lo), vs in keys.items():
        xy = grid.to_metres(np.array([la]), np.array([lo]))[0] / KM
        out.setdefault(w, []).append((xy, float(np.mean(vs))))
    return out


def rmse(errors: list[float]) -> float:
    return math.sqrt(float(np.mean(np.square(errors)))) if errors else math.nan


def run(window_minutes: int, repeats: int) -> dict[str, object]:
    mobile, _ = read_readings(DATA / "Mobile_Autumn.csv", None, None, BBOX)
    static, _ = read_readings(DATA / "Static_Autumn.csv", None, None, BBOX)
    grid = SquareGrid(*BBOX, 1000.0)
    first = mobile.time.min().astype("datetime64[D]")
    last = mobile.time.max().astype("datetime64[D]") + np.timedelta64(1, "D")
    windows = public_windows(first.astype("datetime64[us]"), last.astype("datetime64[us]"), window_minutes)
    truth = station_truth(static, grid, window_minutes)
    starts = window_starts(mobile.time, window_minutes)
    xy_all = grid.to_metres(mobile.lat, mobile.lon) / KM
    agg = cell_aggregates(mobile, grid, windows, window_minutes, DEFAULT_CLIP)
    index = {w: i for i, w in enumerate(windows.astype("datetime64[m]"))}
    used = [w for w in truth if w.astype("datetime64[m]") in index and int((starts == w).sum()) >= 3]
    errs: dict[str, list[float]] = {"gp": [], "idw": [], "mean": []}
    t0 = time.perf_counter()
    for w in used:
        m = starts == w
        xs = np.array([xy for xy, _ in truth[w]])
        ys = np.array([v for _, v in truth[w]])
        gp = fit_window(xy_all[m], mobile.value[m]).predict(xs)[0]
        errs["gp"] += list(gp - ys)
        errs["idw"] += list(idw_predict(xy_all[m], mobile.value[m], xs) - ys)
        errs["mean"] += list(float(mobile.value[m].mean()) - ys)
    baseline = {k: rmse(v) for k, v in errs.items()}
    seconds_baseline = time.perf_counter() - t0
    dp: dict[str, dict[str, float]] = {}
    noise = OpenDPNoise()
    for eps in EPSILONS:
        plan = plan_pm_map(eps)
        got: dict[str, list[float]] = {"gp": [], "idw": [], "pooled": []}
        for _ in range(repeats):
            noisy = measure_pm_map(plan, agg, noise)
            for w in used:
                i = index[w.astype("datetime64[m]")]
                xs = np.array([xy for xy, _ in truth[w]])
                ys = np.array([v for _, v in truth[w]])
                for name in ("gp", "idw"):
                    got[name] += list(smooth_window(plan, noisy, i, grid, xs, name) - ys)
                got["pooled"] += list(float(window_means(plan, noisy)[i]) - ys)
        dp[str(eps)] = {k: rmse(v) for k, v in got.items()}
        print(f"  {window_minutes} min, epsilon {eps}: {dp[str(eps)]}", flush=True)
    return {
        "window_minutes": window_minutes,
        "cell_metres": 1000,
        "windows_evaluated": len(used),
        "station_windows": sum(len(truth[w]) for w in used),
        "mobile_readings_in_them": int(sum(int((starts == w).sum()) for w in used)),
        "baseline_rmse": baseline,
        "baseline_seconds": seconds_baseline,
        "dp_rmse": dp,
        "repeats": repeats,
    }


def plot(results: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.2), sharey=True)
    for ax, r in zip(np.atleast_1d(axes), results, strict=True):
        eps = [float(e) for e in r["dp_rmse"]]  # type: ignore[union-attr]
        for name, style in (("gp", "o-"), ("idw", "s-"), ("pooled", "^-")):
            ax.plot(eps, [r["dp_rmse"][str(e)][name] for e in eps], style, label=LABELS[name])  # type: ignore[index]
        for name, colour in (("gp", "C0"), ("idw", "C1"), ("mean", "C2")):
            ax.axhline(r["baseline_rmse"][name], color=colour, ls="--", lw=1, label=f"non-private {name}")  # type: ignore[index]
        ax.set_xscale("log")
        ax.set_xlabel("epsilon per reading")
        ax.set_title(
            f"{r['window_minutes']}-minute windows, 1 km cells ({r['station_windows']} station-windows)"
        )
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("RMSE at static stations (ug/m3)")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


BOUNDS = (1, 3, 10, 30)
VEHICLE_EPSILONS = (1.0, 4.0, 16.0)


def kolkata_vehicle(repeats: int, window_minutes: int = 1440) -> dict[str, object]:
    """Kolkata (no ids): RMSE at the stations of the DP window mean and the cells + IDW, per epsilon per unit and
    per bound M (M = 1 is the reading unit)."""
    mobile, _ = read_readings(DATA / "Mobile_Autumn.csv", None, None, BBOX)
    static, _ = read_readings(DATA / "Static_Autumn.csv", None, None, BBOX)
    grid = SquareGrid(*BBOX, 1000.0)
    first = mobile.time.min().astype("datetime64[D]")
    last = mobile.time.max().astype("datetime64[D]") + np.timedelta64(1, "D")
    windows = public_windows(first.astype("datetime64[us]"), last.astype("datetime64[us]"), window_minutes)
    truth = station_truth(static, grid, window_minutes)
    starts = window_starts(mobile.time, window_minutes)
    agg = cell_aggregates(mobile, grid, windows, window_minutes, DEFAULT_CLIP)
    index = {w: i for i, w in enumerate(windows.astype("datetime64[m]"))}
    used = [w for w in truth if w.astype("datetime64[m]") in index and int((starts == w).sum()) >= 3]
    noise = OpenDPNoise()
    out: dict[str, dict[str, float]] = {}
    for eps in VEHICLE_EPSILONS:
        for m in BOUNDS:
            plan = plan_pm_map(eps, DEFAULT_CLIP, m)
            got: dict[str, list[float]] = {"idw": [], "pooled": []}
            for _ in range(repeats):
                noisy = measure_pm_map(plan, agg, noise)
                city = window_means(plan, noisy)
                for w in used:
                    i = index[w.astype("datetime64[m]")]
                    xs = np.array([xy for xy, _ in truth[w]])
                    ys = np.array([v for _, v in truth[w]])
                    got["idw"] += list(smooth_window(plan, noisy, i, grid, xs, "idw", city=city) - ys)
                    got["pooled"] += list(float(city[i]) - ys)
            out[f"eps={eps},M={m}"] = {k: rmse(v) for k, v in got.items()}
            print(f"  kolkata daily, epsilon {eps} per unit, M {m}: {out[f'eps={eps},M={m}']}", flush=True)
    return {
        "window_minutes": window_minutes,
        "station_windows": sum(len(truth[w]) for w in used),
        "rmse": out,
    }


def synthetic_vehicle(repeats: int, vehicles: int = 40, hours: int = 24) -> dict[str, object]:
    """The synthetic fleet (ids, a known field): one reading a minute per vehicle (60 per vehicle-window), hourly
    windows, 1 km cells. RMSE against the true field at the cell centres (window mean; IDW over clear cells)."""
    from urbandp.sensing._readings import Readings
    from urbandp.sensing._synth import pollution_field, synth_readings

    df = synth_readings(vehicles * hours * 60, vehicles, hours, seed=7)
    r = Readings(
        df["lat"].to_numpy(),
        df["lon"].to_numpy(),
        np.array(df["time"].to_list(), dtype="datetime64[us]"),
        df["value"].to_numpy(),
        df["vehicle"].to_numpy().astype(str),
    )
    box = (
        float(r.lat.min()) - 1e-4,
        float(r.lon.min()) - 1e-4,
        float(r.lat.max()) + 1e-4,
        float(r.lon.max()) + 1e-4,
    )
    grid = SquareGrid(*box, 1000.0)
    start = r.time.min().astype("datetime64[h]").astype("datetime64[us]")
    windows = public_windows(start, start + np.timedelta64(hours, "h"), 60)
    # the true field at each cell centre in the middle of each window (synth's frame: km east/north of lat0, lon0)
    lat, lon = grid.centroids()[1:]
    y_km = (lat - 22.50) * 111.195
    x_km = (lon - 88.33) * 111.195 * math.cos(math.radians(22.50))
    truth = np.stack([pollution_field(x_km, y_km, h + 0.5, 7) for h in range(hours)])
    xy = grid.centroids_metres() / KM
    noise = OpenDPNoise()
    out: dict[str, dict[str, float]] = {}
    for eps in VEHICLE_EPSILONS:
        for m in (*BOUNDS, 60):
            vehicle = m != 60
            plan = plan_pm_map(
                eps, DEFAULT_CLIP, m if vehicle else 1, "vehicle-window" if vehicle else "reading"
            )
            agg = cell_aggregates(r, grid, windows, 60, DEFAULT_CLIP, r.vehicle if vehicle else None, m)
            got: dict[str, list[float]] = {"idw": [], "pooled": []}
            for _ in range(repeats):
                noisy = measure_pm_map(plan, agg, noise)
                city = window_means(plan, noisy)
                for i in range(hours):
                    got["idw"] += list(smooth_window(plan, noisy, i, grid, xy, "idw", city=city) - truth[i])
                    got["pooled"] += list(float(city[i]) - truth[i])
            key = f"eps={eps},M={m}" if vehicle else f"eps={eps},reading"
            out[key] = {k: rmse(v) for k, v in got.items()} | {"readings_used": float(agg.counts.sum())}
            print(f"  synthetic fleet, epsilon {eps} per unit, {key}: {out[key]}", flush=True)
    return {"vehicles": vehicles, "hours": hours, "readings_per_vehicle_window": 60, "cells": grid.n_cells,
            "rmse": out}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--windows", default="60,1440", help="window lengths in minutes")
    ap.add_argument("--vehicle", action="store_true", help="only the vehicle-unit measurements")
    args = ap.parse_args()
    if args.vehicle:
        res = {"kolkata": kolkata_vehicle(args.repeats), "synthetic": synthetic_vehicle(args.repeats)}
        path = ROOT / "benchmarks" / "results" / "pm_map_vehicle.json"
        path.write_text(json.dumps(res, indent=2) + "\n")
        print(f"wrote {path}")
        return
    results = []
    for minutes in (int(m) for m in args.windows.split(",")):
        print(f"{minutes}-minute windows", flush=True)
        results.append(run(minutes, args.repeats))
    out = ROOT / "benchmarks" / "results" / "pm_map.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    plot(results, ROOT / "docs" / "img" / "sensing_pm_map_rmse.png")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
