"""Sensitivities and privacy numbers, pinned exactly against OpenDP's maps."""

from __future__ import annotations

import math

import numpy as np
import opendp.prelude as dp
import pytest

from urbandp.counts._accounting import gaussian_plan, laplace_plan
from urbandp.counts._partitions import calibrate_threshold, threshold_measurement
from urbandp.counts._topk import noisy_top_k
from urbandp.counts._units import PrivacyUnit
from urbandp.errors import InputError

dp.enable_features("contrib")


@pytest.mark.parametrize(
    ("unit", "l1", "l2_sq", "linf"),
    [
        (PrivacyUnit("event"), 1, 1, 1),
        (PrivacyUnit("card-day", 4, 1), 4, 4, 1),  # L2 = sqrt(k) only with one event per cell
        (PrivacyUnit("card-day", 4, 4), 4, 16, 4),  # all k events in one cell: L2 = k
        (PrivacyUnit("card-day", 5, 2), 5, 9, 2),  # 2 + 2 + 1 -> 4 + 4 + 1
    ],
)
def test_sensitivities(unit: PrivacyUnit, l1: int, l2_sq: int, linf: int) -> None:
    assert (unit.l1, unit.l2_squared, unit.linf) == (l1, l2_sq, linf)


def test_laplace_scale_from_epsilon_is_exact() -> None:
    plan = laplace_plan(PrivacyUnit("card-day", 4, 1), epsilon=1.0)
    assert plan.noise_scale == 4.0
    assert plan.epsilon == 1.0 and plan.delta == 0.0


def test_laplace_epsilon_from_scale_reads_opendp_map() -> None:
    plan = laplace_plan(PrivacyUnit("event"), scale=2.0)
    assert plan.epsilon == 0.5
    with pytest.raises(InputError):
        laplace_plan(PrivacyUnit("event"), epsilon=1.0, scale=2.0)


def test_gaussian_plan_matches_zcdp_conversion() -> None:
    unit = PrivacyUnit("card-day", 4, 1)  # L2 = 2
    plan = gaussian_plan(unit, delta=1e-6, scale=3.0)
    assert plan.rho == pytest.approx(4 / (2 * 9.0), rel=1e-15)
    meas = dp.c.make_fix_delta(
        dp.c.make_zCDP_to_approxDP(
            dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64"), 3.0)
        ),
        1e-6,
    )
    assert (plan.epsilon, plan.delta) == meas.map(2)
    calibrated = gaussian_plan(unit, delta=1e-6, epsilon=1.0)
    assert calibrated.epsilon <= 1.0 and calibrated.epsilon == pytest.approx(1.0, abs=1e-6)


def test_gaussian_non_integer_l2_uses_float_map() -> None:
    plan = gaussian_plan(PrivacyUnit("card-day", 3, 1), delta=1e-6, scale=2.0)
    assert plan.rho == pytest.approx(3 / 8.0)
    assert plan.epsilon > 0 and plan.delta == 1e-6


def test_partition_threshold_is_smallest_within_delta() -> None:
    unit = PrivacyUnit("event")
    t = calibrate_threshold(unit, 1.0, 1e-6)
    assert t == 14
    assert (
        threshold_measurement(1.0, t).map((1, 1, 1))[1]
        <= 1e-6
        < threshold_measurement(1.0, t - 1).map((1, 1, 1))[1]
    )


def test_top_k_epsilon_and_selection() -> None:
    totals = np.array([5, 10_000, 20, 9_000, 1])
    res = noisy_top_k(totals, 2, 1.0, PrivacyUnit("event"))
    assert res.epsilon == pytest.approx(1.0, abs=1e-9) and res.epsilon <= 1.0
    # scale ~ 1: gaps of ~9,000 are never overturned
    assert res.indices == [1, 3]
    with pytest.raises(InputError):
        noisy_top_k(totals, 6, 1.0, PrivacyUnit("event"))
    assert math.isfinite(res.noise_scale)


def test_partition_selection_card_day_uses_l0_l1_linf() -> None:
    from urbandp.counts._partitions import select_partitions

    unit = PrivacyUnit("card-day", 3, 1)
    sel = select_partitions({"a": 500, "b": 1}, unit, scale=3.0, delta=1e-6)
    meas = threshold_measurement(3.0, sel.threshold)
    assert (sel.epsilon, sel.delta) == meas.map((3, 3, 1))
    assert sel.epsilon == pytest.approx(1.0, rel=1e-12) and sel.delta <= 1e-6
    assert "a" in sel.released and "b" not in sel.released  # 1 never clears a threshold this high


def _max_sum_of_squares(k: int, m: int) -> int:
    """Brute force: the largest sum of squares over ways to spread k events on cells with at most m per cell."""
    best = 0

    def go(left: int, cap: int, acc: int) -> None:
        nonlocal best
        if left == 0:
            best = max(best, acc)
            return
        for c in range(min(cap, left), 0, -1):
            go(left - c, c, acc + c * c)

    go(k, m, 0)
    return best


@pytest.mark.parametrize("k", range(1, 9))
def test_l2_formula_matches_brute_force(k: int) -> None:
    for m in range(1, k + 1):
        assert PrivacyUnit("card-day", k, m).l2_squared == _max_sum_of_squares(k, m)
