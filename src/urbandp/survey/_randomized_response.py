"""Randomized response for categorical survey answers (travel-survey report, sections 3.3, 4.1, 4.2).

* Binary RR with truth probability ``theta`` (report eq. 4): epsilon = ln((1 + theta) / (1 - theta)); the
  unbiased estimate of the population proportion is eq. (6).
* k-ary generalised RR over a declared category list (OpenDP ``make_randomized_response``: the truth with
  probability ``prob``, otherwise one of the other ``k - 1`` uniformly): epsilon = ln(prob (k - 1) / (1 - prob)),
  from OpenDP's privacy map; frequency de-biasing with a 95 % normal confidence interval.
* The report's random replacement within a sub-category (eqs. 8-12), kept for comparison only: see
  :func:`report_replacement_epsilon` for why it is not DP as written. The default within-sub-category mechanism is
  k-RR inside each sub-category's *declared* list (:func:`randomize_within`), whose epsilon does not depend on data.

Privacy unit: the respondent (one answer per row), neighbouring relation: replace one respondent's answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

import urbandp._privacy.dp_prelude as dp
from urbandp.survey._sampling import BitSource, OpenDPBits

dp.enable_features("contrib")

Z95 = 1.959963984540054
OPENDP_MAP_MAX_K = (
    20_000  # above this the closed form (same formula, checked against OpenDP in tests) is used
)


def binary_epsilon(theta: float) -> float:
    """Epsilon of binary RR with truth probability ``theta`` (report eq. 4), from OpenDP's privacy map.

    The respondent answers truthfully with probability ``theta`` and flips a fair coin otherwise, so the truth is
    reported with probability ``p_t = (1 + theta) / 2``: that is OpenDP's ``make_randomized_response_bool(prob=p_t)``
    whose map is ln(p_t / (1 - p_t)) = ln((1 + theta) / (1 - theta)). theta = 1/2 gives ln 3 (report eq. 3).
    """
    if not 0.0 <= theta < 1.0:
        raise ValueError(f"theta must be in [0, 1), got {theta}")
    p_t = (1.0 + theta) / 2.0
    if p_t == 0.5:
        return 0.0
    return float(dp.m.make_randomized_response_bool(prob=p_t).map(1))


def krr_epsilon(k: int, prob: float) -> float:
    """Epsilon of k-ary RR (truth with probability ``prob``, else uniform over the other k - 1).

    OpenDP's privacy map of ``make_randomized_response`` for k up to ``OPENDP_MAP_MAX_K``; the same closed form
    ln(prob (k - 1) / (1 - prob)) above (building an OpenDP measurement over millions of categories is slow).
    """
    if k < 2:
        raise ValueError("k-ary randomized response needs at least 2 categories")
    if not 1.0 / k <= prob < 1.0:
        raise ValueError(f"prob must be in [1/k, 1), got {prob}")
    if prob == 1.0 / k:
        return 0.0
    if k <= OPENDP_MAP_MAX_K:
        return float(dp.m.make_randomized_response(categories=list(range(k)), prob=prob).map(1))
    return math.log(prob) + math.log(k - 1) - math.log1p(-prob)


LARGEST_PROB = math.nextafter(1.0, 0.0)
"""The largest float below 1 (1 - 2^-53): the most a k-RR truth probability can be in double precision."""


def krr_max_epsilon(k: int) -> float:
    """The largest epsilon k-RR can spend in double precision: the map at :data:`LARGEST_PROB`, about
    36.7 + ln(k - 1) (37.4 for k = 2). Above it e^eps / (e^eps + k - 1) rounds to 1 (no randomization at all)."""
    return krr_epsilon(k, LARGEST_PROB)


def krr_prob(k: int, epsilon: float) -> float:
    """Truth probability of k-RR for ``epsilon``: e^eps / (e^eps + k - 1), nudged down until the map is <= eps.

    Where the exact value rounds to 1 in float (epsilon above :func:`krr_max_epsilon`, about 36.7 + ln(k - 1)),
    the truth probability is :data:`LARGEST_PROB`: the mechanism then spends :func:`krr_max_epsilon`, less than
    ``epsilon``, and its map (what privacy.json reports and the budget is charged) says so.
    """
    if epsilon <= 0 or not math.isfinite(epsilon):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon}")
    prob = min(1.0 / (1.0 + (k - 1) * math.exp(-epsilon)), LARGEST_PROB)
    while krr_epsilon(k, prob) > epsilon:
        prob = float(np.nextafter(prob, 0.0))
    return prob


def report_replacement_epsilon(p: float, subcategory_counts: Sequence[int]) -> float:
    """The report's epsilon for random replacement within a sub-category (eqs. 10 and 12). NOT DP AS WRITTEN.

    With probability ``p`` the true model is kept, otherwise a model is drawn from the *empirical* distribution of
    the sub-category (model j with probability n_j / t). Eq. (12): epsilon = ln((p t + (1 - p) n) / ((1 - p) n))
    with t the sub-category size and n the count of its rarest model. This epsilon depends on the data: n and t
    change when one respondent changes, the replacement distribution itself is built from everyone's answers (so
    one respondent's answer moves every other respondent's output distribution), and a model owned by nobody can
    never be reported, which reveals that nobody owns it. The value is a per-dataset ratio, not a bound over
    neighbouring datasets. It is implemented for comparison; the default is :func:`randomize_within`.
    """
    counts = [int(c) for c in subcategory_counts if c > 0]
    if not counts:
        raise ValueError("empty sub-category")
    t, n = sum(counts), min(counts)
    if p >= 1.0:
        return math.inf
    return math.log((p * t + (1.0 - p) * n) / ((1.0 - p) * n))


def randomize_codes(codes: np.ndarray, k: int, prob: float, source: BitSource | None = None) -> np.ndarray:
    """k-RR on integer codes in [0, k): keep with probability ``prob``, else uniform over the other k - 1."""
    source = source or OpenDPBits()
    codes = np.asarray(codes, dtype=np.int64)
    n = codes.size
    keep = source.bernoulli(n, prob)
    out = codes.copy()
    idx = np.flatnonzero(~keep)
    if idx.size and k > 1:
        j = source.uniform_int(idx.size, k - 1)
        out[idx] = j + (j >= codes[idx])
    return out


def debias_counts(counts: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Unbiased k-RR frequencies pi_j = (lambda_j - q) / (prob - q), q = (1 - prob) / (k - 1), and their std errors.

    ``lambda_j`` is the observed share of category j; the estimate is unbiased (E lambda_j = q + (prob - q) pi_j) and
    its standard error is sqrt(lambda_j (1 - lambda_j) / n) / (prob - q).
    """
    counts = np.asarray(counts, dtype=float)
    n = counts.sum()
    k = counts.size
    if n <= 0:
        raise ValueError("no responses")
    lam = counts / n
    q = (1.0 - prob) / (k - 1)
    est = (lam - q) / (prob - q)
    se = np.sqrt(lam * (1.0 - lam) / n) / (prob - q)
    return est, se


