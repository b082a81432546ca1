"""Utility benchmark (issue 8): HATs released and error of the released mean speeds, side by side.

Data, each run once per invocation:
* the synthetic month: ``urbandp synth fleet --vehicles 120 --days 31`` (seed 1), window = its 31 calendar days;
* the real Austin AVL days in ../shared/data/austin-avl/ (2015 mph, 2016 m/s), each day its own 1-day window.

Methods (same contributions, same public window, same U = 65 km/h, K = 96):
* ``report``: the ITMS report's method: presence-public (replace-one), public threshold (10 vehicles/day x D),
  one Laplace B for both queries (III E-F). DP for speeds only; presence public;
* ``laplace-add-remove``: the previous default mechanism: Laplace noise, add/remove a vehicle-day, pure-DP
  selection over the public extent (``--domain-bbox``) with this version's truncation and post-processing;
* ``new-default``: Gaussian noise under zCDP (delta 1e-6), add/remove a vehicle-day, DP selection over the public
  extent: fully DP (presence protected too);
* ``new-default-no-bbox``: the same without a public extent (OpenDP's Gaussian threshold, unknown domain);
* ``new-default-k32``: the new default with a public K = 32 HATs per vehicle-day instead of 96 (what ``urbandp
  plan`` and the guardrail suggest for one-day windows of 16 hourly slots).

Epsilon per day: 1, 5, 15. Figures: HATs released, released HATs that are truly empty, median and 90th-percentile
absolute error of the released mean speed against the true HAT mean (mean of vehicle-day means, all vehicle-days,
before truncation) computed in the same run. Noise is OpenDP's (unseeded): each figure is the mean over 3 draws.

    .venv/bin/python benchmarks/bench_utility.py            # about 2-3 minutes on 2 cores
Results: benchmarks/results/utility.json.
"""

from __future__ import annotations

import datetime as dt
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

from urbandp.contributions import ContributionSpec, get_backend
from urbandp.fleet.config import HatReleaseConfig
from urbandp.fleet.pipeline import load_records
from urbandp.fleet.release import release_hats
from urbandp.grid.h3cells import cell_to_string
from urbandp.grid.slots import SlotSpec
from urbandp.privacy.noise import OpenDPNoise
from urbandp.records.validation import ValidationOptions
from urbandp.synth.fleet import FleetSpec, write_fleet_days

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
AUSTIN = HERE.parent.parent / "shared" / "data" / "austin-avl"
SURAT_BBOX = (21.09, 72.75, 21.25, 72.91)
AUSTIN_BBOX = (30.15, -97.95, 30.55, -97.6)
EPSILONS = (1.0, 5.0, 15.0)
AUSTIN_DAYS = ("2016-03-22", "2016-11-25", "2016-12-16")  # ~30k records each (others hold a few hundred)
REPEATS = (
    3  # independent noise draws per figure; the figures are their means (and min/max of the median error)
)


def methods(eps: float, bbox: tuple[float, float, float, float]) -> dict[str, dict[str, object]]:
    return {
        "report": {
            "epsilon_per_day": eps,
            "neighbouring": "presence-public",
            "selection": "public-threshold",
            "mechanism": "laplace",
        },
        "laplace-add-remove": {"epsilon_per_day": eps, "mechanism": "laplace", "domain_bbox": bbox},
        "new-default": {"epsilon_per_day": eps, "domain_bbox": bbox},
        "new-default-no-bbox": {"epsilon_per_day": eps},
        "new-default-k32": {"epsilon_per_day": eps, "domain_bbox": bbox, "max_hats_per_vehicle_day": 32},
    }


def truth(contributions: pl.DataFrame, slots: SlotSpec) -> pl.DataFrame:
    return (
        contributions.group_by("cell", "slot")
        .agg(pl.len().alias("true_n"), pl.col("mean_speed").mean().alias("true_mean"))
        .select(
            cell_to_string(pl.col("cell")).alias("h3_cell"),
            slots.label_expr(pl.col("slot")).alias("slot"),
            "true_n",
            "true_mean",
        )
    )


def score(release_speed: pl.DataFrame, true: pl.DataFrame) -> dict[str, object]:
    joined = release_speed.select("h3_cell", "slot", "mean_speed").join(
        true, on=["h3_cell", "slot"], how="left"
    )
    empty = int(joined["true_n"].is_null().sum())
    err = (joined["mean_speed"] - joined["true_mean"]).abs().drop_nulls().to_numpy()
    return {
        "hats_released": joined.height,
        "truly_empty_released": empty,
        "means_released": int(joined["mean_speed"].is_not_null().sum()),
        "median_abs_error": float(np.median(err)) if err.size else None,
        "p90_abs_error": float(np.quantile(err, 0.9)) if err.size else None,
    }


def mean_of(draws: list[dict[str, object]]) -> dict[str, object]:
    """Figures averaged over the noise draws (None where no draw released a mean)."""
    out: dict[str, object] = {"draws": len(draws)}
    for key in draws[0]:
        values = [float(d[key]) for d in draws if d[key] is not None]  # type: ignore[arg-type]
        out[key] = float(np.mean(values)) if values else None
    medians = [float(d["median_abs_error"]) for d in draws if d["median_abs_error"] is not None]  # type: ignore[arg-type]
    out["median_abs_error_range"] = [min(medians), max(medians)] if medians else None
    return out


