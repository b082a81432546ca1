"""Issue 32, GIS-ready outputs: a fleet release folder holds its tables as GeoParquet and GeoJSON too, which GDAL
(pyogrio) opens as WGS 84 polygons, one per CSV row, each around its H3 cell; the CLI lists them."""

from __future__ import annotations

import json
from pathlib import Path

import h3
import polars as pl
import pyarrow.parquet as pq
import pytest
import shapely
from urbandp_process import run_urbandp

from urbandp._synth.fleet import generate_fleet, write_fleet

pyogrio = pytest.importorskip("pyogrio")
pytestmark = pytest.mark.system

TABLES = ("hat_speed", "hat_speeding")


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("gis")
    fleet = write_fleet(
        generate_fleet(vehicles=40, days=2, seed=5, records_per_vehicle_day=200), root / "f.parquet"
    )
    out = root / "rel"
    res = run_urbandp(
        "release", str(fleet), "--out", str(out), "--noise-scale", "100", "--neighbouring", "replace-one",
        "--selection", "public-threshold", "--queries", "speed,speeding", "--no-map",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    return out, res.stdout


def test_the_folder_lists_the_gis_files_and_the_cli_prints_them(release: tuple[Path, str]) -> None:
    out, stdout = release
    assert sorted(p.name for p in out.iterdir()) == [
        ".urbandp-output.json",
        "hat_speed.csv",
        "hat_speed.geojson",
        "hat_speed.parquet",
        "hat_speeding.csv",
        "hat_speeding.geojson",
        "hat_speeding.parquet",
        "privacy.json",
    ]
    for stem in TABLES:
        assert str(out / f"{stem}.parquet") in stdout and str(out / f"{stem}.geojson") in stdout


@pytest.mark.parametrize("stem", TABLES)
def test_geojson_opens_in_gdal_as_wgs84_polygons_around_the_cells(
    release: tuple[Path, str], stem: str
) -> None:
    out, _ = release
    csv = pl.read_csv(out / f"{stem}.csv")
    path = out / f"{stem}.geojson"
    info = pyogrio.read_info(path)
    assert info["driver"] == "GeoJSON" and info["crs"] == "EPSG:4326"
    assert info["geometry_type"] == "Polygon" and info["features"] == csv.height > 0
    _, table = pyogrio.read_arrow(path)
    assert table["h3_cell"].to_pylist() == csv["h3_cell"].to_list()
    value = csv.columns[3]  # mean_speed / vehicles_over_limit_per_day: the DP values, as in the CSV
    assert table[value].to_pylist() == pytest.approx(csv[value].to_list())
    for cell, geometry in zip(
        csv["h3_cell"], shapely.from_wkb(table["wkb_geometry"].to_numpy()), strict=True
    ):
        c = geometry.centroid
        assert h3.latlng_to_cell(c.y, c.x, h3.get_resolution(cell)) == cell


@pytest.mark.parametrize("stem", TABLES)
def test_geoparquet_is_1_1_with_wgs84_and_one_polygon_per_row(release: tuple[Path, str], stem: str) -> None:
    out, _ = release
    csv = pl.read_csv(out / f"{stem}.csv")
    table = pq.read_table(out / f"{stem}.parquet")
    geo = json.loads(table.schema.metadata[b"geo"])
    assert geo["version"] == "1.1.0" and geo["columns"]["geometry"]["crs"]["id"] == {
        "authority": "EPSG",
        "code": 4326,
    }
    assert table.num_rows == csv.height
    polygons = shapely.from_wkb(table["geometry"].to_numpy())
    assert set(shapely.get_type_id(polygons)) == {3}  # Polygon
    for cell, polygon in zip(table["h3_cell"].to_pylist(), polygons, strict=True):
        assert h3.latlng_to_cell(polygon.centroid.y, polygon.centroid.x, h3.get_resolution(cell)) == cell
    gpd = pytest.importorskip("geopandas")  # an independent GeoParquet reader (pyproj for the CRS)
    gdf = gpd.read_parquet(out / f"{stem}.parquet")
    assert gdf.crs.to_epsg() == 4326 and len(gdf) == csv.height


def test_geoparquet_opens_in_gdal_where_gdal_reads_parquet(release: tuple[Path, str]) -> None:
    if "Parquet" not in pyogrio.list_drivers():
        pytest.skip(f"this GDAL ({pyogrio.__gdal_version_string__}) was built without Arrow/Parquet")
    out, _ = release
    info = pyogrio.read_info(out / "hat_speed.parquet")
    assert info["crs"] == "EPSG:4326" and info["geometry_type"] == "Polygon"
    assert info["features"] == pl.read_csv(out / "hat_speed.csv").height
