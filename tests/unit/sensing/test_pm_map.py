"""The DP PM2.5 map (issue 22): exact losses from OpenDP's maps, exact aggregates, unbiased means, shrinkage."""

from __future__ import annotations

import numpy as np
import pytest

from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp.sensing._grid import SquareGrid
from urbandp.sensing._interpolation import KM
from urbandp.sensing._pm_map_mechanism import (
    cell_aggregates,
    cell_means,
    measure_pm_map,
    plan_pm_map,
    shrink,
    smooth_window,
    window_means,
)
from urbandp.sensing._readings import Readings

BBOX = (22.50, 88.30, 22.52, 88.32)  # about 2.2 x 2.1 km: 9 cells of 800 m


def readings(values: list[float], cells: list[tuple[float, float]], hours: list[int]) -> Readings:
    lat = np.array([c[0] for c in cells])
    lon = np.array([c[1] for c in cells])
    t = np.array([np.datetime64("2023-09-15T00:00") + np.timedelta64(h * 60 + 5, "m") for h in hours])
    return Readings(lat, lon, t.astype("datetime64[us]"), np.array(values, dtype=float))


def test_plan_spends_epsilon_per_reading_split_evenly() -> None:
    plan = plan_pm_map(2.0, clip=250.0)
    # count: sensitivity 1 at epsilon 1 -> b = 1; centred sum: sensitivity 125 at epsilon 1 -> b = 125
    assert plan.count.scale == pytest.approx(1.0, rel=1e-12) and plan.total.scale == pytest.approx(
        125.0, rel=1e-12
    )
    loss = plan.loss_per_unit()
    assert loss.rho == 0 and loss.delta == 0 and 2.0 - 1e-9 <= loss.epsilon <= 2.0
    m3 = plan_pm_map(2.0, clip=250.0, readings_per_unit=3)  # a vehicle-window of 3 readings
    assert m3.count.scale == pytest.approx(3.0, rel=1e-12) and m3.total.scale == pytest.approx(
        375.0, rel=1e-12
    )


def test_aggregates_clip_centre_and_truncate_per_vehicle_window() -> None:
    grid = SquareGrid(*BBOX, 800.0)
    a, b = (22.501, 88.301), (22.519, 88.319)
    r = readings([10.0, 30.0, 400.0, 50.0], [a, a, b, a], [0, 0, 0, 1])
    windows = np.arange(
        np.datetime64("2023-09-15T00:00"), np.datetime64("2023-09-15T02:00"), np.timedelta64(60, "m")
    )
    agg = cell_aggregates(r, grid, windows, 60, clip=250.0)
    ca, cb = grid.cell_id(np.array([a[0], b[0]]), np.array([a[1], b[1]]))
    assert (
        agg.counts[0, ca] == 2 and agg.counts[0, cb] == 1 and agg.counts[1, ca] == 1 and agg.counts.sum() == 4
    )
    assert agg.centred_sums[0, ca] == (10 - 125) + (30 - 125)
    assert agg.centred_sums[0, cb] == 250 - 125  # 400 clipped to 250
    truncated = cell_aggregates(
        r, grid, windows, 60, 250.0, vehicle=np.array(["v", "v", "w", "v"]), readings_per_unit=1
    )
    assert truncated.counts[0, ca] == 1 and truncated.centred_sums[0, ca] == 10 - 125  # the first of v's two
    assert truncated.readings_dropped == 1
    # a reading's window is found by binary search over the public windows: an unsorted list would misplace it
    with pytest.raises(ValueError, match="sorted and distinct"):
        cell_aggregates(r, grid, windows[::-1], 60, clip=250.0)


def test_without_noise_the_cell_means_are_the_clipped_means() -> None:
    grid = SquareGrid(*BBOX, 800.0)
    rng = np.random.default_rng(1)
    cells = [(22.501 + 0.018 * rng.random(), 88.301 + 0.018 * rng.random()) for _ in range(200)]
    values = rng.gamma(4.0, 10.0, 200)
    r = readings(list(values), cells, [0] * 200)
    windows = np.array([np.datetime64("2023-09-15T00:00")])
    plan = plan_pm_map(1.0)
    noisy = measure_pm_map(
        plan,
        cell_aggregates(r, grid, windows, 60, plan.clip),
        ExactNoiseForTesting(acknowledge_not_private=True),
    )
    means, clear = cell_means(plan, noisy)
    ids = grid.cell_id(r.lat, r.lon)
    for c in np.unique(ids):
        if clear[0, c]:
            assert means[0, c] == pytest.approx(np.clip(values[ids == c], 0, 250).mean(), rel=1e-9)
    assert window_means(plan, noisy)[0] == pytest.approx(values.mean(), rel=1e-9)
    x = grid.centroids_metres() / KM
    assert np.all(np.isfinite(smooth_window(plan, noisy, 0, grid, x, "gp")))


