"""Which HATs are released (ITMS report section III C and IV B, and its DP replacement).

``public-threshold`` is the report's rule: keep a cell when, in every slot, the number of unique vehicles summed
over the D days reaches ``min_vehicles_per_day x D``. It reads true counts. Under the report's replace-one relation
those counts are public by assumption, so it costs nothing there; under add/remove it is NOT differentially private
and is labelled so.

``dp`` (default) releases the HATs whose noisy vehicle-day count passes a threshold with OpenDP's
``make_laplace_threshold`` (Rogers 2023: unknown-domain release, (epsilon, delta)-DP). A vehicle-day touches at most
K HATs, each count by at most 1, so the input distance is (l0, l1, linf) = (K, K, 1); the threshold is raised until
OpenDP's privacy map gives at most the target delta. The noisy counts are kept: under add/remove they are the
denominator of Query 1 at no further cost (post-processing).

``dp`` with a public domain (``domain_bbox``: the city's extent, chosen without looking at the data) perturbs the
count of every HAT in the domain, zeros included, and needs no delta (:func:`dp_public_domain`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import opendp.prelude as dp
import polars as pl
import polars_h3 as plh3

from urbandp.privacy.noise import NoiseSource

dp.enable_features("contrib")


@dataclass(frozen=True)
class SelectionResult:
    hats: pl.DataFrame  # cell, slot (+ noisy_n for dp)
    method: str
    differentially_private: bool
    scale: float | None = None
    threshold: float | None = None
    epsilon_per_hat_per_day: float = 0.0
    epsilon_per_day: float = 0.0
    delta_per_day: float = 0.0


def public_threshold(
    per_hat: pl.DataFrame, slots: list[int], min_per_day: float, days: int
) -> SelectionResult:
    """The report's rule: cells with ``sum_days unique vehicles >= min_per_day * days`` in every slot (IV B)."""
    need = min_per_day * days
    passing = per_hat.filter(pl.col("n") >= need).group_by("cell").agg(pl.col("slot").n_unique().alias("k"))
    cells = passing.filter(pl.col("k") == len(slots)).select("cell")
    hats = cells.join(pl.DataFrame({"slot": pl.Series(slots, dtype=pl.Int16)}), how="cross")
    return SelectionResult(
        hats=hats.sort("cell", "slot"),
        method="public-threshold",
        differentially_private=False,
        threshold=need,
    )


def _threshold_measurement(scale: float, threshold: int) -> dp.Measurement:
    domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int))
    metric = dp.l01inf_distance(dp.absolute_distance(T=int))
    return dp.m.make_laplace_threshold(domain, metric, scale=scale, threshold=threshold)


def smallest_threshold(scale: float, k: int, delta: float, at_least: float) -> int:
    """Smallest integer threshold >= ``at_least`` whose privacy map gives delta <= target at (K, K, 1)."""
    lo = max(1, math.ceil(at_least))
    if _threshold_measurement(scale, lo).map((k, k, 1))[1] <= delta:
        return lo
    hi = lo * 2
    while _threshold_measurement(scale, hi).map((k, k, 1))[1] > delta:
        hi *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _threshold_measurement(scale, mid).map((k, k, 1))[1] <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def dp_threshold(
    per_hat: pl.DataFrame,
    k: int,
    epsilon_per_day: float,
    delta: float,
    min_per_day: float,
    days: int,
    noise: NoiseSource,
) -> SelectionResult:
    """DP selection by noisy counts over a threshold (OpenDP ``make_laplace_threshold``)."""
    scale = k / epsilon_per_day
    threshold = smallest_threshold(scale, k, delta, min_per_day * days)
    meas = _threshold_measurement(scale, threshold)
    while meas.map((k, k, 1))[0] > epsilon_per_day:  # OpenDP rounds its map outward: stay within budget
        scale = float(np.nextafter(scale, np.inf))
        meas = _threshold_measurement(scale, threshold)
    eps_day, delta_day = meas.map((k, k, 1))
    eps_hat = meas.map((1, 1, 1))[0]
    keys = [f"{c}|{s}" for c, s in zip(per_hat["cell"].to_list(), per_hat["slot"].to_list(), strict=True)]
    counts = dict(zip(keys, (int(n) for n in per_hat["n"].to_list()), strict=True))
    if noise.is_private:
        released = meas(counts)
    else:  # exact test mode: the same rule on true counts
        released = {key: n for key, n in counts.items() if n >= threshold}
    rows = [(int(key.split("|")[0]), int(key.split("|")[1]), int(v)) for key, v in released.items()]
    hats = pl.DataFrame(rows, schema={"cell": pl.UInt64, "slot": pl.Int16, "noisy_n": pl.Int64}, orient="row")
    return SelectionResult(
        hats=hats.sort("cell", "slot"),
        method="dp",
        differentially_private=True,
        scale=scale,
        threshold=float(threshold),
        epsilon_per_hat_per_day=float(eps_hat),
        epsilon_per_day=float(eps_day),
        delta_per_day=float(delta_day),
    )


