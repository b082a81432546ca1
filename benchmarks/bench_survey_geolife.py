"""Benchmark: OD trips of real GeoLife users through ``survey od-randomize`` and ``survey od-estimate``.

Data: ``../shared/data/geolife-sample/geolife_sample.txt.gz`` (2 users, 217,653 GPS points). Trips are cut where
a user's points are more than :data:`GAP_MINUTES` apart; a trip with fewer than :data:`MIN_POINTS` points is
left out. A trip's origin and destination are its first and last point's cell in a 5 x 5 grid over the public box
:data:`BOX` (an endpoint outside the box is put in the nearest edge cell: benchmark preparation, not a release).

For each per-person bound K (none, and :data:`BOUNDS`) the benchmark releases the trips :data:`REPEATS` times with
``ud.survey.od_randomize`` at keep probability 1/2 (eq. 13: 6.44 per trip over 625 pairs) and measures, against
the true OD table of the trips released (after the bound):

* total variation (TV) of the joint OD histogram, as released and de-biased (``ud.survey.od_estimate``, negative
  estimates set to 0 and the table rescaled to the trips released);
* the median relative error of the 10 pairs with the most true trips, released and de-biased;
* the share of the 95 % intervals of ``od_estimate`` that hold the true count;
* the loss per person stated in privacy.json (K x epsilon per trip), and the trips the bound drops.

Run: ``.venv/bin/python benchmarks/bench_survey_geolife.py`` (about a minute). Writes
``benchmarks/results/survey_geolife.json``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl

import urbandp as ud
from urbandp.survey._trips import total_variation

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "geolife-sample" / "geolife_sample.txt.gz"
GAP_MINUTES = 20
MIN_POINTS = 10
BOX = (39.95, 40.03, 116.28, 116.36)  # min_lat, max_lat, min_lon, max_lon (Haidian, Beijing)
SIDE = 5
KEEP = 0.5
BOUNDS = (1, 5, 10, 15)
REPEATS = 20


def geolife_trips(path: Path = DATA) -> pl.DataFrame:
    """One row per trip: ``person`` (GeoLife uid), ``origin`` and ``dest`` (grid cells 1..25)."""
    points = (
        pl.read_csv(path)
        .with_columns(pl.col("datetime").str.to_datetime())
        .sort("uid", "datetime")
        .with_columns(
            (pl.col("datetime").diff().over("uid").dt.total_minutes().fill_null(10**9) > GAP_MINUTES)
            .cum_sum()
            .alias("trip")
        )
    )
    trips = points.group_by("uid", "trip", maintain_order=True).agg(
        pl.len().alias("points"),
        pl.col("lat").first().alias("olat"),
        pl.col("lng").first().alias("olon"),
        pl.col("lat").last().alias("dlat"),
        pl.col("lng").last().alias("dlon"),
    )
    trips = trips.filter(pl.col("points") >= MIN_POINTS)
    return trips.select(
        pl.col("uid").cast(pl.String).alias("person"),
        _cell("olat", "olon").alias("origin"),
        _cell("dlat", "dlon").alias("dest"),
    )


def _cell(lat: str, lon: str) -> pl.Expr:
    """The 1-based cell of the 5 x 5 grid over :data:`BOX` (edge cells for a point outside)."""
    lat0, lat1, lon0, lon1 = BOX
    row = ((pl.col(lat) - lat0) / (lat1 - lat0) * SIDE).floor().clip(0, SIDE - 1).cast(pl.Int64)
    col = ((pl.col(lon) - lon0) / (lon1 - lon0) * SIDE).floor().clip(0, SIDE - 1).cast(pl.Int64)
    return (row * SIDE + col + 1).cast(pl.String)


def _pairs(table: pl.DataFrame) -> np.ndarray:
    """Pair indices (origin - 1) * 25 + (dest - 1) of a trips table."""
    o = table.get_column("origin").cast(pl.Int64).to_numpy() - 1
    d = table.get_column("dest").cast(pl.Int64).to_numpy() - 1
    return o * SIDE * SIDE + d


def _debiased_tv(truth: np.ndarray, est: np.ndarray) -> float:
    """TV between the true pair counts and the de-biased ones, negatives set to 0 and rescaled."""
    e = np.clip(est, 0.0, None)
    e = e / e.sum() if e.sum() > 0 else np.full(e.size, 1.0 / e.size)
    return float(0.5 * np.abs(truth / truth.sum() - e).sum())


def _top_error(truth: np.ndarray, value: np.ndarray) -> float:
    """Median relative error of the (up to) 10 pairs with the most true trips (pairs with none left out)."""
    top = np.argsort(-truth, kind="stable")[: min(10, int((truth > 0).sum()))]
    return float(np.median(np.abs(value[top] - truth[top]) / truth[top]))


def run_bound(trips: pl.DataFrame, bound: int | None) -> dict[str, object]:
    """:data:`REPEATS` releases with the per-person bound ``bound`` (None: no bound)."""
    nb, t = SIDE * SIDE, SIDE**4
    options: dict[str, object] = {"origin": "origin", "dest": "dest", "blocks": nb, "keep_probability": KEEP}
    if bound is not None:
        options |= {"person": "person", "max_trips_per_person": bound}
    tv_rel, tv_deb, top_rel, top_deb, cover = [], [], [], [], []
    privacy: dict[str, object] = {}
    released_trips = 0
    for _ in range(REPEATS):
        rel = ud.survey.od_randomize(trips, **options)  # type: ignore[arg-type]
        privacy = rel.privacy.to_dict()
        kept = trips if bound is None else _kept(trips, rel)
        truth = np.bincount(_pairs(kept), minlength=t).astype(float)
        released = _pairs(rel.table)
        released_trips = int(released.size)
        est = ud.survey.od_estimate(rel.table, origin="origin", dest="dest", blocks=nb, keep_probability=KEEP)
        e = est.get_column("estimate").to_numpy()
        lo, hi = est.get_column("ci_low").to_numpy(), est.get_column("ci_high").to_numpy()
        tv_rel.append(total_variation(_pairs(kept), released, t))
        tv_deb.append(_debiased_tv(truth, e))
        top_rel.append(_top_error(truth, np.bincount(released, minlength=t).astype(float)))
        top_deb.append(_top_error(truth, e))
        cover.append(float(np.mean((lo <= truth) & (truth <= hi))))
    return {
        "max_trips_per_person": bound,
        "trips_released": released_trips,
        "epsilon_per_trip": privacy["epsilon_per_trip"],
        "epsilon_per_person": privacy.get("epsilon_per_person"),
        "epsilon_per_person_reason": privacy.get("epsilon_per_person_reason"),
        "tv_joint_released": float(np.mean(tv_rel)),
        "tv_joint_debiased": float(np.mean(tv_deb)),
        "top10_median_rel_error_released": float(np.mean(top_rel)),
        "top10_median_rel_error_debiased": float(np.mean(top_deb)),
        "ci95_coverage": float(np.mean(cover)),
    }


def _kept(trips: pl.DataFrame, rel: ud.survey.SurveyRelease) -> pl.DataFrame:
    """The trips the bound kept (owner side: every trip not in the release's quarantine)."""
    dropped = rel.owner["quarantine.csv"].get_column("row").to_numpy() - 1
    mask = np.ones(trips.height, dtype=bool)
    mask[dropped] = False
    return trips.filter(pl.Series(mask))


def main() -> None:
    from results_file import write_results

    load = os.getloadavg()
    trips = geolife_trips()
    per_user = dict(trips.group_by("person").len().sort("person").rows())
    print(f"GeoLife: {trips.height} trips ({per_user}), {SIDE}x{SIDE} blocks, keep probability {KEEP}")
    from urbandp.survey._trips import od_epsilon

    unbounded = max(per_user.values()) * od_epsilon(SIDE * SIDE, KEEP)
    print(
        f"without a bound the busiest user loses {unbounded:.1f} (their trips x epsilon per trip; owner-side)"
    )
    rows = [run_bound(trips, b) for b in (None, *BOUNDS)]
    for r in rows:
        print(
            f"K={r['max_trips_per_person']}: {r['trips_released']} trips, eps/trip {r['epsilon_per_trip']:.3f}, "
            f"eps/person {r['epsilon_per_person']}, TV released {r['tv_joint_released']:.3f} de-biased "
            f"{r['tv_joint_debiased']:.3f}, top-10 error released {r['top10_median_rel_error_released']:.2f} "
            f"de-biased {r['top10_median_rel_error_debiased']:.2f}, 95% coverage {r['ci95_coverage']:.3f}"
        )
    results = {
        "data": "geolife_sample.txt.gz",
        "trips": trips.height,
        "trips_per_person": per_user,
        "busiest_person_loss_without_bound": unbounded,
        "gap_minutes": GAP_MINUTES,
        "min_points": MIN_POINTS,
        "box": BOX,
        "blocks": SIDE * SIDE,
        "keep_probability": KEEP,
        "repeats": REPEATS,
        "by_bound": rows,
    }
    write_results("survey_geolife", results, load)


if __name__ == "__main__":
    main()
