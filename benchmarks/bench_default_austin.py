"""The default fleet release, as a new user runs it, on four public Austin weekdays with a public extent.

No bounding or pooling option is given: the release chooses them (``contribution_bounding`` and ``borrow_strength``
default to ``auto``, which resolves to L2-normalised contributions and pooling with the H3 parent for a public
extent and Gaussian noise). Four weekdays of Capital Metro's public AVL feed in ``shared/data/austin-avl``
(2015-03-18 Wed, 2015-03-19 Thu, 2016-03-22 Tue, 2016-12-16 Fri: the four with a full day of records; the others
are weekends, holidays or a few hundred rows), hours 6-22, and a public extent fixed from public knowledge, not from
the data: the City of Austin's limits (about 30.10-30.52 N, 97.94-97.56 W) rounded outward to
``30.10,-97.95,30.55,-97.55``. Speeds: mph before 2016, m/s after (the feed's documented switch).

Each epsilon per vehicle-day is released ``--runs`` times with OpenDP noise (unseeded) and scored against the
**non-private estimand on the same data**, computed here from the records: the mean of vehicle-day mean speeds of
each HAT, each vehicle-day weighted ``1/sqrt(m)`` (m its HATs in the extent and window), what ``mean_speed``
estimates under ``l2`` (privacy.json ``estimand``). The unweighted mean over vehicle-days is scored too, for
reference. Scores (means over runs; coverage pooled over runs):

* ``shown``: HATs whose value the map draws; ``useful``: those it colours (the pooled interval at most 10 km/h wide,
  ``pooled_useful``; ``useful_per_hat`` is the per-HAT label of the same release);
* ``coverage_shown`` / ``coverage_useful``: share of the values drawn / coloured whose interval (the pooled one
  where the map draws it, else the per-HAT one) holds the truth;
* ``empty_shown``: values drawn where no bus was (no vehicle-day in the HAT; must be 0).

``--configs before`` also runs the defaults as they were (truncation to K = 96, no pooling), scored the same way
(its estimand is the mean over the vehicle-days truncation keeps; the truth here is the L2-weighted one and the
plain one, so its coverage is read against ``coverage_*_unweighted_truth``).

The issue's acceptance: epsilon 4 per day >= 25 useful HATs, epsilon 10 >= 120; coverage of shown >= 0.93 and of
the useful subset >= 0.92; no value drawn where no bus was.

    .venv/bin/python benchmarks/bench_default_austin.py [--runs 10] [--epsilons 4,10]
Results: benchmarks/results/default_austin.json (``--results NAME``: results/NAME.json) and a table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from results_file import write_results  # noqa: E402
from urbandp._contributions import ContributionSpec, get_backend  # noqa: E402
from urbandp._grid.h3cells import cell_to_string  # noqa: E402
from urbandp._grid.slots import SlotSpec  # noqa: E402
from urbandp._privacy.noise import OpenDPNoise  # noqa: E402
from urbandp._records.validation import ValidationOptions  # noqa: E402
from urbandp.fleet._measure import l2_normalised  # noqa: E402
from urbandp.fleet._measure_selection import domain_cells  # noqa: E402
from urbandp.fleet._options import HatReleaseConfig  # noqa: E402
from urbandp.fleet._pipeline import load_records, release_fleet  # noqa: E402

AUSTIN = ROOT.parent / "shared" / "data" / "austin-avl"
DAYS = tuple(dt.date.fromisoformat(d) for d in ("2015-03-18", "2015-03-19", "2016-03-22", "2016-12-16"))
CITY_EXTENT = (30.10, -97.95, 30.55, -97.55)
HOURS = (6, 22)
OPTIONS = ValidationOptions(speed_unit="mph", speed_unit_since=((dt.date(2016, 1, 1), "m/s"),))
PATHS = [AUSTIN / f"{d.isoformat()}.csv" for d in DAYS]
TARGETS = {4.0: 25, 10.0: 120}


def spec(**extra: Any) -> HatReleaseConfig:
    """The release as a new user writes it: epsilon, the public days, hours and extent; nothing else."""
    return HatReleaseConfig(hours=HOURS, dates=DAYS, domain_bbox=CITY_EXTENT, **extra)


def truth() -> pl.DataFrame:
    """Per HAT of the extent: the L2-weighted and the plain mean of vehicle-day mean speeds, and the vehicle-days."""
    slots = SlotSpec(60, *HOURS)
    window = ContributionSpec(7, slots, DAYS[0], DAYS[-1], 65.0, days=DAYS)
    loaded = load_records(PATHS, None, OPTIONS, window=window)
    c = get_backend("polars").contributions(loaded.clean_lazy, window)
    cells = domain_cells(CITY_EXTENT, 7).cast(pl.UInt64)
    c = c.filter(pl.col("cell").is_in(cells.implode()))
    weighted = l2_normalised(c)
    per_hat = weighted.group_by("cell", "slot").agg(
        ((pl.col("weight") * pl.col("mean_speed")).sum() / pl.col("weight").sum()).alias("truth"),
        pl.col("mean_speed").mean().alias("truth_unweighted"),
        pl.len().alias("vehicle_days"),
    )
    return per_hat.select(
        cell_to_string(pl.col("cell")).alias("h3_cell"),
        slots.label_expr(pl.col("slot")).alias("slot"),
        "truth",
        "truth_unweighted",
        "vehicle_days",
    )


def _held(t: pl.DataFrame, truth_col: str) -> int:
    return int(((t["low"] <= t[truth_col]) & (t[truth_col] <= t["high"])).fill_null(False).sum())


def score(speed: pl.DataFrame, true: pl.DataFrame) -> dict[str, float]:
    """What the map draws (the pooled value where there is one, else the per-HAT one) against the truth."""
    if "pooled_mean_speed" not in speed.columns:  # no pooling: the map draws the per-HAT values
        speed = speed.with_columns(
            pl.lit(None, pl.Float64).alias(c)
            for c in ("pooled_mean_speed", "pooled_ci95_low", "pooled_ci95_high")
        ).with_columns(pl.col("useful").alias("pooled_useful"))
    pooled = pl.col("pooled_mean_speed").is_not_null()
    drawn = (
        speed.join(true, on=["h3_cell", "slot"], how="left")
        .filter(pl.col("mean_speed").is_not_null())
        .with_columns(
            pl.when(pooled).then(pl.col("pooled_ci95_low")).otherwise(pl.col("ci95_low")).alias("low"),
            pl.when(pooled).then(pl.col("pooled_ci95_high")).otherwise(pl.col("ci95_high")).alias("high"),
            pl.when(pooled).then(pl.col("pooled_mean_speed")).otherwise(pl.col("mean_speed")).alias("value"),
        )
    )
    useful = drawn.filter(pl.col("pooled_useful"))
    per_hat = drawn.filter(pl.col("useful")).with_columns(
        pl.col("ci95_low").alias("low"), pl.col("ci95_high").alias("high")
    )
    errors = (drawn["value"] - drawn["truth"]).abs().drop_nulls()
    return {
        "released": float(speed.height),
        "shown": float(drawn.height),
        "useful": float(useful.height),
        "useful_per_hat": float(per_hat.height),
        "held_shown": float(_held(drawn, "truth")),
        "held_useful": float(_held(useful, "truth")),
        "held_useful_per_hat": float(_held(per_hat, "truth")),
        "held_shown_unweighted": float(_held(drawn, "truth_unweighted")),
        "held_useful_unweighted": float(_held(useful, "truth_unweighted")),
        "empty_shown": float(drawn["vehicle_days"].fill_null(0).eq(0).sum()),
        "median_abs_error": float(errors.median()) if errors.len() else float("nan"),  # type: ignore[arg-type]
    }


BEFORE = {"contribution_bounding": "truncate", "borrow_strength": "none"}
"""The defaults before they became ``auto`` (``--configs before``), for comparison."""


def run(epsilon: float, runs: int, true: pl.DataFrame, config: str = "default") -> dict[str, Any]:
    cfg = spec(epsilon_per_day=epsilon, **(BEFORE if config == "before" else {}))
    scores, privacy = [], {}
    t0 = time.perf_counter()
    for _ in range(runs):
        rel, _ = release_fleet(PATHS, cfg, options=OPTIONS, noise=OpenDPNoise())
        scores.append(score(rel.speed, true))
        privacy = rel.privacy

    def total(key: str) -> float:
        return sum(s[key] for s in scores)

    def share(num: str, den: str) -> float | None:
        return total(num) / total(den) if total(den) else None

    useful_runs = [s["useful"] for s in scores]
    return {
        "config": config,
        "epsilon_per_day": epsilon,
        "runs": runs,
        "contribution_bounding": privacy.get("contribution_bounding"),
        "contribution_bounding_chosen": privacy.get("contribution_bounding_chosen"),
        "borrow_strength_chosen": privacy.get("borrow_strength_chosen"),
        "estimand": (privacy.get("estimand") or {}).get("name"),
        "released": statistics.fmean(s["released"] for s in scores),
        "shown": statistics.fmean(s["shown"] for s in scores),
        "useful": statistics.fmean(useful_runs),
        "useful_min": min(useful_runs),
        "useful_per_run": useful_runs,
        "useful_per_hat": statistics.fmean(s["useful_per_hat"] for s in scores),
        "coverage_shown": share("held_shown", "shown"),
        "coverage_useful": share("held_useful", "useful"),
        "coverage_useful_per_hat": share("held_useful_per_hat", "useful_per_hat"),
        "coverage_shown_unweighted_truth": share("held_shown_unweighted", "shown"),
        "coverage_useful_unweighted_truth": share("held_useful_unweighted", "useful"),
        "empty_shown": total("empty_shown"),
        "median_abs_error": statistics.fmean(s["median_abs_error"] for s in scores),
        "epsilon_per_window": privacy.get("epsilon_per_window"),
        "target_useful": TARGETS.get(epsilon),
        "seconds_per_release": (time.perf_counter() - t0) / runs,
    }


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| configuration | epsilon/day | bounding | released | shown | useful (map, pooled) | useful per HAT | coverage "
        "of shown | coverage of useful | coverage of useful per HAT | empty HATs drawn | median abs error |",
        "|" + "---|" * 12,
    ]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['epsilon_per_day']:g} | {r['contribution_bounding']} | {r['released']:.1f} | {r['shown']:.1f} | "
            f"{r['useful']:.1f} (min {r['useful_min']:.0f}; target {r['target_useful']}) | "
            f"{r['useful_per_hat']:.1f} | {_pct(r['coverage_shown'])} | {_pct(r['coverage_useful'])} | "
            f"{_pct(r['coverage_useful_per_hat'])} | {r['empty_shown']:.0f} | {r['median_abs_error']:.2f} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--epsilons", default="4,10")
    ap.add_argument("--results", default="default_austin", help="results/NAME.json")
    ap.add_argument(
        "--configs", default="default,before", help="default (no flag), before (truncate, no pooling)"
    )
    args = ap.parse_args()
    load = os.getloadavg()
    true = truth()
    rows = []
    for config in args.configs.split(","):
        for eps in (float(e) for e in args.epsilons.split(",")):
            row = run(eps, args.runs, true, config)
            print(json.dumps(row), flush=True)
            rows.append(row)
    meta = {
        "days": [d.isoformat() for d in DAYS],
        "extent": CITY_EXTENT,
        "hours": HOURS,
        "truth_hats_with_a_bus": true.height,
    }
    write_results(args.results, {"rows": rows, **meta, "markdown": table(rows)}, load)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
