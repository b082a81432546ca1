"""Origin-destination trips over blocks (travel-survey report sections 4.2 and 6.3).

* OD randomized response (report eq. 13): each trip (i, j) over B blocks is kept with probability ``p`` and
  otherwise replaced by one of the t = B^2 pairs drawn uniformly (the truth included). That is k-RR with truth
  probability p + (1 - p) / t, so epsilon = ln((t p + 1 - p) / (1 - p)) exactly (~16 for 2,500 blocks, ~6 for 19
  counties at p = 1/2). Privacy unit: the trip (one OD pair per row), replace-one.
* Histogram-preserving random block reporting (section 6.3.1 independent from/to, 6.3.2 joint from-to): keep the
  true block with probability ``p``, otherwise draw it from the TRUE histogram. NOT DP: the replacement
  distribution is the true data (a block with one trip reveals that trip's block whenever it is drawn; a block
  with no trip is never reported). Implemented for comparison, labelled not DP, never the default. Note 3 of
  section 6.3.1 (updating the histogram after every draw) is not implemented: draws are with replacement.
* Per person (:func:`keep_per_person`, :func:`per_person_epsilon`): a person with many trips loses the per-trip
  epsilon once per trip (basic composition, Dwork and Roth 2014, Thm 3.16), unbounded without a bound. With a
  public bound K, each person keeps at most K trips, chosen by a keyed hash with a fixed public seed that reads
  only that person's own trips (as the fleet bounds HATs per vehicle-day); the loss per person is then the
  composition of K eq. (13) releases, K x epsilon per trip (OpenDP ``make_composition``).
* De-biasing (:func:`od_estimate`) and utility metrics, described on their functions.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from urbandp.survey._randomized_response import (
    LARGEST_PROB,
    OPENDP_MAP_MAX_K,
    Z95,
    krr_epsilon,
    krr_prob,
    randomize_codes,
)
from urbandp.survey._sampling import BitSource, OpenDPBits


def od_epsilon(blocks: int, p: float) -> float:
    """Report eq. (13) for OD pairs over ``blocks`` blocks: t = blocks^2 (exact; see module docstring)."""
    t = blocks * blocks
    return krr_epsilon(t, p + (1.0 - p) / t)


def od_keep_probability(blocks: int, epsilon: float) -> float:
    """The keep probability p of eq. (13) for a target ``epsilon``: from k-RR's truth probability over t pairs,
    nudged down until :func:`od_epsilon` is <= ``epsilon``, and below 1 where float rounds it up (large epsilon:
    see :func:`urbandp.survey._randomized_response.krr_prob`)."""
    t = blocks * blocks
    prob = krr_prob(t, epsilon)
    p = min((prob * t - 1.0) / (t - 1.0), LARGEST_PROB)
    while od_epsilon(blocks, p) > epsilon:
        p = math.nextafter(p, 0.0)
    return p


TRUNCATION_SEED = 20211115
"""The fixed public seed of the keyed hash that chooses which trips of a person are kept (the fleet's seed)."""


def per_person_epsilon(blocks: int, p: float, max_trips: int) -> float:
    """The loss per person of eq. (13) with at most ``max_trips`` trips per person: basic composition of
    ``max_trips`` OD randomized responses (Dwork and Roth 2014, Thm 3.16), OpenDP's ``make_composition`` map for
    up to :data:`OPENDP_MAP_MAX_K` pairs, the same sum ``max_trips * od_epsilon`` above (as :func:`krr_epsilon`)."""
    if max_trips < 1:
        raise ValueError(f"max_trips must be >= 1, got {max_trips}")
    t = blocks * blocks
    prob = p + (1.0 - p) / t
    if t > OPENDP_MAP_MAX_K or prob == 1.0 / t:
        return max_trips * od_epsilon(blocks, p)
    import urbandp._privacy.dp_prelude as dp

    dp.enable_features("contrib")
    one = dp.m.make_randomized_response(categories=list(range(t)), prob=prob)
    return float(dp.c.make_composition([one] * max_trips).map(1))


def keep_per_person(frame: pl.DataFrame, person: str, trip_key: list[str], max_trips: int) -> np.ndarray:
    """Which rows of ``frame`` are kept when each person (column ``person``) keeps at most ``max_trips`` trips.

    A person's trips are ranked by a keyed hash of (person, the ``trip_key`` columns) with the fixed public seed
    :data:`TRUNCATION_SEED`, ties by the key's values: the choice reads only that person's own trips and not the
    file order, so a person's kept trips do not depend on anyone else's (the sensitivity of any fixed truncation).
    Rows of one trip (``trip_key`` equal) are kept or dropped together. A row without a person is not kept.
    """
    trips = frame.select(
        pl.col(person).cast(pl.String).alias("__p"), *(pl.col(c).cast(pl.String) for c in trip_key)
    ).with_row_index("__row")
    trips = trips.with_columns(pl.struct("__p", *trip_key).hash(seed=TRUNCATION_SEED).alias("__key"))
    first = trips.group_by("__p", *trip_key, maintain_order=True).agg(pl.col("__key").first())
    ranked = first.with_columns(
        pl.struct("__key", *trip_key).rank("dense").over("__p").alias("__rank")
    ).filter(pl.col("__p").is_not_null() & (pl.col("__rank") <= max_trips))
    kept = trips.join(ranked.select("__p", *trip_key), on=["__p", *trip_key], how="semi", nulls_equal=False)
    mask = np.zeros(frame.height, dtype=bool)
    mask[kept.get_column("__row").to_numpy()] = True
    return mask


def od_randomize(
    origin: np.ndarray, dest: np.ndarray, blocks: int, p: float, source: BitSource | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """OD randomized response (eq. 13) on block indices in [0, blocks)."""
    t = blocks * blocks
    pair = np.asarray(origin, dtype=np.int64) * blocks + np.asarray(dest, dtype=np.int64)
    out = randomize_codes(pair, t, p + (1.0 - p) / t, source)
    return out // blocks, out % blocks


def _draw_within(
    groups_sorted_start: np.ndarray, counts: np.ndarray, which: np.ndarray, source: BitSource
) -> np.ndarray:
    """For each requested group, a uniformly random position inside that group's run of the sorted rows."""
    pos = np.empty(which.size, dtype=np.int64)
    need = counts[which]
    for c in np.unique(need):
        rows = np.flatnonzero(need == c)
        pos[rows] = groups_sorted_start[which[rows]] + source.uniform_int(rows.size, int(c))
    return pos


def histogram_block_reporting(
    origin: np.ndarray,
    dest: np.ndarray,
    p: float,
    joint: bool = False,
    source: BitSource | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Report section 6.3 (NOT DP): keep each block with probability p, else draw it from the true histogram.

    ``joint=False`` (6.3.1): from and to are drawn independently from ht_from and ht_to. ``joint=True`` (6.3.2): the
    reported from block s comes as in 6.3.1 and the to block, when replaced, is drawn from ht_from-to(s, .) (eq.
    24), so the joint histogram (and the trip-length histogram) is preserved in expectation.
    """
    source = source or OpenDPBits()
    origin = np.asarray(origin, dtype=np.int64)
    dest = np.asarray(dest, dtype=np.int64)
    n = origin.size
    keep_from = source.bernoulli(n, p)
    keep_to = source.bernoulli(n, p)
    rep_from = origin.copy()
    swap = np.flatnonzero(~keep_from)
    rep_from[swap] = origin[source.uniform_int(swap.size, n)]
    rep_to = dest.copy()
    swap = np.flatnonzero(~keep_to)
    if not joint:
        rep_to[swap] = dest[source.uniform_int(swap.size, n)]
        return rep_from, rep_to
    order = np.argsort(origin, kind="stable")
    blocks = int(max(origin.max(), rep_from.max())) + 1
    counts = np.bincount(origin, minlength=blocks)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    s = rep_from[swap]  # always a block with trips: drawn from or equal to a true origin
    rep_to[swap] = dest[order[_draw_within(start, counts, s, source)]]
    return rep_from, rep_to


def total_variation(a: np.ndarray, b: np.ndarray, size: int) -> float:
    """Total variation distance between the histograms of two integer arrays over [0, size)."""
    ha = np.bincount(a, minlength=size) / max(a.size, 1)
    hb = np.bincount(b, minlength=size) / max(b.size, 1)
    return float(0.5 * np.abs(ha - hb).sum())


def utility(
    origin: np.ndarray, dest: np.ndarray, rep_origin: np.ndarray, rep_dest: np.ndarray, blocks: int
) -> dict[str, float]:
    """Utility of a reported OD table against the truth (owner material: computed from true trips)."""
    return {
        "tv_from": total_variation(origin, rep_origin, blocks),
        "tv_to": total_variation(dest, rep_dest, blocks),
        "tv_joint": total_variation(origin * blocks + dest, rep_origin * blocks + rep_dest, blocks * blocks),
        "share_trips_kept": float(np.mean((origin == rep_origin) & (dest == rep_dest))),
    }


def od_estimate(released: np.ndarray, blocks: int, p: float) -> dict[str, np.ndarray]:
    """De-bias released OD pair indices (in [0, blocks^2)) of eq. (13) with keep probability ``p``.

    A trip reports its true pair with probability a = p + (1 - p) / t and any given other pair with probability
    b = (1 - p) / t (t = blocks^2). The released count c_j of pair j over n trips has E[c_j] = p n_j + b n, so
    n_hat_j = (c_j - b n) / p is unbiased, and Var(n_hat_j) = (n_j a (1 - a) + (n - n_j) b (1 - b)) / p^2 (a sum of
    independent Bernoulli draws). The standard deviation plugs in n_hat_j clipped to [0, n]; the 95 % interval is
    n_hat_j +- 1.96 sd, clipped to [0, n] (the estimate itself is left unclipped, so that it stays unbiased).
    Returns the pair's released count, estimate, sd, ci_low and ci_high, each of length t.
    """
    t = blocks * blocks
    if not 0 < p < 1:
        raise ValueError(f"keep probability must be in (0, 1) to de-bias, got {p}")
    counts = np.bincount(np.asarray(released, dtype=np.int64), minlength=t).astype(float)
    n = float(counts.sum())
    b = (1.0 - p) / t
    a = p + b
    est = (counts - b * n) / p
    plug = np.clip(est, 0.0, n)
    sd = np.sqrt(plug * a * (1.0 - a) + (n - plug) * b * (1.0 - b)) / p
    return {
        "released": counts,
        "estimate": est,
        "sd": sd,
        "ci_low": np.clip(est - Z95 * sd, 0.0, n),
        "ci_high": np.clip(est + Z95 * sd, 0.0, n),
    }
