"""urbandp._geo_outputs: H3 and grid cell polygons, GeoParquet 1.1 metadata, GeoJSON read back by GDAL (pyogrio)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import h3
import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
import shapely

from urbandp._geo_outputs import (
    GEOPARQUET_VERSION,
    h3_polygons,
    write_geo_pair,
    write_geojson,
    write_geoparquet,
)
from urbandp._geodesy import WGS84
from urbandp.sensing._grid import SquareGrid

pyogrio = pytest.importorskip("pyogrio")

CELLS = [h3.latlng_to_cell(21.17 + 0.01 * i, 72.83 + 0.02 * i, res) for i in range(4) for res in (7, 9)]


def _table() -> pl.DataFrame:
    cells = [*CELLS, CELLS[0]]  # a repeated cell (two slots of one cell)
    return pl.DataFrame(
        {
            "h3_cell": cells,
            "slot": [f"{i:02d}:00-{i + 1:02d}:00" for i in range(len(cells))],
            "mean_speed": [float(i) * 1.5 for i in range(len(cells) - 1)] + [float("nan")],
            "clamped": [i % 2 == 0 for i in range(len(cells))],
        }
    )


def test_h3_polygons_are_the_cells_boundaries_counter_clockwise() -> None:
    polygons = h3_polygons(CELLS)
    for cell, polygon in zip(CELLS, polygons, strict=True):
        boundary = h3.cell_to_boundary(cell)
        assert len(polygon.exterior.coords) == len(boundary) + 1  # closed ring
        assert {(round(x, 12), round(y, 12)) for x, y in polygon.exterior.coords} == {
            (round(lng, 12), round(lat, 12)) for lat, lng in boundary
        }
        assert polygon.exterior.is_ccw and polygon.is_valid
        c = polygon.centroid
        assert h3.latlng_to_cell(c.y, c.x, h3.get_resolution(cell)) == cell  # lon/lat, not lat/lon


def test_grid_cell_polygons_hold_their_centroid_and_measure_z_by_z() -> None:
    grid = SquareGrid(22.45, 88.30, 22.65, 88.47, 500.0)
    ids, lat, lon = grid.centroids()
    polygons = grid.cell_polygons(ids)
    assert len(polygons) == grid.n_cells
    inside = shapely.contains_xy(polygons, lon, lat)
    assert inside.all()
    c = shapely.centroid(polygons)
    assert np.array_equal(grid.cell_id(shapely.get_y(c), shapely.get_x(c)), ids)
    ring = shapely.get_coordinates(polygons[0])[:4]  # (lon, lat): the cell's corners, SW, SE, NE, NW
    xy = grid.to_metres(ring[:, 1], ring[:, 0])
    assert np.ptp(xy, axis=0) == pytest.approx([500.0, 500.0], rel=1e-9)
    _, _, sides = WGS84.inv(ring[:, 0], ring[:, 1], np.roll(ring[:, 0], -1), np.roll(ring[:, 1], -1))
    assert np.allclose(sides, 500.0, atol=0.005)  # on the ellipsoid, to 5 mm (the spherical formula: 2 m)
    assert all(p.exterior.is_ccw for p in polygons[:10])


def test_geoparquet_has_the_1_1_metadata_and_the_table(tmp_path: Path) -> None:
    frame = _table()
    polygons = h3_polygons(frame["h3_cell"])
    path = write_geoparquet(frame, polygons, tmp_path / "t.parquet")
    table = pq.read_table(path)
    geo = json.loads(table.schema.metadata[b"geo"])
    assert geo["version"] == GEOPARQUET_VERSION == "1.1.0" and geo["primary_column"] == "geometry"
    col = geo["columns"]["geometry"]
    assert col["encoding"] == "WKB" and col["geometry_types"] == ["Polygon"]
    assert col["orientation"] == "counterclockwise" and col["edges"] == "planar"
    assert col["bbox"] == pytest.approx(list(shapely.total_bounds(polygons)))
    pyproj = pytest.importorskip("pyproj")
    assert pyproj.CRS.from_json_dict(col["crs"]).to_epsg() == 4326
    assert col["crs"] == pyproj.CRS.from_epsg(4326).to_json_dict()  # PROJ's own EPSG:4326, not a copy by hand
    back = pl.from_arrow(table.drop_columns(["geometry"]))
    assert isinstance(back, pl.DataFrame)
    assert back.equals(frame)  # the same values, NaN included
    assert shapely.equals(shapely.from_wkb(table["geometry"].to_numpy()), polygons).all()


def test_geoparquet_reads_back_in_geopandas_as_wgs84(tmp_path: Path) -> None:
    gpd = pytest.importorskip("geopandas")
    frame = _table()
    write_geoparquet(frame, h3_polygons(frame["h3_cell"]), tmp_path / "t.parquet")
    gdf = gpd.read_parquet(tmp_path / "t.parquet")
    assert gdf.crs.to_epsg() == 4326 and len(gdf) == frame.height
    assert set(gdf.geom_type) == {"Polygon"}


def test_geojson_opens_in_gdal_with_wgs84_polygons_and_strict_values(tmp_path: Path) -> None:
    frame = _table()
    path = write_geojson(frame, h3_polygons(frame["h3_cell"]), tmp_path / "t.geojson")
    document = json.loads(path.read_text(), parse_constant=lambda t: pytest.fail(f"non-strict {t}"))
    assert "crs" not in document  # RFC 7946: WGS 84 lon/lat is implied
    assert document["features"][-1]["properties"]["mean_speed"] is None  # NaN -> null
    info = pyogrio.read_info(path)
    assert info["crs"] == "EPSG:4326" and info["geometry_type"] == "Polygon"
    assert info["features"] == frame.height
    assert list(info["fields"]) == frame.columns
    _, table = pyogrio.read_arrow(path)
    assert table["h3_cell"].to_pylist() == frame["h3_cell"].to_list()
    assert table["mean_speed"].to_pylist()[:-1] == frame["mean_speed"].to_list()[:-1]
    geoms = shapely.from_wkb(table["wkb_geometry"].to_numpy())
    for cell, g in zip(frame["h3_cell"], geoms, strict=True):
        c = g.centroid
        assert h3.latlng_to_cell(c.y, c.x, h3.get_resolution(cell)) == cell


def test_geoparquet_opens_in_gdal_where_gdal_has_its_parquet_driver(tmp_path: Path) -> None:
    if "Parquet" not in pyogrio.list_drivers():
        pytest.skip(f"this GDAL ({pyogrio.__gdal_version_string__}) was built without Arrow/Parquet")
    frame = _table()
    paths = write_geo_pair(frame, h3_polygons(frame["h3_cell"]), tmp_path, "t")
    info = pyogrio.read_info(paths[0])
    assert info["crs"] == "EPSG:4326" and info["geometry_type"] == "Polygon"
    assert info["features"] == frame.height


def test_rows_and_polygons_must_match(tmp_path: Path) -> None:
    frame = _table()
    with pytest.raises(ValueError, match="polygons for"):
        write_geojson(frame, h3_polygons(CELLS[:2]), tmp_path / "x.geojson")
    assert not math.isnan(frame["mean_speed"][0])
