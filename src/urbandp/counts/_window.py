"""Privacy per card over the whole window, next to the per-card-day figure (group privacy over days).

A ``card-day`` unit protects one card on one day. A card present on all ``D`` days of the window is ``D`` units.
Its days touch disjoint cells of the joint table (the day is an axis), so the card's sensitivity over the window is
``D`` times the per-day L1 (and ``sqrt(D)`` times the per-day L2). For the pure-DP Laplace maps this gives
``D * epsilon`` (group privacy, Dwork and Roth 2014, Thm 2.2, and here it is exact: the map is linear); for the
Gaussian, zCDP adds over the days (``rho_card = D * rho``), converted to (epsilon, delta) by OpenDP's map at the
same delta, once for the whole release (its tables compose in rho). The ``event`` unit does not bound how many taps one card makes, so no per-card figure exists for it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from urbandp._privacy.loss import Loss
from urbandp.counts._accounting import _gaussian_approx, discrete_laplace_measurement

if TYPE_CHECKING:
    from urbandp.counts._accounting import NoisePlan
    from urbandp.counts._options import CountsReleaseSpec


def _card_epsilon_delta(plan: NoisePlan, l1: int, l2_squared: int, days: int) -> tuple[float, float]:
    """(epsilon, delta) of one measurement for a card present on ``days`` days (OpenDP maps at D x d_in)."""
    if plan.mechanism == "discrete_laplace":
        return float(discrete_laplace_measurement(plan.noise_scale).map(days * l1)), 0.0
    meas, _ = _gaussian_approx(plan.noise_scale, plan.delta, math.sqrt(days * l2_squared))
    d_in: object = math.sqrt(days * l2_squared)
    if float(d_in).is_integer():  # type: ignore[arg-type]
        d_in = int(d_in)  # type: ignore[call-overload]
    eps, dlt = meas.map(d_in)
    return float(eps), float(dlt)


def per_card_window(
    config: CountsReleaseSpec,
    plan: NoisePlan,
    marginal_plan: NoisePlan | None,
    topk_info: dict[str, object] | None,
    days: int,
    per_day: tuple[float, float],
) -> dict[str, object]:
    """The ``per_card_window`` entry of privacy.json."""
    unit = config.privacy_unit()
    if unit.kind != "card-day":
        return {
            "days": days,
            "epsilon": None,
            "epsilon_reason": "unit 'event' does not bound the taps of one card: no per-card guarantee; "
            'use unit="card-day"',
            "delta": None,
            "per_card_day_epsilon": None,
        }
    if plan.rho is not None:  # Gaussian: rho adds over days and tables, converted once at the release's delta
        m_rho = 0.0
        if marginal_plan is not None and marginal_plan.rho is not None:
            m_rho = 2 * marginal_plan.rho
        loss = Loss.zcdp(days * (plan.rho + m_rho))
        if topk_info is not None:
            loss = loss + Loss.pure(days * float(topk_info["epsilon"]))  # type: ignore[arg-type]
        conv_eps, conv_delta, why = loss.approx(plan.delta)
        if conv_eps is None or conv_delta is None:
            return {"days": days, "epsilon": None, "epsilon_reason": why, "delta": None}
        eps, dlt = conv_eps, conv_delta
    else:
        eps, dlt = _card_epsilon_delta(plan, unit.l1, unit.l2_squared, days)
        if marginal_plan is not None:
            m_unit = config.marginal_unit()
            m_eps, m_dlt = _card_epsilon_delta(marginal_plan, m_unit.l1, m_unit.l2_squared, days)
            eps, dlt = eps + 2 * m_eps, dlt + 2 * m_dlt
        if topk_info is not None:
            eps += days * float(topk_info["epsilon"])  # type: ignore[arg-type]
    return {
        "days": days,
        "epsilon": eps,
        "delta": dlt,
        "per_card_day_epsilon": per_day[0],
        "per_card_day_delta": per_day[1],
        "explanation": f"a card present on all {days} days of the window is {days} card-days; its days touch "
        f"disjoint cells, so its sensitivity is {days} x the per-card-day one: epsilon {days} x per card-day "
        "(Laplace; group privacy), zCDP rho adds over days (Gaussian)",
    }
