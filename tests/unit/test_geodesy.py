"""Metric positions on the WGS 84 ellipsoid (urbandp._geodesy): a displacement of d metres lands d metres away."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from urbandp import _geodesy as geodesy


@pytest.mark.parametrize("lat", [0.0, 45.0, 60.0, -33.9])
def test_a_shift_of_d_metres_lands_d_metres_away(lat: float) -> None:
    rng = np.random.default_rng(3)
    east, north = rng.normal(0, 500, 200), rng.normal(0, 500, 200)
    lat0, lon0 = np.full(200, lat), np.full(200, 10.0)
    new_lat, new_lon = geodesy.shift(lat0, lon0, east, north)
    _, _, dist = geodesy.WGS84.inv(lon0, lat0, new_lon, new_lat)
    assert np.allclose(dist, np.hypot(east, north), atol=1e-6)  # metres, to the micrometre
    assert np.all(np.sign(new_lat - lat0) == np.sign(north))


def test_the_local_projection_round_trips_and_keeps_distances_from_its_centre() -> None:
    proj = geodesy.LocalProjection(44.98, -93.27)
    lat = np.array([44.98, 45.01, 44.90])
    lon = np.array([-93.27, -93.20, -93.40])
    xy = proj.to_metres(lat, lon)
    assert np.allclose(xy[0], 0.0, atol=1e-6)
    back_lat, back_lon = proj.to_degrees(xy)
    assert np.allclose(back_lat, lat, atol=1e-9) and np.allclose(back_lon, lon, atol=1e-9)
    _, _, dist = geodesy.WGS84.inv(np.full(3, -93.27), np.full(3, 44.98), lon, lat)
    assert np.allclose(np.hypot(xy[:, 0], xy[:, 1]), dist, atol=1e-3)


def test_the_box_projection_is_a_transverse_mercator_centred_on_the_box() -> None:
    """Centre at (0, 0); along the central meridian y is the meridian arc (scale 1) and x is 0; 25 km east of it a
    500 m east-west step measures 500 (1 + 25^2 / (2 * 6371^2)) = 500.0038 m in the plane."""
    proj = geodesy.box_projection(22.34, 88.12, 22.80, 88.60)
    xy = proj.to_metres(np.array([22.57, 22.34, 22.80]), np.array([88.36, 88.36, 88.36]))
    assert np.allclose(xy[0], 0.0, atol=1e-6)
    _, _, arc = geodesy.WGS84.inv(
        np.full(2, 88.36), np.full(2, 22.57), np.full(2, 88.36), np.array([22.34, 22.80])
    )
    assert np.allclose(xy[1:, 1], [-arc[0], arc[1]], atol=1e-6) and np.allclose(xy[1:, 0], 0.0, atol=1e-6)
    lat, lon = geodesy.shift(
        np.full(2, 22.57), np.full(2, 88.36), np.array([25_000.0, 25_500.0]), np.zeros(2)
    )
    step = np.diff(proj.to_metres(lat, lon)[:, 0])[0]
    assert step == pytest.approx(500.0 * (1 + 25.25**2 / (2 * 6371.0**2)), abs=2e-4)
    back_lat, back_lon = proj.to_degrees(proj.to_metres(lat, lon))
    assert np.allclose(back_lat, lat, atol=1e-10) and np.allclose(back_lon, lon, atol=1e-10)


HAND_CONSTANT = re.compile(r"111\.32|111_320|111320|6_371_008|6371008")
"""The metres (or km) per degree of the hand-written equirectangular projection and the mean earth radius."""
COS_LATITUDE = re.compile(r"cos\((?:np|math)\.radians\(")
"""A hand-written cos(latitude) scale (the code's trigonometry of angles uses no degrees-to-radians inside cos)."""


def test_no_metres_per_degree_constant_or_cos_latitude_outside_geodesy() -> None:
    """One metre conversion: the synthetic fleet's plane, the MPC client's cells, the PNG maps' and the plots'
    aspects all go through urbandp._geodesy (pyproj)."""
    src = Path(geodesy.__file__).resolve().parents[1]
    found = {
        str(path.relative_to(src))
        for path in src.rglob("*.py")
        if HAND_CONSTANT.search(text := path.read_text(encoding="utf-8")) or COS_LATITUDE.search(text)
    }
    assert found == {"urbandp/_geodesy.py"}


def test_the_synthetic_plane_is_the_generators_spherical_formula() -> None:
    """The synthetic cities keep their positions: lat0 + y / 111.32 km, lon0 + x / (111.32 km cos lat0)."""
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-7500, 7500, (2, 10_000))
    lat, lon = geodesy.PlanarProjection.synthetic_plane(21.17, 72.83).to_degrees(np.column_stack([x, y]))
    assert np.abs(lat - (21.17 + y / 111_320.0)).max() < 1e-12
    assert np.abs(lon - (72.83 + x / (111_320.0 * np.cos(np.radians(21.17))))).max() < 1e-12


@pytest.mark.parametrize("lat", [0.0, 21.17, 45.0, 60.0])
def test_the_degree_aspect_is_the_ellipsoids(lat: float) -> None:
    """Metres per degree of latitude over longitude: (1 - e^2) / (1 - e^2 sin^2 lat) / cos(lat) on WGS 84."""
    e2 = 0.00669437999014
    exact = (1 - e2) / (1 - e2 * np.sin(np.radians(lat)) ** 2) / np.cos(np.radians(lat))
    assert geodesy.degree_aspect(lat, 10.0) == pytest.approx(exact, rel=1e-6)
