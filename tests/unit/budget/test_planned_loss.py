"""The fleet's one loss (``fleet._plan.planned_loss``), from public parameters: per vehicle-day and over the window.

Measured before: the store booked D x (epsilon per day) for a Gaussian release that pools its D days, while its
privacy.json stated the group cost D^2 rho converted once: 12 against 14.33 at epsilon 4 a day over 3 days
(1.19x), 124 against 424.8 over 31 days (3.43x); and the store's delta per day left out the threshold's delta.
"""

from __future__ import annotations

import pytest

from urbandp._privacy.loss import Loss
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._plan import plan_release, planned_loss

BBOX = (21.09, 72.75, 21.25, 72.91)


def _cfg(**kw: object) -> HatReleaseConfig:
    return HatReleaseConfig(epsilon_per_day=4.0, domain_bbox=BBOX, contribution_bounding="l2", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("days", "exact", "bound"), [(1, 3.73756, 4.0), (3, 13.5015, 14.3282), (31, 414.247, 424.821)]
)
def test_a_gaussian_window_is_d_squared_rho_converted_once(days: int, exact: float, bound: float) -> None:
    """Gaussian noise alone: the window's D^2 rho is stated by the exact Gaussian curve (Balle and Wang 2018),
    below OpenDP's zCDP bound (which the store's D x 4 under-booked: 12 against 14.33 at D = 3)."""
    loss = planned_loss(_cfg(), days)
    assert loss is not None and loss.gaussian
    rho = plan_release(_cfg(), days).total_budget
    assert loss.per_day == Loss.zcdp(rho)  # type: ignore[arg-type]
    assert loss.window.rho == pytest.approx(days**2 * rho, rel=1e-12)  # type: ignore[operator]
    eps, delta, _ = loss.approx(loss.window)
    assert (float(f"{eps:.6g}"), delta) == (exact, 1e-6)
    zcdp, _, _ = loss.window.approx(1e-6)
    assert float(f"{zcdp:.6g}") == bound and zcdp >= days * 4.0 * (1 - 1e-12)  # type: ignore[operator]


def test_a_dp_clip_bound_is_not_gaussian_so_the_zcdp_bound_states_it() -> None:
    cfg = HatReleaseConfig(epsilon_per_day=4.0, domain_bbox=BBOX, clip_bound="dp-quantile")
    loss = planned_loss(cfg, 3)
    assert loss is not None and not loss.gaussian
    assert loss.approx(loss.window)[0] == loss.window.approx(1e-6)[0]


def test_a_laplace_window_is_d_times_the_day() -> None:
    cfg = HatReleaseConfig(epsilon_per_day=4.0, mechanism="laplace", domain_bbox=BBOX)
    loss = planned_loss(cfg, 3)
    assert loss is not None and loss.per_day == Loss.pure(4.0) and loss.window.epsilon == pytest.approx(12.0)
    assert loss.window.delta == 0 and loss.approx(loss.window) == (loss.window.epsilon, 0.0, None)


def test_the_delta_per_day_holds_the_thresholds_delta() -> None:
    """An unknown domain: the threshold's delta per vehicle-day is part of the loss per day (the store's figure
    left it out: 5e-7 booked where 5.92e-7 is stated, at epsilon 10, K 8, D 4)."""
    cfg = HatReleaseConfig(epsilon_per_day=10.0, max_hats_per_vehicle_day=8)
    loss = planned_loss(cfg, 4)
    assert loss is not None and loss.per_day.kind == "mixed"
    plan = plan_release(cfg, 4)
    assert plan.conversion_delta == 5e-7
    eps, delta, _ = loss.approx(loss.per_day)
    assert eps == pytest.approx(10.0, rel=1e-9)  # the rho part alone, converted at 5e-7
    assert delta == pytest.approx(5.9158e-7, rel=1e-4) and delta > plan.conversion_delta  # type: ignore[operator]


def test_l2_weights_are_costed_at_the_next_float_above_their_norm() -> None:
    """``m * fl(1/sqrt(m))^2`` passes 1 for 1,189 values of m below 5,000 (by up to 4.4e-16, so the norm by one
    ulp): OpenDP's map is read at the next float above the sensitivity, never at exactly 1 x the sensitivity."""
    import math

    from urbandp._privacy.mechanisms import gaussian_rho

    worst = max(m * (1 / math.sqrt(m)) ** 2 for m in range(1, 5000))
    assert 1 < math.sqrt(worst) <= math.nextafter(1.0, 2.0)
    plan = plan_release(_cfg(), 3)
    assert plan.weight_norm == math.nextafter(1.0, 2.0)
    assert plan.cost(32.5, 7.0) == gaussian_rho(math.nextafter(32.5, 99.0), 7.0) > gaussian_rho(32.5, 7.0)
    unit = plan_release(
        HatReleaseConfig(epsilon_per_day=4.0, domain_bbox=BBOX, contribution_bounding="truncate"), 3
    )
    assert unit.weight_norm == 1.0 and unit.cost(32.5, 7.0) == gaussian_rho(32.5, 7.0)