def run_dataset(
    name: str,
    contributions: pl.DataFrame,
    days: int,
    slots: SlotSpec,
    bbox: tuple[float, float, float, float],
    base: dict[str, object],
) -> list[dict[str, object]]:
    true = truth(contributions, slots)
    rows = []
    for eps in EPSILONS:
        for method, params in methods(eps, bbox).items():
            cfg = HatReleaseConfig(**{**base, **params})  # type: ignore[arg-type]
            t = time.perf_counter()
            draws = []
            for _ in range(REPEATS):
                r = release_hats(contributions, cfg, days, OpenDPNoise(), slots=slots)
                draws.append(score(r.speed, true))
            row = {
                "data": name,
                "method": method,
                "epsilon_per_day": eps,
                **mean_of(draws),
                "cumulative_epsilon_per_day": r.privacy["cumulative_epsilon_per_day"],
                "delta_per_day": r.privacy["delta_per_day"],
                "dp_label": r.privacy["dp_label"],
                "seconds": round(time.perf_counter() - t, 2),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def synthetic_month() -> list[dict[str, object]]:
    DATA.mkdir(exist_ok=True)
    spec = FleetSpec(vehicles=120, days=31, seed=1)
    path = DATA / "utility_month.parquet"
    if not path.exists():
        write_fleet_days(spec, path)
    slots = SlotSpec(60, 9, 21)
    start, end = spec.start, spec.start + dt.timedelta(days=spec.days - 1)
    window = ContributionSpec(7, slots, start, end, 65.0)
    loaded = load_records([path], window=window)
    contributions = get_backend("polars").contributions(loaded.clean_lazy, window)
    base = {"start": start, "end": end, "hours": (9, 21)}
    return run_dataset(
        "synthetic month (120 vehicles x 31 days)", contributions, spec.days, slots, SURAT_BBOX, base
    )


def austin_days() -> list[dict[str, object]]:
    if not AUSTIN.is_dir():
        print(f"skipping Austin: {AUSTIN} not found", file=sys.stderr)
        return []
    options = ValidationOptions(speed_unit="mph", speed_unit_since=((dt.date(2016, 1, 1), "m/s"),))
    slots = SlotSpec(60, 6, 22)
    rows: list[dict[str, object]] = []
    for path in (AUSTIN / f"{d}.csv" for d in AUSTIN_DAYS):
        day = dt.date.fromisoformat(path.stem)
        window = ContributionSpec(7, slots, day, day, 65.0)
        loaded = load_records([path], options=options, window=window)
        contributions = get_backend("polars").contributions(loaded.clean_lazy, window)
        base = {"start": day, "end": day, "hours": (6, 22)}
        rows += run_dataset(f"Austin {day}", contributions, 1, slots, AUSTIN_BBOX, base)
    return rows


def main() -> None:
    t = time.perf_counter()
    rows = synthetic_month() + austin_days()
    out = {
        "machine": platform.platform(),
        "python": sys.version.split()[0],
        "seconds": round(time.perf_counter() - t, 1),
        "note": f"mean over {REPEATS} noise draws per figure (OpenDP, unseeded); errors in km/h vs true HAT means",
        "rows": rows,
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "utility.json").write_text(json.dumps(out, indent=2) + "\n")
    synth = [r for r in rows if str(r["data"]).startswith("synthetic")]
    print(f"\n{'data':<17} {'eps':>4} {'method':<22} {'HATs':>6} {'empty':>6} {'median':>7} {'p90':>7}")
    for r in rows:
        med = "-" if r["median_abs_error"] is None else f"{r['median_abs_error']:.2f}"
        p90 = "-" if r["p90_abs_error"] is None else f"{r['p90_abs_error']:.2f}"
        print(
            f"{str(r['data'])[:17]:<17} {r['epsilon_per_day']:>4g} {r['method']:<22} {r['hats_released']:>6.1f} "
            f"{r['truly_empty_released']:>6.1f} {med:>7} {p90:>7}"
        )
    by = {(r["method"], r["epsilon_per_day"]): r for r in synth}
    rep, new = by.get(("report", 15.0)), by.get(("new-default", 15.0))
    if rep and new and rep["hats_released"]:
        print(
            f"\neps 15: new default releases {new['hats_released'] / rep['hats_released']:.2f}x the report's HATs "
            f"(target >= 0.9), median error {new['median_abs_error']:.2f} vs {rep['median_abs_error']:.2f} km/h"
        )
    five = by.get(("new-default", 5.0))
    if five:
        print(
            f"eps 5: new default {five['hats_released']:.0f} HATs at median error {five['median_abs_error']:.2f} km/h "
            "(target >= 300 HATs at <= 3 km/h)"
        )
    print(f"total {out['seconds']} s -> benchmarks/results/utility.json")


if __name__ == "__main__":
    main()
