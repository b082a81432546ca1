"""The variance leak (section V-C), IDW and cross-validation."""

from __future__ import annotations

import numpy as np
import pytest

from urbandp.sensing._grid import SquareGrid
from urbandp.sensing._interpolation import KM, cross_validate, idw_predict, interpolate_windows
from urbandp.sensing._leakage import leakage
from urbandp.sensing._readings import Readings


def _route_readings(n: int = 120, seed: int = 0) -> Readings:
    """One vehicle driving an L-shaped route inside a 5 km box around Kolkata, values from a smooth field."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    lat = np.where(t < 0.5, 22.50 + 0.04 * t, 22.52)
    lon = np.where(t < 0.5, 88.33, 88.33 + 0.08 * (t - 0.5))
    value = 40 + 10 * np.sin(20 * lat) + 5 * np.cos(30 * lon) + rng.normal(0, 0.5, n)
    time = np.datetime64("2024-01-01T08:00") + (t * 50 * 60).astype("timedelta64[s]")
    return Readings(lat, lon, time.astype("datetime64[us]"), value)


def test_sigma2_reveals_route_and_noise_hides_it() -> None:
    r = _route_readings()
    grid = SquareGrid(22.49, 88.32, 22.55, 88.38, 400.0)
    res, counts = interpolate_windows(r, grid)
    assert counts == {"windows": 1, "windows_fitted": 1, "windows_skipped": 0}
    w = res[0]
    visited = np.zeros(grid.n_cells, bool)
    visited[grid.cell_id(r.lat, r.lon)] = True
    lk = leakage(w.sigma2_std, grid.centroids_metres() / KM, w.reading_xy_km, visited)
    assert lk.spearman_distance > 0.9
    assert lk.visited_recall > 0.8 > 5 * lk.visited_recall_chance
    # a map of pure noise recovers visited cells only at about the chance rate
    rng = np.random.default_rng(1)
    recalls = [
        leakage(
            rng.uniform(size=grid.n_cells), grid.centroids_metres() / KM, w.reading_xy_km, visited
        ).visited_recall
        for _ in range(200)
    ]
    # mean of a hypergeometric share = k / n_cells; 200 repetitions put the average within a few SE of it
    assert np.mean(recalls) == pytest.approx(lk.visited_recall_chance, abs=0.05)


def test_idw_basics() -> None:
    x = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    y = np.array([1.0, 3.0, 5.0])
    out = idw_predict(x, y, np.array([[1.0, 0.0], [0.5, 0.0], [100.0, 0.0]]))
    assert out[0] == pytest.approx(4.0)  # coincident readings: their mean
    assert out[1] == pytest.approx((1 + 3 + 5) / 3)  # equidistant: plain mean of all three
    assert 1.0 < out[2] < 5.0


def test_cross_validation_gp_beats_idw_on_smooth_field() -> None:
    r = _route_readings(150)
    grid = SquareGrid(22.49, 88.32, 22.55, 88.38, 400.0)
    cv = cross_validate(r, grid, folds=5)
    assert cv.windows == 1 and cv.held_out == 150
    assert cv.rmse_gp < cv.rmse_idw
    assert cv.rmse_gp < 1.5  # measurement noise sd is 0.5
