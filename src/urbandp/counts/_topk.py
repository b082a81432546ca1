"""Top-k places (e.g. the most common destinations) by OpenDP's one-shot noisy top-k.

The travel-survey report (MPI 2021, section 6.1) proposes: add Laplace(1/epsilon) to every block count and publish
the 10 largest. That is epsilon-DP (Laplace mechanism + post-processing). Here the selection uses OpenDP's
``make_noisy_top_k`` (one-shot, Gumbel / exponential-mechanism noise, McKenna and Sheldon 2020), whose privacy
map over the vector of place totals is read directly. A unit (event or card-day of at most k events) changes each
place total by at most ``k`` and all in one direction under add/remove, so ``d_in = k`` in the monotonic
L-infinity metric.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import urbandp._privacy.dp_prelude as dp
from urbandp.counts._units import PrivacyUnit
from urbandp.errors import InputError

dp.enable_features("contrib")


def top_k_measurement(n: int, k: int, scale: float) -> dp.Measurement:
    dom = dp.vector_domain(dp.atom_domain(T="i64"), size=n)
    return dp.m.make_noisy_top_k(
        dom, dp.linf_distance(T="i64", monotonic=True), dp.max_divergence(), k=k, scale=scale
    )


@dataclass(frozen=True)
class TopKResult:
    indices: list[int]
    epsilon: float
    noise_scale: float


def noisy_top_k(totals: np.ndarray, k: int, epsilon: float, unit: PrivacyUnit) -> TopKResult:
    """Indices of the ``k`` places with the largest noisy totals, best first; epsilon from OpenDP's map."""
    n = int(totals.size)
    if not 1 <= k <= n:
        raise InputError(f"top-k needs 1 <= k <= number of places ({n}), got {k}")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise InputError(f"top-k epsilon must be finite and > 0, got {epsilon}")
    scale = float(
        dp.binary_search_param(lambda s: top_k_measurement(n, k, s), d_in=unit.l1, d_out=float(epsilon))
    )
    meas = top_k_measurement(n, k, scale)
    chosen = [int(i) for i in meas(np.asarray(totals, dtype=np.int64).tolist())]
    return TopKResult(chosen, float(meas.map(unit.l1)), scale)
