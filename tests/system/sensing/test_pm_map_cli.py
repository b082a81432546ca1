"""`urbandp sensing pm-map` on real Kolkata readings, and `dp-map`'s progress and timing (issue 22)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from urbandp_process import run_urbandp

BBOX = "22.45,88.30,22.65,88.47"


def test_pm_map_releases_noisy_cells_and_a_smoothed_map(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "pm"
    res = run_urbandp(
        "sensing", "pm-map", str(shared_data / "kolkata-pm25" / "Mobile_Spring.csv"), "--bbox", BBOX,
        "--start", "2023-04-25", "--end", "2023-04-26", "--window-minutes", "1440", "--epsilon", "4",
        "--out", str(out),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "pm_cells.csv",
        "pm_cells.geojson",
        "pm_cells.parquet",
        "pm_grid.csv",
        "pm_grid.geojson",
        "pm_grid.parquet",
        "privacy.json",
    ]
    p = json.loads((out / "privacy.json").read_text())
    assert p["differentially_private"] is True and p["privacy_unit"] == "one reading"
    assert 4.0 - 1e-9 <= p["epsilon_per_reading"] <= 4.0 and p["delta"] == 0.0
    assert p["count"]["scale"] == 0.5 and p["centred_sum"]["scale"] == 62.5  # 1/(eps/2), (250/2)/(eps/2)
    cells = pl.read_csv(out / "pm_cells.csv")
    grid = pl.read_csv(out / "pm_grid.csv")
    n_cells = p["grid"]["cells"]
    assert cells.height == grid.height == 2 * n_cells  # two daily windows, every cell (zeros perturbed)
    assert grid["pm"].is_between(0, 250).all() and grid["pm"].null_count() == 0
    _assert_grid_polygons_in_gdal(out / "pm_grid.geojson", grid, BBOX, p["grid"]["cell_metres"])
    # the exact counts stay with the owner
    report = json.loads((tmp_path / "owner_only" / "pm" / "input_report.json").read_text())
    assert report["readings_used"] > 0 and "readings_used" not in (out / "privacy.json").read_text()


def test_pm_map_needs_a_public_box_and_window(shared_data: Path, tmp_path: Path) -> None:
    data = str(shared_data / "kolkata-pm25" / "Mobile_Spring.csv")
    res = run_urbandp(
        "sensing",
        "pm-map",
        data,
        "--start",
        "2023-04-25",
        "--end",
        "2023-04-26",
        "--out",
        str(tmp_path / "a"),
    )
    assert res.returncode == 2 and "--bbox" in res.stderr and "Traceback" not in res.stderr
    res = run_urbandp(
        "sensing", "pm-map", data, "--bbox", BBOX, "--start", "2023-04-25", "--end", "2023-04-26",
        "--smoother", "kriging", "--out", str(tmp_path / "b"),
    )  # fmt: skip
    assert res.returncode == 2 and "--smoother must be one of gp, idw, none" in res.stderr


def test_dp_map_shows_progress_per_window_and_its_timing(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "dp"
    res = run_urbandp(
        "sensing", "dp-map", str(shared_data / "kolkata-pm25" / "Mobile_Spring.csv"), "--bbox", BBOX,
        "--start", "2023-04-25", "--end", "2023-04-27", "--cell-metres", "1000", "--epsilon", "0.05",
        "--utility-epsilons", "", "--out", str(out),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    # stderr is not a terminal here: progress comes as lines, at least one per stage when it completes
    assert "urbandp: dp-map: GP per window: 48/48 windows" in res.stderr
    assert "urbandp: dp-map: bounded Laplace (OpenDP): 72/72 windows" in res.stderr
    assert "dp-map timing (owner only): GP fits: 48 windows in" in res.stderr and "per window)" in res.stderr
    timing = pl.read_csv(tmp_path / "owner_only" / "dp" / "window_timing.csv")
    assert timing.filter(pl.col("stage") == "gp_fit").height == 48
    assert "window_timing.csv" not in {p.name for p in out.iterdir()}


def _assert_grid_polygons_in_gdal(path: Path, grid: pl.DataFrame, bbox: str, side: float) -> None:
    """Issue 32: the grid's GeoJSON opens in GDAL (pyogrio) as WGS 84 polygons, one per CSV row, each holding its
    cell centre and ``side`` by ``side`` metres in the grid's projection."""
    import numpy as np
    import pytest
    import shapely

    from urbandp.sensing._grid import SquareGrid

    pyogrio = pytest.importorskip("pyogrio")
    info = pyogrio.read_info(path)
    assert (
        info["crs"] == "EPSG:4326" and info["geometry_type"] == "Polygon" and info["features"] == grid.height
    )
    _, table = pyogrio.read_arrow(path)
    polygons = shapely.from_wkb(table["wkb_geometry"].to_numpy())
    assert shapely.contains_xy(polygons, grid["lon"].to_numpy(), grid["lat"].to_numpy()).all()
    box = SquareGrid(*(float(v) for v in bbox.split(",")), side)
    lon, lat = shapely.get_coordinates(polygons[0]).T
    xy = box.to_metres(lat, lon)
    assert np.ptp(xy, axis=0) == pytest.approx([side, side], rel=1e-9)
