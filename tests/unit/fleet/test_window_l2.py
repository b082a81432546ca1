"""Issue 30: the Gaussian threshold's L2 distance at non-square K, and the exact window distance D sqrt K.

One vehicle-day moves K HATs by one each: l2 = sqrt K. OpenDP's integer-count Gaussian threshold takes an integer
l2 and bounds l2^2 by min(l2^2, l0 linf^2), so ceil(sqrt K) costs exactly K at one day; floor(sqrt K) would
understate it (2^2 = 4 instead of 8 at K 8, sigma 2.0 instead of 2.83 at the same stated rho). Over D days the
distance is D sqrt K (l2^2 = D^2 K); ceil(D sqrt K)^2 overstated it (121 instead of 108 at K 12, D 3; 1024 instead
of 972 at K 12, D 9), so the window's map is read from OpenDP's float-count twin at the exact l2."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import polars as pl
import pytest

import urbandp._privacy.dp_prelude as dp
from urbandp._contributions.base import CONTRIBUTION_SCHEMA
from urbandp._privacy.noise import ExactNoiseForTesting
from urbandp.fleet._hat_release import _release_hats
from urbandp.fleet._measure_selection import (
    _threshold_measurement,
    calibrate_selection,
    threshold_distance,
    window_l2,
)
from urbandp.fleet._options import HatReleaseConfig

EXACT = ExactNoiseForTesting(acknowledge_not_private=True)


@pytest.mark.parametrize(("k", "l2"), [(8, 3), (12, 4), (96, 10), (4, 2), (1, 1)])
def test_one_day_gaussian_distance_rounds_up_at_non_square_k(k: int, l2: int) -> None:
    """(l0, l2, linf) = (K, ceil(sqrt K), 1): 8 -> 3, 96 (the default K) -> 10; floor would give 2 and 9."""
    assert threshold_distance(k, 1, gaussian=True) == (k, l2, 1)
    assert threshold_distance(k, 1, gaussian=False) == (k, k, 1)


@pytest.mark.parametrize("k", [8, 96])
def test_one_day_selection_sigma_is_sqrt_k_over_2rho_at_non_square_k(k: int) -> None:
    """The selection's sigma at rho 0.5 per vehicle-day is sqrt(K / (2 rho)) = sqrt K (2.83 at K 8, 9.80 at 96),
    and the stated rho is OpenDP's map at the true l2^2 = K (read from the float-count twin at sqrt K). With
    floor(sqrt K) the calibration finds sigma sqrt(floor(sqrt K)^2) = 2.0 (K 8) and states the same rho 0.5."""
    rho = 0.5
    cal = calibrate_selection(
        gaussian=True, k=k, days=1, budget=rho, delta=1e-6, min_per_day=1.0, domain_size=None
    )
    assert cal.scale == pytest.approx(math.sqrt(k / (2 * rho)), rel=1e-9)
    assert cal.cost_day <= rho and cal.cost_day == pytest.approx(rho, rel=1e-9)
    domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=float, nan=False))
    metric = dp.l02inf_distance(dp.absolute_distance(T=float))
    twin = dp.m.make_gaussian_threshold(domain, metric, scale=cal.scale, threshold=cal.threshold)
    assert cal.cost_day >= twin.map((k, math.sqrt(k), 1.0))[0] * (1 - 1e-12)


def test_window_l2_is_the_smallest_float_at_or_above_d_sqrt_k() -> None:
    for k, d in [(12, 9), (12, 3), (8, 31), (96, 31), (2, 7), (16, 5)]:
        l2 = window_l2(k, d)
        assert l2 * l2 >= d * d * k * (1 - 1e-15) and l2 == pytest.approx(d * math.sqrt(k), rel=1e-15)
        assert math.nextafter(l2, 0.0) ** 2 <= d * d * k * (1 + 1e-15)
    assert window_l2(16, 5) == 20.0  # square K: exact


@pytest.mark.parametrize(("k", "days"), [(12, 9), (12, 3), (8, 4), (96, 31), (16, 5)])
def test_gaussian_window_cost_is_d_squared_times_the_day(k: int, days: int) -> None:
    """Gaussian window rho = D^2 K / (2 sigma^2) = D^2 x the per-day rho (l2^2 = D^2 K exactly): 81 x the day at
    K 12, D 9 (the ceil gave 1024 / 12 = 85.3 x) and 9 x at K 12, D 3 (the ceil gave 121 / 12 = 10.08 x)."""
    cal = calibrate_selection(
        gaussian=True, k=k, days=days, budget=0.5, delta=1e-6, min_per_day=1.0, domain_size=None
    )
    assert cal.threshold >= days  # the window's map exists (threshold >= linf)
    assert cal.window_cost[0] == pytest.approx(days**2 * k / (2 * cal.scale**2), rel=1e-12)
    assert cal.window_cost[0] == pytest.approx(days**2 * cal.cost_day, rel=1e-9)
    ceil_l2 = math.ceil(days * math.sqrt(k))
    old = _threshold_measurement(cal.scale, int(cal.threshold), True).map((days * k, ceil_l2, days))
    assert cal.window_cost[1] == old[1]  # the delta does not depend on l2
    if ceil_l2**2 != days**2 * k:
        assert cal.window_cost[0] < old[0]


def test_float_twin_map_equals_the_integer_map_at_integer_distances() -> None:
    """The justification of reading the window from the float-count twin: both of OpenDP's maps give the same
    (rho, delta) at every integer distance (a grid of scales, thresholds and distances)."""
    domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=float, nan=False))
    metric = dp.l02inf_distance(dp.absolute_distance(T=float))
    for scale in (0.7, 2.83, 7.75, 31.0):
        for threshold in (3, 42, 150):
            twin = dp.m.make_gaussian_threshold(domain, metric, scale=scale, threshold=float(threshold))
            meas = _threshold_measurement(scale, threshold, True)
            for l0, l2, linf in [(8, 3, 1), (108, 32, 9), (36, 11, 3), (992, 176, 3)]:
                if linf > threshold:  # OpenDP's map needs threshold >= linf
                    continue
                assert meas.map((l0, l2, linf)) == twin.map((l0, float(l2), float(linf)))


CELLS = [0x8742D9D69FFFFFF, 0x8742D9D6BFFFFFF, 0x8742D9D68FFFFFF]


def test_release_states_rho_per_window_d_squared_times_the_day_at_k12_d3() -> None:
    """End to end (Gaussian, unknown domain, K 12 public, D 3): privacy.json's rho_per_window is 9 x the summed
    rho per day, for the queries (group privacy in rho) and the selection (OpenDP's map at l2 = 3 sqrt 12) alike.
    With ceil(3 sqrt 12) = 11 the selection's part was 121 / 12 of its day instead of 9."""
    rng = np.random.default_rng(0)
    rows = []
    for day in range(3):
        for v in range(60):
            for i, cell in enumerate(CELLS):
                s = float(np.clip(rng.normal(12 + 8 * i, 4), 0, 65))
                rows.append((cell, 9, dt.date(2021, 11, 15 + day), f"v{v}", 1, s, s))
    data = pl.DataFrame(rows, schema=CONTRIBUTION_SCHEMA, orient="row")
    cfg = HatReleaseConfig(
        hours=(9, 10), max_hats_per_vehicle_day=12, precision=9, epsilon_per_day=8.0, mechanism="gaussian"
    )
    p = _release_hats(data, cfg, 3, EXACT).privacy
    assert p["selection"]["method"] == "dp" and p["hats_released"] == 3
    per_day = p["rho_per_day"]
    assert p["rho_per_window"] == pytest.approx(9 * sum(per_day.values()), rel=1e-9)
    selection_day = per_day["selection"]
    assert p["rho_per_window"] < 9 * (sum(per_day.values()) - selection_day) + 121 / 12 * selection_day
