"""Sparse release of a thresholded count table: dense-then-suppress in law, without touching every zero cell.

Cormode, Procopiuc, Srivastava and Tran, "Differentially private summaries for sparse data", ICDT 2012
(section 4, the "high-pass filter"; Lemma 2): the ``Z`` zero cells need no draw each: their published number is
Binomial(``Z``, ``P(X >= t)``), their positions a uniform subset, their values iid ``X | X >= t``. The table then
has exactly the law of noise on every cell followed by suppression (the proof uses only independence across
cells, so it holds for any noise law): the dense mechanism's guarantee, same epsilon and delta. The theorem and
its tests are stated in docs/counts.md, section "Sparse sampling".

Here the non-zero cells get OpenDP noise as in the dense path; the zero cells' random choices come from
:mod:`urbandp.counts._exact_sampling` (CSPRNG bits, exact decisions) with the tails of
:mod:`urbandp.counts._tails`, so the laws match exactly, not approximately (tested against the dense path).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from urbandp._privacy.bisection import smallest_passing
from urbandp._privacy.noise import NoiseSource
from urbandp._privacy.rounding import round_to_precision
from urbandp.counts._exact_sampling import bernoulli_process
from urbandp.counts._parallel_noise import add_noise
from urbandp.counts._tails import IntegerNoise
from urbandp.errors import InvalidParameterError


@dataclass
class SparseJoint:
    """Raw joint counts in sparse form: flat C-order ``index`` (sorted, unique) of the non-zero cells, ``counts``."""

    shape: tuple[int, ...]
    index: np.ndarray  # int64
    counts: np.ndarray  # int64 > 0

    @property
    def n_cells(self) -> int:
        return math.prod(self.shape)

    @property
    def n_zero(self) -> int:
        return self.n_cells - int(self.index.size)

    @classmethod
    def from_dense(cls, dense: np.ndarray) -> SparseJoint:
        flat = np.asarray(dense).ravel()
        idx = np.flatnonzero(flat)
        return cls(tuple(dense.shape), idx.astype(np.int64), flat[idx].astype(np.int64))

    def to_dense(self) -> np.ndarray:
        out = np.zeros(self.n_cells, dtype=np.int64)
        out[self.index] = self.counts
        return out.reshape(self.shape)


@dataclass
class PublishedCells:
    """The cells that pass the threshold: flat ``index`` (sorted) and their released ``values``."""

    index: np.ndarray  # int64
    values: np.ndarray  # float64
    n_zero_published: int
    zero_publish_probability: float


def integer_threshold(tau: float, precision: int | None) -> int:
    """Smallest integer ``k`` whose rounded value is published (``round(k) >= tau``; rounding is monotone)."""
    if not math.isfinite(tau):
        raise ValueError(f"threshold must be finite, got {tau}")

    def published(k: int) -> bool:
        return bool(round_to_precision(np.array([float(k)]), precision)[0] >= tau)

    # rounding moves a value by at most half a step: below ceil(tau) - 2 steps nothing is published, above
    # ceil(tau) + 2 steps everything is; bisection between them (published(k) is monotone in k)
    step = 1 if precision is None or precision >= 0 else 10 ** (-precision)
    return smallest_passing(published, math.ceil(tau) - 2 * step, math.ceil(tau) + 2 * step)


def zero_cell_positions(ranks: np.ndarray, nonzero_index: np.ndarray) -> np.ndarray:
    """Flat cell index of the ``r``-th zero cell for each rank ``r`` (``nonzero_index`` sorted, unique).

    The ``r``-th zero cell is ``r + #{nonzero cells at or before it}``; with ``q_i = nz_i - i`` (non-decreasing)
    that count is ``searchsorted(q, r, 'right')``.
    """
    q: np.ndarray = nonzero_index - np.arange(nonzero_index.size, dtype=np.int64)
    return ranks + np.searchsorted(q, ranks, side="right").astype(np.int64)


def sparse_release(
    joint: SparseJoint,
    law: IntegerNoise,
    suppress_below: float,
    precision: int | None,
    noise: NoiseSource,
    *,
    progress: Callable[[int], None] | None = None,
) -> PublishedCells:
    """Published cells of ``dense noise + round + suppress(< suppress_below)``, sampled sparsely (see module)."""
    t = integer_threshold(suppress_below, precision)
    if t < 1:
        raise InvalidParameterError(
            "sparse sampling needs a suppression threshold above 0 "
            f"(suppress_below {suppress_below} publishes most zero cells; use dense sampling)",
            parameters="suppress_below",
        )
    noisy = add_noise(joint.counts, law.scale, law.mechanism, noise, progress=progress)
    noisy_f = round_to_precision(noisy.astype(np.float64), precision)
    keep = noisy_f >= suppress_below
    nz_index, nz_values = joint.index[keep], noisy_f[keep]
    p = law.tail_float(t)
    if noise.is_private:
        ranks = bernoulli_process(joint.n_zero, law.log_not_tail(t), joint.n_zero * p)
        zero_index = zero_cell_positions(ranks, joint.index)
        zero_values = round_to_precision(law.sample_tail(t, ranks.size).astype(np.float64), precision)
    else:  # the exact (non-private) test source adds no noise: zero cells stay 0 and are never published
        zero_index = np.zeros(0, dtype=np.int64)
        zero_values = np.zeros(0, dtype=np.float64)
    index = np.concatenate([nz_index, zero_index])
    values = np.concatenate([nz_values, zero_values])
    order = np.argsort(index, kind="stable")
    return PublishedCells(index[order], values[order], int(zero_index.size), p)
