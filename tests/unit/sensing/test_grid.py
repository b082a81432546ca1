"""Square grid and the paper's cell-id formula (section IV)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urbandp.sensing.grid import EARTH_RADIUS_M, SquareGrid

M_PER_DEG = EARTH_RADIUS_M * math.pi / 180.0


def _grid() -> SquareGrid:
    # 2.2 km wide and 1.1 km tall at latitude 0 (cos = 1) with 500 m cells: 5 columns x 3 rows
    return SquareGrid(0.0, 0.0, 1100.0 / M_PER_DEG, 2200.0 / M_PER_DEG, 500.0)


def test_dimensions_and_formula() -> None:
    g = _grid()
    assert (g.n_cols, g.n_rows, g.n_cells) == (5, 3, 15)
    # point at x = 1,260 m, y = 740 m: floor(1260/500) + floor(740/500) * 5 = 2 + 1 * 5 = 7
    lat, lon = 740.0 / M_PER_DEG, 1260.0 / M_PER_DEG
    assert g.cell_id(np.array([lat]), np.array([lon]))[0] == 7
    # the south-west corner is cell 0; the north-east corner falls in the last cell; outside is -1
    ids = g.cell_id(np.array([0.0, g.lat_max, 1.0]), np.array([0.0, g.lon_max, 0.0]))
    assert ids.tolist() == [0, 14, -1]


def test_centroids_map_to_their_own_cells() -> None:
    g = SquareGrid(22.45, 88.30, 22.65, 88.47, 750.0)
    ids, lat, lon = g.centroids()
    np.testing.assert_array_equal(g.cell_id(lat, lon), ids)


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1), st.floats(0, 1), st.sampled_from([100.0, 333.0, 1000.0]))
def test_points_inside_get_a_valid_id(fy: float, fx: float, z: float) -> None:
    g = SquareGrid(22.45, 88.30, 22.65, 88.47, z)
    lat = g.lat_min + fy * (g.lat_max - g.lat_min)
    lon = g.lon_min + fx * (g.lon_max - g.lon_min)
    i = int(g.cell_id(np.array([lat]), np.array([lon]))[0])
    assert 0 <= i < g.n_cells
    xy = g.to_metres(np.array([lat]), np.array([lon]))[0]
    col, row = i % g.n_cols, i // g.n_cols
    assert col == min(math.floor(xy[0] / z), g.n_cols - 1)
    assert row == min(math.floor(xy[1] / z), g.n_rows - 1)


def test_covering_and_rectangle_selection() -> None:
    lat = np.array([22.50, 22.55])
    lon = np.array([88.33, 88.40])
    g = SquareGrid.covering(lat, lon, 500.0)
    assert np.all(g.cell_id(lat, lon) >= 0)
    sel = g.cells_in_rectangle(22.50, 88.33, 22.55, 88.40)
    assert 0 < len(sel) < g.n_cells
    with pytest.raises(ValueError):
        SquareGrid(0, 0, 1, 1, 0.0)
