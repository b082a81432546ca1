"""DP partition selection when the domain is not public (Rogers 2023; OpenDP ``make_laplace_threshold``).

Only cells that exist in the data are candidates, so which cells appear is itself private: each observed cell's
count gets discrete-Laplace noise and is released only if the noisy count reaches a threshold. The result is
(epsilon, delta)-DP; OpenDP's map takes ``d_in = (l0, l1, linf)`` = (cells one unit touches, its total
contribution, its largest contribution to one cell). The threshold is the smallest integer whose delta is at
most the requested delta.
"""

from __future__ import annotations

from dataclasses import dataclass

import urbandp._privacy.dp_prelude as dp
from urbandp._privacy.bisection import smallest_passing
from urbandp.counts._units import PrivacyUnit
from urbandp.errors import InputError

dp.enable_features("contrib")


def threshold_measurement(scale: float, threshold: int) -> dp.Measurement:
    dom = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T="i64"))
    met = dp.l01inf_distance(dp.absolute_distance(T="i64"))
    return dp.m.make_laplace_threshold(dom, met, scale=float(scale), threshold=int(threshold))


@dataclass(frozen=True)
class PartitionSelection:
    released: dict[str, int]
    epsilon: float
    delta: float
    threshold: int
    noise_scale: float


def calibrate_threshold(unit: PrivacyUnit, scale: float, delta: float) -> int:
    """Smallest integer threshold with OpenDP's map delta <= ``delta`` (doubling then bisection)."""
    if not 0 < delta < 1:
        raise InputError(f"partition selection needs 0 < delta < 1, got {delta}")
    d_in = (unit.l0, unit.l1, unit.linf)

    def delta_at(t: int) -> float:
        return float(threshold_measurement(scale, t).map(d_in)[1])

    hi = max(unit.linf + 1, 2)
    while delta_at(hi) > delta:
        hi *= 2
        if hi > 2**40:
            raise InputError("no threshold reaches that delta")
    return smallest_passing(lambda t: delta_at(t) <= delta, unit.linf, hi)


def select_partitions(
    counts: dict[str, int], unit: PrivacyUnit, scale: float, delta: float
) -> PartitionSelection:
    """Release noisy counts of the observed cells that pass the calibrated threshold."""
    threshold = calibrate_threshold(unit, scale, delta)
    meas = threshold_measurement(scale, threshold)
    released = {str(k): int(v) for k, v in meas({str(k): int(v) for k, v in counts.items()}).items()}
    eps, dlt = meas.map((unit.l0, unit.l1, unit.linf))
    return PartitionSelection(released, float(eps), float(dlt), threshold, float(scale))
