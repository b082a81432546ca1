"""Issue 22: RMSE of the DP PM2.5 map at the Kolkata static stations, against the non-private GP and IDW.

For every window (hourly, and daily) with a static reading and at least three mobile readings, PM2.5 is predicted
at the static stations' locations from the mobile (bus) readings of that window:

* non-private: the GP of :mod:`urbandp.sensing.gp` on the raw readings, IDW (power 2) on them, and their mean;
* DP (:mod:`urbandp.sensing.pm_map`): noisy clipped sums and counts per 1 km cell and window at epsilon per
  reading, then the GP or IDW on the clear cells (post-processing), or the window's pooled noisy mean.

and compared with what the static stations measured in that window (their mean per station and window). The DP
rows are averaged over ``--repeats`` noise draws (OpenDP's sampler). Writes ``results/pm_map.json`` and
``docs/img/sensing_pm_map_rmse.png``.

    .venv/bin/python benchmarks/bench_pm_map.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from urbandp.privacy.noise import OpenDPNoise
from urbandp.sensing.dp_map import public_windows
from urbandp.sensing.grid import SquareGrid
from urbandp.sensing.interpolate import KM, fit_window, idw_predict
from urbandp.sensing.pm_map import (
    DEFAULT_CLIP,
    cell_aggregates,
    measure_pm_map,
    plan_pm_map,
    pooled_mean,
    smooth_window,
)
from urbandp.sensing.readings import read_readings, window_starts

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
                got["pooled"] += list(pooled_mean(plan, noisy, i) - ys)
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--windows", default="60,1440", help="window lengths in minutes")
    args = ap.parse_args()
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