def randomize_within(
    codes: np.ndarray,
    groups: np.ndarray,
    lists: dict[int, int],
    epsilon: float,
    source: BitSource | None = None,
) -> tuple[np.ndarray, dict[int, float]]:
    """k-RR inside each sub-category's *declared* list (the default; report section 4.1.2 corrected).

    ``codes`` are positions inside the row's group list, ``lists`` maps group -> list length. Each group with
    k_g >= 2 uses its own truth probability so that every group is epsilon-DP for the answer given the group; the
    group (e.g. fuel type) itself is released unchanged, so fuel-type proportions are preserved exactly and the
    group is NOT protected. Returns the randomized codes and the truth probability per group.
    """
    source = source or OpenDPBits()
    out = np.asarray(codes, dtype=np.int64).copy()
    probs = within_probs(lists, epsilon)
    for g, k in lists.items():
        mask = groups == g
        if k >= 2 and mask.any():
            out[mask] = randomize_codes(out[mask], k, probs[g], source)
    return out, probs


def within_probs(lists: dict[int, int], epsilon: float) -> dict[int, float]:
    """The truth probability of every declared group (1.0 for a one-category list): public, from the lists only."""
    return {g: krr_prob(k, epsilon) if k >= 2 else 1.0 for g, k in lists.items()}


def within_epsilon(lists: dict[int, int], probs: dict[int, float]) -> float:
    """Epsilon of :func:`randomize_within`: the largest map over the declared lists (0 if none has 2 entries)."""
    return max((krr_epsilon(lists[g], v) for g, v in probs.items() if lists[g] >= 2), default=0.0)


def report_replacement(
    codes: np.ndarray, groups: np.ndarray, p: float, source: BitSource | None = None
) -> np.ndarray:
    """The report's random replacement (section 4.1.2, eqs. 8-12), for comparison only: NOT DP as written.

    Keep with probability ``p``, otherwise replace by the answer of a uniformly drawn respondent of the same
    sub-category (i.e. draw from the empirical distribution n_j / t). See :func:`report_replacement_epsilon`.
    """
    source = source or OpenDPBits()
    codes = np.asarray(codes, dtype=np.int64)
    out = codes.copy()
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        keep = source.bernoulli(rows.size, p)
        swap = rows[~keep]
        donors = rows[source.uniform_int(swap.size, rows.size)]
        out[swap] = codes[donors]
    return out
