"""Vectorised Monte Carlo of the user-level mean estimators (utility only: NOT a release path).

Noise here comes from numpy (docs/design.md rule 1 allows it only in utility simulations); nothing in
:mod:`urbandp.estimators` or the release code imports this module (a test checks it in a subprocess).

Faithfulness: the deterministic part of every estimator (clipping, ``m_UB``, grouping, array means, ``tau``
bins, candidate grid, quantile levels, OpenDP-calibrated scales) is computed by the release classes'
:meth:`prepare` and helpers; only the random draws are replaced, vectorised across runs:

* Laplace steps: ``numpy.random.Generator.laplace`` with the same scale (``Delta / epsilon``; OpenDP's calibrated
  scale differs by a few ulps at most).
* OpenDP ``make_noisy_max`` / ``make_private_quantile`` under pure DP are report-noisy-max with **exponential**
  noise (McKenna and Sheldon 2020; checked against OpenDP by a test): ``argmax(score + scale E)``,
  ``E ~ Exp(1)`` iid, with Smith's quantile scores negated.

The paper's MAE (section IV-A): the mean over runs of ``|M(C) - mu(C)|``, ``mu(C)`` the true sample mean of the
(clipped) data. The data set is fixed across runs; only the mechanism's randomness varies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from urbandp.estimators._core import (
    ArrayAveraging,
    Baseline,
    ClippedMean,
    Levy,
    Prepared,
    Quantile,
    _Estimator,
    clipped_mean,
)
from urbandp.estimators._selection import noisy_max_scale, quantile_scale, quantile_scores

CHUNK = 2048  # runs per block of selection noise (bounds memory to CHUNK x candidates floats)


@dataclass(frozen=True)
class Algorithm:
    """A named, configured estimator for the experiment table (paper Fig. 1-2 naming)."""

    label: str
    estimator: _Estimator


def _noisy_argmax(rng: np.random.Generator, scores: np.ndarray, scale: float, runs: int) -> np.ndarray:
    """``runs`` draws of report-noisy-max with exponential noise: ``argmax_i(scores_i + scale E_i)``."""
    out = np.empty(runs, dtype=np.int64)
    for start in range(0, runs, CHUNK):
        n = min(CHUNK, runs - start)
        noisy = scores[None, :] + scale * rng.standard_exponential((n, scores.size))
        out[start : start + n] = np.argmax(noisy, axis=1)
    return out


def _clipped_means(
    sorted_means: np.ndarray, prefix: np.ndarray, low: np.ndarray, high: np.ndarray
) -> np.ndarray:
    """``mean(clip(x, low_r, high_r))`` for every run ``r`` in O(log n) via prefix sums."""
    n = sorted_means.size
    n_low = np.searchsorted(sorted_means, low, side="left")
    n_high = np.searchsorted(sorted_means, high, side="right")
    return (low * n_low + (prefix[n_high] - prefix[n_low]) + high * (n - n_high)) / n


def simulate_errors(
    algorithm: _Estimator, prep: Prepared, epsilon: float, runs: int, rng: np.random.Generator
) -> np.ndarray:
    """Absolute errors ``|M^(i) - mu|`` of ``runs`` independent runs of ``algorithm`` on the prepared data."""
    mu = prep.true_mean
    if isinstance(algorithm, Baseline):
        scale = algorithm.sensitivity(prep.counts) / epsilon
        return np.abs(rng.laplace(0.0, scale, runs))
    if isinstance(algorithm, ClippedMean):
        return _clipped_mean_errors(algorithm, prep, epsilon, runs, rng)
    plan = prep.plan
    assert plan is not None
    x = prep.array_means
    if isinstance(algorithm, ArrayAveraging):
        scale = algorithm.sensitivity(plan) / epsilon
        return np.abs(float(np.mean(x)) - mu + rng.laplace(0.0, scale, runs))
    if isinstance(algorithm, Levy):
        tau, n_bins = algorithm.bins(plan)
        counts = algorithm.bin_counts(x, tau, n_bins).astype(float)
        sel_scale, _ = noisy_max_scale(plan.influence, epsilon / 2)
        chosen = _noisy_argmax(rng, counts, sel_scale, runs)
        per_bin = [algorithm.interval(i, tau) for i in range(n_bins)]
        value = np.array([clipped_mean(x, a, b) for a, b in per_bin])
        lap_scale = np.array([plan.influence * (b - a) / plan.n_arrays / (epsilon / 2) for a, b in per_bin])
        return np.abs(value[chosen] - mu + lap_scale[chosen] * rng.laplace(0.0, 1.0, runs))
    if isinstance(algorithm, Quantile):
        cands = algorithm.candidates()
        ends = []
        for alpha in algorithm.quantile_levels(epsilon, plan.n_arrays):
            scale, _ = quantile_scale(plan.n_arrays, cands, alpha, 2 * plan.influence, epsilon / 4)
            ends.append(cands[_noisy_argmax(rng, -quantile_scores(x, cands, alpha), scale, runs)])
        low, high = np.minimum(ends[0], ends[1]), np.maximum(ends[0], ends[1])
        xs = np.sort(x)
        prefix = np.concatenate([[0.0], np.cumsum(xs)])
        value = _clipped_means(xs, prefix, low, high)
        lap_scale = plan.influence * (high - low) / plan.n_arrays / (epsilon / 2)
        return np.abs(value - mu + lap_scale * rng.laplace(0.0, 1.0, runs))
    raise TypeError(f"no simulation for {type(algorithm).__name__}")


def _clipped_mean_errors(
    algorithm: ClippedMean, prep: Prepared, epsilon: float, runs: int, rng: np.random.Generator
) -> np.ndarray:
    """CLIPPED-MEAN: private median of the counts per run, then noisy centred sum / noisy count."""
    half = float(algorithm.upper) / 2
    counts = prep.counts
    m_max = int(max(int(counts.max()), algorithm.m_cap))
    # per position j: sum over units with m_l > j of (s_lj - U/2); S(m) = cumulative sum up to m
    positions = np.concatenate([np.arange(c) for c in counts])
    flat = np.concatenate(prep.values) - half
    per_pos = np.bincount(positions, weights=flat, minlength=m_max)
    sums = np.concatenate([[0.0], np.cumsum(per_pos)])
    kept = np.concatenate([[0], np.cumsum(np.bincount(positions, minlength=m_max))]).astype(float)
    _, f_s, f_c = algorithm.shares()
    if algorithm.m_ub == "dp-median":
        cands = np.asarray(algorithm.candidates(), dtype=float)
        scale, _ = algorithm.count_bound_scale(epsilon)
        m = cands[_noisy_argmax(rng, -quantile_scores(counts, cands, 0.5), scale, runs)].astype(np.int64)
    else:
        m = np.full(runs, int(algorithm.m_ub), dtype=np.int64)
    noisy_sum = sums[m] + rng.laplace(0.0, 1.0, runs) * (half * m / (epsilon * f_s))
    noisy_count = kept[m] + rng.laplace(0.0, 1.0, runs) * (m / (epsilon * f_c))
    est = np.clip(half + noisy_sum / np.maximum(noisy_count, 1.0), 0.0, float(algorithm.upper))
    return np.abs(est - prep.true_mean)


def paper_algorithms(upper: float, array_m_ub: str = "median", n_candidates: int = 1001) -> list[Algorithm]:
    """The algorithms of the paper's figures, BESTFIT grouping throughout (section IV-B), plus ARRAY-AVERAGING
    with WRAPAROUND (the comparison the paper omits for space)."""
    return [
        Algorithm("BASELINE", Baseline(upper=upper)),
        Algorithm("ARRAY-AVERAGING", ArrayAveraging(upper=upper, grouping="bestfit", m_ub=array_m_ub)),
        Algorithm(
            "ARRAY-AVERAGING-WRAPAROUND", ArrayAveraging(upper=upper, grouping="wraparound", m_ub=array_m_ub)
        ),
        Algorithm("LEVY", Levy(upper=upper, grouping="bestfit", m_ub="eq1")),
        Algorithm(
            "FIXEDQUANTILE", Quantile(upper=upper, m_ub="eq1", rule="fixed", n_candidates=n_candidates)
        ),
        Algorithm(
            "EPS-DEPENDENTQUANTILE",
            Quantile(upper=upper, m_ub="eq1", rule="eps-dependent", n_candidates=n_candidates),
        ),
    ]


def all_algorithms(upper: float, array_m_ub: str = "median", n_candidates: int = 1001) -> list[Algorithm]:
    """The paper's algorithms plus CLIPPED-MEAN (counts private, add/remove-one-unit): the price of the stronger
    guarantee, side by side."""
    return [
        *paper_algorithms(upper, array_m_ub, n_candidates),
        Algorithm("CLIPPED-MEAN", ClippedMean(upper=upper)),
    ]


@dataclass(frozen=True)
class MaeRow:
    algorithm: str
    epsilon: float
    mae: float
    runs: int
    stderr: float


def run_mae(
    algorithms: Sequence[Algorithm],
    values_per_unit: Sequence[np.ndarray],
    epsilons: Sequence[float],
    runs: int,
    seed: int,
    progress: Callable[[], None] | None = None,
) -> list[MaeRow]:
    """MAE table: every algorithm at every epsilon, ``runs`` Monte Carlo runs each (independent seeded streams)."""
    rows: list[MaeRow] = []
    seeds = np.random.SeedSequence(seed).spawn(len(algorithms) * len(epsilons))
    k = 0
    for alg in algorithms:
        prep = alg.estimator.prepare(values_per_unit)
        for eps in epsilons:
            err = simulate_errors(alg.estimator, prep, float(eps), runs, np.random.default_rng(seeds[k]))
            k += 1
            stderr = float(err.std(ddof=1) / np.sqrt(runs))
            rows.append(MaeRow(alg.label, float(eps), float(err.mean()), int(runs), stderr))
            if progress is not None:
                progress()
    return rows
