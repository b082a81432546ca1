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
  plan`` and the guardrail suggest for one-day windows of 16 hourly slots);
* ``new-default-dp-clip``: the new default with ``--clip-bound dp-quantile`` (5% of the budget on OpenDP's
  private 0.9-quantile of the vehicle-days' largest HAT mean speed; that U' <= U is Query 1's sensitivity);
* ``new-default-coarsen-*``: the new default with ``--coarsen parent1``, ``auto`` (parent1 then parent2) and
  ``slot2`` (rule ``fill``: a coarser HAT stands for the part no finer level released, scored against that
  remainder's true mean), and ``parent1`` with the ``exclusive`` rule; 30% of the budget for the coarser level(s).

Epsilon per day: 1, 5, 15. Figures: HATs released, released HATs that are truly empty, median and 90th-percentile
absolute error of the released mean speed against the true HAT mean (mean of vehicle-day means, all vehicle-days,
before truncation; for a coarser HAT the true mean at its own level) computed in the same run; coverage: finest
HATs holding data whose place and time get a value at some level, the share of vehicle-HAT-days they hold, and
the H3 cells (resolution 7) with a value in some slot. Noise is OpenDP's (unseeded): each figure is the mean over 3 draws.

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
import polars_h3 as plh3

from urbandp._contributions import ContributionSpec, get_backend
from urbandp._grid.h3cells import cell_to_string
from urbandp._grid.slots import SlotSpec
from urbandp._privacy.noise import OpenDPNoise
from urbandp._records.validation import ValidationOptions
from urbandp._synth.fleet import FleetSpec, write_fleet_days
from urbandp.fleet._hat_release import _release_hats
from urbandp.fleet._levels import coarse_contributions, released_units
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._pipeline import load_records

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
        "new-default-dp-clip": {"epsilon_per_day": eps, "domain_bbox": bbox, "clip_bound": "dp-quantile"},
        "new-default-coarsen-parent1": {"epsilon_per_day": eps, "domain_bbox": bbox, "coarsen": "parent1"},
        "new-default-coarsen-auto": {"epsilon_per_day": eps, "domain_bbox": bbox, "coarsen": "auto"},
        "new-default-coarsen-slot2": {"epsilon_per_day": eps, "domain_bbox": bbox, "coarsen": "slot2"},
        "new-default-coarsen-parent1-exclusive": {
            "epsilon_per_day": eps,
            "domain_bbox": bbox,
            "coarsen": "parent1",
            "coarsen_rule": "exclusive",
        },
    }


def truth(contributions: pl.DataFrame, slots: SlotSpec) -> tuple[pl.DataFrame, pl.DataFrame]:
    """True HAT means at every level a release may publish (finest, H3 parents 1 and 2 up, merged slot pairs),
    keyed by (h3_cell, slot label); and the finest non-empty HATs with the keys of the levels above them (to count
    which of them get a value at some level), with their vehicle-days."""
    levels = [
        (0, slots),
        (1, slots),
        (2, slots),
        (0, SlotSpec(60, slots.start_hour, slots.end_hour, 2)),
    ]
    tables = []
    for up, spec in levels:
        c = coarse_contributions(contributions, 7 - up, up, spec)
        tables.append(
            c.group_by("cell", "slot")
            .agg(pl.len().alias("true_n"), pl.col("mean_speed").mean().alias("true_mean"))
            .select(
                cell_to_string(pl.col("cell")).alias("h3_cell"),
                spec.label_expr(pl.col("slot")).alias("slot"),
                "true_n",
                "true_mean",
            )
        )
    merged = levels[3][1]
    fine = (
        contributions.group_by("cell", "slot")
        .agg(pl.len().alias("n"))
        .select(
            cell_to_string(pl.col("cell")).alias("h3_cell"),
            slots.label_expr(pl.col("slot")).alias("slot"),
            cell_to_string(plh3.cell_to_parent("cell", 6)).alias("p1"),
            cell_to_string(plh3.cell_to_parent("cell", 5)).alias("p2"),
            merged.label_expr(merged.group(pl.col("slot"))).alias("slot2"),  # type: ignore[attr-defined]
            "n",
        )
    )
    return pl.concat(tables).unique(["h3_cell", "slot"]), fine


LEVEL_SHAPE = {"parent1": (1, 1), "parent2": (2, 1), "slot2": (0, 2)}


def remainder_truth(contributions: pl.DataFrame, speed: pl.DataFrame, slots: SlotSpec) -> pl.DataFrame:
    """Under ``--coarsen-rule fill`` a coarser HAT stands for the part of it no finer level released: its true
    mean is over the vehicle-days there only. Rebuilt from the release's own keys, level by level."""
    published: list[tuple[pl.DataFrame, int]] = []
    tables = []
    start = pl.col("slot").str.slice(0, 2).cast(pl.Int16) * 60 + pl.col("slot").str.slice(3, 2).cast(pl.Int16)
    for level in ["finest", *[lv for lv in LEVEL_SHAPE if lv in set(speed["level"].to_list())]]:
        rows = speed.filter(pl.col("level") == level)
        up, merge = LEVEL_SHAPE.get(level, (0, 1))
        spec = slots if merge == 1 else SlotSpec(60, slots.start_hour, slots.end_hour, merge)
        if level != "finest":
            done = released_units(published, 7, slots.slots) if published else None
            rest = (
                contributions.join(done, on=["cell", "slot"], how="anti")
                if done is not None
                else contributions
            )
            c = coarse_contributions(rest, 7 - up, up, spec)
            tables.append(
                c.group_by("cell", "slot")
                .agg(pl.len().alias("true_n"), pl.col("mean_speed").mean().alias("true_mean"))
                .select(
                    cell_to_string(pl.col("cell")).alias("h3_cell"),
                    spec.label_expr(pl.col("slot")).alias("slot"),
                    "true_n",
                    "true_mean",
                )
            )
        keys = rows.select(
            plh3.str_to_int("h3_cell").alias("cell"),
            (start // slots.slot_minutes).cast(pl.Int16).alias("slot"),
        )
        published.append((keys, merge))
    if not tables:
        return pl.DataFrame(
            schema={"h3_cell": pl.String, "slot": pl.String, "true_n": pl.UInt32, "true_mean": pl.Float64}
        )
    return pl.concat(tables)


def score(
    release_speed: pl.DataFrame,
    truth_tables: tuple[pl.DataFrame, pl.DataFrame],
    remainder: pl.DataFrame | None = None,
) -> dict[str, object]:
    true, fine = truth_tables
    if remainder is not None and remainder.height:
        # coarser HATs of the fill rule are scored against their remainder's truth
        true = pl.concat(
            [remainder, true.join(remainder, on=["h3_cell", "slot"], how="anti")], how="vertical_relaxed"
        )
    valued = release_speed.filter(pl.col("mean_speed").is_not_null())
    joined = release_speed.select("h3_cell", "slot", "mean_speed").join(
        true, on=["h3_cell", "slot"], how="left"
    )
    empty = int(joined["true_n"].is_null().sum())
    err = (joined["mean_speed"] - joined["true_mean"]).abs().drop_nulls().to_numpy()
    keys = valued.select("h3_cell", "slot").with_columns(pl.lit(True).alias("v"))
    hit = pl.lit(False)
    cover = fine
    for i, (cell, slot) in enumerate(
        (("h3_cell", "slot"), ("p1", "slot"), ("p2", "slot"), ("h3_cell", "slot2"))
    ):
        cover = cover.join(
            keys.rename({"h3_cell": cell, "slot": slot, "v": f"v{i}"}), on=[cell, slot], how="left"
        )
        hit = hit | pl.col(f"v{i}").fill_null(False)
    covered = cover.filter(hit)
    coarse = (
        joined.join(release_speed.select("h3_cell", "slot", "level"), on=["h3_cell", "slot"]).filter(
            pl.col("level") != "finest"
        )
        if "level" in release_speed.columns
        else joined.clear()
    )
    coarse_err = (coarse["mean_speed"] - coarse["true_mean"]).abs().drop_nulls().to_numpy()
    return {
        "hats_released": joined.height,
        "truly_empty_released": empty,
        "means_released": valued.height,
        "coarse_means_released": int(coarse["mean_speed"].is_not_null().sum()),
        "median_abs_error": float(np.median(err)) if err.size else None,
        "p90_abs_error": float(np.quantile(err, 0.9)) if err.size else None,
        "coarse_median_abs_error": float(np.median(coarse_err)) if coarse_err.size else None,
        # finest HATs holding data whose place and time get a value (at their own or a coarser level)
        "fine_hats_with_value": covered.height,
        "fine_hats_with_data": fine.height,
        "vehicle_hat_days_with_value_share": float(covered["n"].sum() / max(1, fine["n"].sum())),
        "cells_with_value": covered["h3_cell"].n_unique(),
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
                r = _release_hats(contributions, cfg, days, OpenDPNoise(), slots=slots)
                rest = None
                if cfg.coarsen != "none" and cfg.coarsen_rule == "fill" and "level" in r.speed.columns:
                    rest = remainder_truth(contributions, r.speed, slots)
                draws.append(score(r.speed, true, rest))
            row = {
                "data": name,
                "method": method,
                "epsilon_per_day": eps,
                **mean_of(draws),
                "cumulative_epsilon_per_day": r.privacy["cumulative_epsilon_per_day"],
                "delta_per_day": r.privacy["delta_per_day"],
                "dp_label": r.privacy["dp_label"],
                "clip_bound": (r.privacy.get("clip_bound") or {}).get("bound"),  # type: ignore[attr-defined]
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
    print(
        f"\n{'data':<17} {'eps':>4} {'method':<28} {'HATs':>6} {'empty':>6} {'median':>7} {'p90':>7} "
        f"{'fineHATs+':>9} {'veh-HAT share':>13}"
    )
    for r in rows:
        med = "-" if r["median_abs_error"] is None else f"{r['median_abs_error']:.2f}"
        p90 = "-" if r["p90_abs_error"] is None else f"{r['p90_abs_error']:.2f}"
        print(
            f"{str(r['data'])[:17]:<17} {r['epsilon_per_day']:>4g} {r['method']:<28} {r['hats_released']:>6.1f} "
            f"{r['truly_empty_released']:>6.1f} {med:>7} {p90:>7} {r['fine_hats_with_value']:>9.1f} "
            f"{r['vehicle_hat_days_with_value_share']:>13.3f}"
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
