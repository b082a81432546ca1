"""DP variance maps: the kernel-variance cap, the calibrated scale and the accounting are computed, not typed in."""

from __future__ import annotations

import numpy as np
import pytest

from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp.errors import InputError
from urbandp.sensing._bounded_laplace import LATTICE_EXPONENT, holohan_scale, lattice_epsilon
from urbandp.sensing._dp_map_mechanism import _release_dp_map, all_windows, fit_for_release, rmse_vs_epsilon
from urbandp.sensing._grid import SquareGrid
from urbandp.sensing._readings import Readings

EXACT = ExactNoiseForTesting(acknowledge_not_private=True)


def _readings() -> Readings:
    rng = np.random.default_rng(7)
    n = 80
    lat = 22.50 + rng.uniform(0, 0.03, n)
    lon = 88.33 + rng.uniform(0, 0.03, n)
    # two readings in the 10:00 window (fewer than min_readings), none at 09:00, 78 at 08:00
    time = np.array(["2024-01-01T08:10"] * 78 + ["2024-01-01T10:05"] * 2, dtype="datetime64[us]")
    value = 50 + 30 * np.sin(40 * lat) + rng.normal(0, 1, n)
    return Readings(lat, lon, time, value)


GRID = SquareGrid(22.49, 88.32, 22.54, 88.37, 1000.0)


def test_capped_variance_keeps_sigma2_in_the_domain() -> None:
    fitted = fit_for_release(_readings(), GRID, 0.5, "holohan", 60, "matern32", 3)
    assert len(fitted) == 1
    assert fitted[0].hyperparameters.variance <= 0.5 + 1e-12
    assert fitted[0].sigma2_std.max() <= 0.5 + 1e-12


def test_release_accounting_and_empty_windows() -> None:
    fitted = fit_for_release(_readings(), GRID, 1.0, "holohan", 60, "matern32", 3)
    rel = _release_dp_map(_readings(), GRID, 1.0, EXACT, fitted, all_windows(_readings(), 60), upper=2.0)
    g = GRID.n_cells
    assert [str(w.window) for w in rel.windows] == [
        "2024-01-01T08:00",
        "2024-01-01T09:00",
        "2024-01-01T10:00",
    ]
    # windows without a fit (0 or 2 readings) release the prior variance Delta in every cell
    np.testing.assert_array_equal(rel.windows[1].sigma2_dp, np.full(g, 1.0))
    b = holohan_scale(1.0, 1.0, 0.0, 2.0, lattice=2.0**LATTICE_EXPONENT)  # draws on the 2^-40 lattice
    assert b == pytest.approx(1.413342697738699, rel=1e-10)
    assert b > holohan_scale(1.0, 1.0, 0.0, 2.0)  # the lattice slack costs a (tiny) larger scale
    eps_cell = lattice_epsilon(b, 1.0, 0.0, 2.0, 2.0**LATTICE_EXPONENT)
    assert eps_cell <= 1.0
    assert all(w.scale == b for w in rel.windows)
    assert [e.epsilon for e in rel.ledger.entries] == [g * eps_cell] * 3
    assert rel.ledger.epsilon_spent == pytest.approx(3 * g * eps_cell, rel=1e-12)
    assert rel.ledger.epsilon_spent <= 3 * g


def test_paper_version_is_labelled_and_uses_data_bounds() -> None:
    fitted = fit_for_release(_readings(), GRID, 1.0, "paper", 60, "matern32", 3)
    rel = _release_dp_map(_readings(), GRID, 1.0, OpenDPNoise(), fitted, np.array([]), calibration="paper")
    assert rel.ledger.entries == []  # NOT DP: nothing charged (privacy.json says why)
    w = rel.windows[0]
    assert w.scale == 1.0 and w.upper == pytest.approx(float(w.sigma2_std.max()))
    assert np.all((w.sigma2_dp >= 0) & (w.sigma2_dp <= w.upper))


def test_rmse_falls_with_epsilon() -> None:
    fitted = fit_for_release(_readings(), GRID, 1.0, "holohan", 60, "matern32", 3)
    rows = rmse_vs_epsilon(fitted, [0.5, 1.0, 10.0])
    rmse = [r["rmse_std"] for r in rows]
    assert rmse[0] > rmse[1] > rmse[2] > 0


def test_plan_prices_the_release_before_noise() -> None:
    """3 windows x 169 cells at epsilon 0.05 per cell on [0, 1] with Delta = 1: Holohan's factor is 1 there, so
    b = 20, each cell costs exactly 0.05, a window 8.45 and the release 25.35; a draw lands in [0, 1] from the
    bound with probability (1 - exp(-1/20)) / 2."""
    import math

    from urbandp.sensing._dp_map_mechanism import plan_dp_map

    plan = plan_dp_map(3, 169, 0.05)
    assert plan.scale == pytest.approx(20.0, rel=1e-9)
    assert plan.epsilon_per_window_map == pytest.approx(8.45, rel=1e-9)
    assert plan.epsilon_total == pytest.approx(25.35, rel=1e-9)
    assert plan.acceptance_min == pytest.approx((1 - math.exp(-1 / plan.scale)) / 2, rel=1e-12)
    plan.check()  # meaningful noise, bounded work (the cap is the session's: tests/unit/privacy)
    tight = plan_dp_map(3, 169, 0.05, delta=1e-6)  # 169 cells of 0.05 composed optimally at 1e-6
    assert tight.epsilon_per_window_map < 8.45 and tight.basic_per_window_map == pytest.approx(8.45)
    assert tight.loss_per_reading().delta == 1e-6
    assert tight.epsilon_replace_one < 2 * tight.epsilon_per_window_map


@pytest.mark.parametrize("epsilon", [1e-300, 1e-6, 1e-3])
def test_meaningless_epsilon_refused_without_running_the_calibration(epsilon: float) -> None:
    from urbandp.sensing._bounded_laplace import check_meaningful
    from urbandp.sensing._dp_map_mechanism import plan_dp_map

    with pytest.raises(ValueError, match="practically uniform"):
        check_meaningful(epsilon, 1.0, 0.0, 1.0)
    with pytest.raises(InputError, match="practically uniform"):
        plan_dp_map(1, 10, epsilon)
    check_meaningful(0.003, 1.0, 0.0, 1.0)  # one draw in ~667 lands: allowed


def test_unbounded_work_is_refused_before_the_composition() -> None:
    """A year of one-minute windows over 235,000 cells: refused at once (the limit on the sampler's draws), not
    after composing W x G = 1.2e11 cells (that allocated 213 GiB: MemoryError, exit 70 on the command line)."""
    from urbandp.errors import InvalidParameterError
    from urbandp.sensing._dp_map_mechanism import plan_dp_map

    with pytest.raises(
        InvalidParameterError, match=r"^525600 windows x 235000 cells need about 3\.91e\+11 noise"
    ):
        plan_dp_map(525_600, 235_000, 1.0, delta=1e-6)


def test_public_windows_cover_the_interval_including_empty_ones() -> None:
    import numpy as np

    from urbandp.sensing._dp_map_mechanism import public_windows
    from urbandp.sensing._options import parse_window

    w = public_windows(np.datetime64("2024-01-15T08:30"), np.datetime64("2024-01-15T11:00"), 60)
    assert [str(x) for x in w] == ["2024-01-15T08:30", "2024-01-15T09:30", "2024-01-15T10:30"]
    with pytest.raises(InputError):  # an empty window is refused where start and end are read
        parse_window("2024-01-15T08:00", "2024-01-15T08:00")