def test_shrinkage_pulls_noisy_values_by_their_noise() -> None:
    truth = np.linspace(20, 60, 50)
    rng = np.random.default_rng(0)
    var = np.where(np.arange(50) % 2 == 0, 1.0, 400.0)
    noisy = truth + rng.normal(0, np.sqrt(var))
    out = shrink(noisy, var, float(truth.mean()))
    precise, vague = var == 1.0, var == 400.0
    # precise values barely move, vague ones are pulled toward the target, and the error falls
    assert np.abs(out - noisy)[precise].max() < 0.2 and np.abs(out - noisy)[vague].mean() > 3
    assert np.mean((out - truth) ** 2) < np.mean((noisy - truth) ** 2)


def test_noise_is_drawn_on_every_cell_including_empty_ones() -> None:
    grid = SquareGrid(*BBOX, 800.0)
    r = readings([20.0], [(22.501, 88.301)], [0])
    windows = np.array([np.datetime64("2023-09-15T00:00")])
    plan = plan_pm_map(1.0)
    agg = cell_aggregates(r, grid, windows, 60, plan.clip)
    noisy = measure_pm_map(plan, agg, OpenDPNoise())
    assert (noisy.counts != agg.counts).all() and (noisy.centred_sums != agg.centred_sums).all()


def test_truncation_keeps_at_most_m_per_vehicle_window_by_time_only() -> None:
    """At most M readings per vehicle-window, chosen from their times (and vehicle) only, whatever the input
    order; the stability under removing one reading is measured in test_pm_map_reading_loss."""
    from urbandp.sensing._pm_map_mechanism import truncate_vehicle_windows

    t = np.datetime64("2024-01-15T08:00") + np.arange(13).astype("timedelta64[m]")
    vehicle = np.array(["a"] * 10 + ["b"] * 3)
    window = np.zeros(13, dtype=np.int64)
    perm = np.random.default_rng(0).permutation(13)  # input order does not matter
    keep = np.empty(13, dtype=bool)
    keep[perm] = truncate_vehicle_windows(vehicle[perm], window[perm], t[perm].astype("datetime64[us]"), 3)
    assert keep[:10].sum() == 3 and (keep == truncate_vehicle_windows(vehicle, window, t, 3)).all()
    assert keep[10:].all()  # b has 3 <= M readings: all kept
    # a second window of a is its own unit
    window2 = np.array([0] * 5 + [1] * 5 + [0] * 3)
    kept2 = truncate_vehicle_windows(vehicle, window2, t.astype("datetime64[us]"), 2)
    assert kept2[:5].sum() == kept2[5:10].sum() == kept2[10:].sum() == 2


def test_vehicle_window_plan_scales_the_noise_with_m_and_states_vehicle_losses() -> None:
    """The sensitivities are M and M C/2 (L1, a unit's M readings spread over its window's cells): at epsilon 2
    and M = 10 the scales are 10 and 1250; a vehicle pays k x 2 a day and W x 2 over the release."""
    from urbandp.sensing._pm_map_mechanism import vehicle_losses
    from urbandp.sensing._readings import windows_per_day

    plan = plan_pm_map(2.0, 250.0, 10, "vehicle-window")
    assert plan.count_sensitivity == 10.0 and plan.sum_sensitivity == 1250.0
    assert plan.count.scale == pytest.approx(10.0, rel=1e-12) and plan.total.scale == pytest.approx(
        1250.0, rel=1e-12
    )
    assert 2.0 - 1e-9 <= plan.loss_per_unit().epsilon <= 2.0
    hourly = np.arange(
        np.datetime64("2024-01-15T20:00"), np.datetime64("2024-01-16T04:00"), np.timedelta64(60, "m")
    )
    assert windows_per_day(hourly, 60) == 4  # 20-24 h and 0-4 h: four windows on each day
    vl = vehicle_losses(plan, hourly, 60)
    assert vl.windows_per_day == 4 and vl.windows == 8
    assert vl.per_vehicle_day is not None and vl.per_vehicle_release is not None
    assert vl.per_vehicle_day.epsilon == pytest.approx(4 * plan.loss_per_unit().epsilon, rel=1e-12)
    assert vl.per_vehicle_release.epsilon == pytest.approx(8 * plan.loss_per_unit().epsilon, rel=1e-12)
    # a 36-hour window spans two or three days; each day it touches counts it
    long = np.array([np.datetime64("2024-01-15T00:00"), np.datetime64("2024-01-16T12:00")])
    assert windows_per_day(long, 36 * 60) == 2  # 2024-01-16 overlaps both
    reading = vehicle_losses(plan_pm_map(2.0), hourly, 60)
    assert reading.per_vehicle_window is None and reading.per_vehicle_day is None  # nothing public bounds m
