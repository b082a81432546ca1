"""Noise scales from epsilon (and delta), and epsilons read back from OpenDP's privacy maps.

* Discrete Laplace over an integer vector with L1 sensitivity ``Delta_1``: OpenDP ``make_laplace`` on
  ``vector_domain(atom_domain(i64)), l1_distance(i64)``; its map gives ``epsilon = Delta_1 / b`` (pure DP).
* Discrete Gaussian with L2 sensitivity ``Delta_2``: OpenDP ``make_gaussian`` (zCDP, ``rho = Delta_2^2 / (2
  sigma^2)``, Canonne, Kamath, Steinke 2020), converted to (epsilon, delta) by ``make_zCDP_to_approxDP`` +
  ``make_fix_delta``. When ``Delta_2`` is not an integer the map is read from OpenDP's float-vector Gaussian
  (same rho formula, rounded outward), because the integer metric only takes integer distances.

Calibration (epsilon -> scale) is OpenDP's ``binary_search_param`` over these same measurements, so the
reported epsilon is exactly what the map says for the scale used.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import urbandp._privacy.dp_prelude as dp
from urbandp._privacy.ledger import LedgerEntry
from urbandp._privacy.loss import Loss
from urbandp.counts._units import PrivacyUnit
from urbandp.errors import InputError, InvalidParameterError

dp.enable_features("contrib")


def discrete_laplace_measurement(scale: float) -> dp.Measurement:
    return dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64"), float(scale))


def _gaussian_approx(scale: float, delta: float, l2: float) -> tuple[dp.Measurement, object]:
    if float(l2).is_integer():
        meas = dp.m.make_gaussian(
            dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64"), float(scale)
        )
        d_in: object = int(l2)
    else:
        meas = dp.m.make_gaussian(
            dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float), float(scale)
        )
        d_in = float(l2)
    return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(meas), float(delta)), d_in


@dataclass(frozen=True)
class NoisePlan:
    """What a release costs before it runs (OpenDP-style ``summarize()``): mechanism, scale, epsilon, delta."""

    mechanism: str  # "discrete_laplace" or "discrete_gaussian"
    noise_scale: float
    epsilon: float
    delta: float
    rho: float | None = None

    def to_json(self) -> dict[str, object]:
        """The plan as privacy.json states it, its fields in order (``rho`` as ``rho_zcdp``)."""
        plan = dataclasses.asdict(self)
        plan["rho_zcdp"] = plan.pop("rho")
        return plan


def _noise_scale(epsilon: float | None, scale: float | None, calibrate: Callable[[float], float]) -> float:
    """``scale`` as given, or ``calibrate(epsilon)``: exactly one of the two must be given, and an epsilon must be
    finite and > 0."""
    if (epsilon is None) == (scale is None):
        raise InvalidParameterError(  # the release's keywords (the plans' scale is their noise_scale)
            "give exactly one of epsilon and noise_scale", parameters=("epsilon", "noise_scale")
        )
    if scale is not None:
        return scale
    if not (epsilon is not None and epsilon > 0 and math.isfinite(epsilon)):
        raise InvalidParameterError(f"epsilon must be finite and > 0, got {epsilon}", parameters="epsilon")
    return calibrate(float(epsilon))


def laplace_plan(unit: PrivacyUnit, *, epsilon: float | None = None, scale: float | None = None) -> NoisePlan:
    """Discrete Laplace: give ``epsilon`` (scale is calibrated) or ``scale`` (epsilon is computed)."""
    scale = _noise_scale(
        epsilon,
        scale,
        lambda e: float(dp.binary_search_param(discrete_laplace_measurement, d_in=unit.l1, d_out=e)),
    )
    if not (scale > 0 and math.isfinite(scale)):
        raise InvalidParameterError(
            f"noise_scale must be finite and > 0, got {scale}", parameters="noise_scale"
        )
    eps = float(discrete_laplace_measurement(scale).map(unit.l1))
    return NoisePlan("discrete_laplace", float(scale), eps, 0.0)


def gaussian_plan(
    unit: PrivacyUnit, *, delta: float, epsilon: float | None = None, scale: float | None = None
) -> NoisePlan:
    """Discrete Gaussian under zCDP converted to (epsilon, delta) at the given ``delta``."""
    if not (0 < delta < 1):
        raise InputError(f"the Gaussian mechanism needs 0 < delta < 1, got {delta}")
    scale = _noise_scale(
        epsilon,
        scale,
        lambda e: float(
            dp.binary_search_param(
                lambda s: _gaussian_approx(s, delta, unit.l2)[0],
                d_in=_gaussian_approx(1.0, delta, unit.l2)[1],
                d_out=(e, float(delta)),
            )
        ),
    )
    meas, d_in = _gaussian_approx(scale, delta, unit.l2)
    eps, dlt = meas.map(d_in)
    rho = unit.l2_squared / (2.0 * scale * scale)
    return NoisePlan("discrete_gaussian", float(scale), float(eps), float(dlt), rho)


def table_loss(plan: NoisePlan) -> Loss:
    """The loss of one noisy table: pure epsilon (discrete Laplace) or zCDP rho (discrete Gaussian)."""
    if plan.rho is not None:
        return Loss.zcdp(plan.rho)
    return Loss.pure(plan.epsilon)


def release_loss(plan: NoisePlan, marginal_plan: NoisePlan | None, top_k_epsilon: float | None) -> Loss:
    """The loss of a whole release per unit: the joint, two charged marginals, and the noisy top-k.

    Gaussian tables compose in rho and are converted once: adding their (epsilon, delta)
    pairs would state 3.00 where 1.72 holds.
    """
    loss = table_loss(plan)
    if marginal_plan is not None:
        loss = loss + table_loss(marginal_plan).times(2)
    if top_k_epsilon:
        loss = loss + Loss.pure(top_k_epsilon)
    return loss


def table_entry(name: str, plan: NoisePlan, unit: PrivacyUnit, detail: dict[str, object]) -> LedgerEntry:
    """The ledger entry of one noisy table, in its own currency (rho for the Gaussian, epsilon for Laplace)."""
    gaussian = plan.rho is not None
    return LedgerEntry(
        name,
        0.0 if gaussian else plan.epsilon,
        0.0 if gaussian else plan.delta,
        unit.name,
        unit.neighbouring,
        plan.mechanism,
        {**detail, "noise_scale": plan.noise_scale},
        plan.rho or 0.0,
    )
