"""Privacy per card over the whole window, next to the per-card-day figure (group privacy over days).

A ``card-day`` unit protects one card on one day. A card present on all ``D`` days of the window is ``D`` units.
Its days touch disjoint cells of the joint table (the day is an axis), so the card's sensitivity over the window is
``D`` times the per-day L1 (and ``sqrt(D)`` times the per-day L2). For the pure-DP Laplace maps this gives
``D * epsilon`` (group privacy, Dwork and Roth 2014, Thm 2.2, and here it is exact: the map is linear); for the
Gaussian, zCDP adds over the days (``rho_card = D * rho``), converted to (epsilon, delta) by OpenDP's map at the
same delta, once for the whole release (its tables compose in rho). The ``event`` unit does not bound how many taps one card makes, so no per-card figure exists for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from urbandp.counts._accounting import discrete_laplace_measurement, release_loss

if TYPE_CHECKING:
    from urbandp.counts._accounting import NoisePlan
    from urbandp.counts._options import CountsReleaseSpec


def _card_laplace_epsilon(plan: NoisePlan, l1: int, days: int) -> float:
    """Epsilon of one discrete Laplace table for a card present on ``days`` days (OpenDP's map at D x d_in)."""
    return float(discrete_laplace_measurement(plan.noise_scale).map(days * l1))


def per_card_window(
    config: CountsReleaseSpec,
    plan: NoisePlan,
    marginal_plan: NoisePlan | None,
    top_k_epsilon: float | None,
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
        eps, dlt, why = release_loss(plan, marginal_plan, top_k_epsilon).times(days).approx(plan.delta)
        if eps is None or dlt is None:
            return {"days": days, "epsilon": None, "epsilon_reason": why, "delta": None}
    else:  # Laplace: every table of the release is (the marginals share the joint's mechanism), pure DP
        eps, dlt = _card_laplace_epsilon(plan, unit.l1, days), 0.0
        if marginal_plan is not None:
            eps += 2 * _card_laplace_epsilon(marginal_plan, config.marginal_unit().l1, days)
        if top_k_epsilon is not None:
            eps += days * top_k_epsilon
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