def domain_cells(bbox: tuple[float, float, float, float], resolution: int) -> pl.Series:
    """H3 cells whose centroid lies in the public bounding box (min_lat, min_lon, max_lat, max_lon)."""
    a, b, c, d = bbox
    wkt = f"POLYGON(({b} {a}, {d} {a}, {d} {c}, {b} {c}, {b} {a}))"
    cells = (
        pl.DataFrame({"g": [wkt]})
        .select(plh3.polygon_to_cells("g", resolution).alias("cell"))
        .explode("cell")
    )
    return cells["cell"].drop_nulls().unique().sort()


def discrete_laplace_epsilon(sensitivity: int, scale: float) -> float:
    """Epsilon of OpenDP's integer Laplace (discrete Laplace) at an L1 sensitivity, from its privacy map."""
    m = dp.m.make_laplace(dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), float(scale))
    return float(m.map(int(sensitivity)))


def false_positive_threshold(scale: float, domain_size: int, at_least: float) -> float:
    """Threshold keeping the expected number of released EMPTY HATs at or below one.

    An empty HAT's noisy count passes ``t`` with probability about ``exp(-t / scale) / 2`` (Laplace tail), so over a
    domain of ``m`` HATs ``t = scale * ln(m / 2)`` lets through at most one in expectation. The threshold depends
    only on public quantities (scale, domain size), so it costs nothing.
    """
    return float(max(at_least, math.ceil(scale * math.log(max(domain_size, 2) / 2.0))))


def dp_public_domain(
    per_hat: pl.DataFrame,
    cells: pl.Series,
    slots: list[int],
    k: int,
    epsilon_per_day: float,
    min_per_day: float,
    days: int,
    noise: NoiseSource,
) -> SelectionResult:
    """Pure-DP selection over a public HAT domain: a noisy count for EVERY HAT (zeros included), then a threshold.

    The domain (cells of a public bounding box x slots) does not depend on the data, so no delta is needed. A
    vehicle-day changes at most K counts by 1 each: L1 sensitivity K, discrete Laplace of scale K / epsilon.
    Thresholding the noisy counts is post-processing (DESIGN.md rule 4: zeros perturbed, suppression after noise);
    the threshold is at least :func:`false_positive_threshold`, so empty HATs are rarely released.
    """
    scale = k / epsilon_per_day
    while discrete_laplace_epsilon(k, scale) > epsilon_per_day:
        scale = float(np.nextafter(scale, np.inf))
    grid = pl.DataFrame({"cell": cells.cast(pl.UInt64)}).join(
        pl.DataFrame({"slot": pl.Series(slots, dtype=pl.Int16)}), how="cross"
    )
    counts = grid.join(per_hat.select("cell", "slot", "n"), on=["cell", "slot"], how="left").with_columns(
        pl.col("n").fill_null(0)
    )
    noisy = noise.discrete_laplace(counts["n"].to_numpy(), scale)
    threshold = false_positive_threshold(scale, counts.height, min_per_day * days)
    hats = counts.select("cell", "slot").with_columns(pl.Series("noisy_n", noisy, dtype=pl.Int64))
    hats = hats.filter(pl.col("noisy_n") >= threshold)
    return SelectionResult(
        hats=hats.sort("cell", "slot"),
        method="dp-public-domain",
        differentially_private=True,
        scale=scale,
        threshold=float(threshold),
        epsilon_per_hat_per_day=discrete_laplace_epsilon(1, scale),
        epsilon_per_day=discrete_laplace_epsilon(k, scale),
        delta_per_day=0.0,
    )
