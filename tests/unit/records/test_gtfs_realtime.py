"""GTFS-realtime VehiclePositions snapshots and GeoParquet points as record inputs (issue 32)."""

from __future__ import annotations

import datetime as dt
import json
import zipfile
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pyproj
import pytest
import shapely
from google.transit import gtfs_realtime_pb2

from urbandp._records.gtfs_realtime import read_gtfs_realtime
from urbandp._records.readers import expand_inputs, scan_records
from urbandp._records.validation import ValidationOptions
from urbandp.errors import InputError
from urbandp.fleet._pipeline import load_records

T0 = 1_709_532_000  # 2024-03-04 06:00 UTC


def snapshot(header_time: int, *entities: dict[str, object]) -> bytes:
    """A FeedMessage; each entity dict may hold id, label, t, lat, lon, speed (m/s), or trip_update=True."""
    feed = gtfs_realtime_pb2.FeedMessage()
    feed.header.gtfs_realtime_version = "2.0"
    feed.header.timestamp = header_time
    for i, e in enumerate(entities):
        entity = feed.entity.add()
        entity.id = str(i)
        if e.get("trip_update"):
            entity.trip_update.trip.trip_id = "t1"
            continue
        vp = entity.vehicle
        if "id" in e:
            vp.vehicle.id = str(e["id"])
        if "label" in e:
            vp.vehicle.label = str(e["label"])
        if "t" in e:
            vp.timestamp = int(e["t"])  # type: ignore[call-overload]
        if "lat" in e:
            vp.position.latitude = float(e["lat"])  # type: ignore[arg-type]
            vp.position.longitude = float(e["lon"])  # type: ignore[arg-type]
            if "speed" in e:
                vp.position.speed = float(e["speed"])  # type: ignore[arg-type]
    return feed.SerializeToString()


def bus(vehicle: str, t: int, speed: float = 5.0) -> dict[str, object]:
    return {"id": vehicle, "t": t, "lat": 30.25, "lon": -97.75, "speed": speed}


def test_each_vehicle_position_is_one_record_with_its_fields(tmp_path: Path) -> None:
    path = tmp_path / "one.pb"
    path.write_bytes(
        snapshot(
            T0 + 30,
            bus("A", T0, speed=12.5),
            {"label": "bus 7", "t": T0, "lat": 30.5, "lon": -97.5, "speed": 2.0},  # no id: the label
            {"id": "C", "lat": 30.5, "lon": -97.5, "speed": 1.0},  # no timestamp: the header's
            {"lat": 30.5, "lon": -97.5, "t": T0},  # neither id nor label: missing_vehicle later
            {"id": "E", "t": T0},  # no position
            {"trip_update": True},  # not a position: not a record
        )
    )
    frame = read_gtfs_realtime(path)
    assert frame["vehicle"].to_list() == ["A", "bus 7", "C", None, "E"]
    utc = dt.datetime.fromtimestamp(T0, dt.UTC)
    assert frame["timestamp"].to_list() == [utc, utc, utc + dt.timedelta(seconds=30), utc, utc]
    assert frame["speed"].to_list() == [12.5 * 3.6, 2.0 * 3.6, 1.0 * 3.6, None, None]  # m/s read as km/h
    assert frame["latitude"].to_list()[:2] == [30.25, 30.5]  # exact in float32
    assert frame["latitude"][4] is None
    assert frame["__line"].to_list() == [1, 2, 3, 4, 5]
    assert frame["__record_ok"].all()


def test_repeats_across_snapshots_are_one_record_and_a_corrupt_snapshot_one_failed_record(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "feed"
    folder.mkdir()
    (folder / "0001.pb").write_bytes(snapshot(T0, bus("A", T0), bus("B", T0)))
    (folder / "0002.pb").write_bytes(b"\x0a\x05hello")  # cut short
    (folder / "0003.pb").write_bytes(snapshot(T0 + 30, bus("A", T0), bus("B", T0 + 20)))  # A repeats
    (folder / "0004.pb").write_bytes(b"")  # an empty download: no header
    (folder / "notes.txt").write_text("not a snapshot")
    frame = read_gtfs_realtime(folder)
    assert frame["vehicle"].to_list()[:2] == ["A", "B"]
    assert frame["__record_ok"].to_list() == [True, True, False, True, False]
    assert frame["vehicle"][2].startswith("corrupt GTFS-realtime snapshot 0002.pb: Error parsing message")
    assert frame["vehicle"][4] == "corrupt GTFS-realtime snapshot 0004.pb: missing required fields: header"
    assert frame["vehicle"][3] == "B"


def test_a_folder_of_snapshots_is_one_input_beside_its_tables(tmp_path: Path) -> None:
    folder = tmp_path / "feed"
    folder.mkdir()
    (folder / "a.pb").write_bytes(snapshot(T0, bus("A", T0)))
    (folder / "b.pb").write_bytes(snapshot(T0 + 30, bus("A", T0)))
    (folder / "more.csv").write_text(f"vehicle_id,timestamp,lat,lon,speed\nZ,{T0},30.2,-97.7,20\n")
    assert expand_inputs([folder]) == [folder / "more.csv", folder]
    lines, _, files = scan_records([folder], {"vehicle": "vehicle_id"})  # a --column map for the CSV only
    got = lines.collect().sort("source")
    assert got["vehicle"].to_list() == ["Z", "A"] and files[1] == folder


def test_archives_read_their_snapshot_members_and_refuse_what_holds_none(tmp_path: Path) -> None:
    good = tmp_path / "feed.zip"
    with zipfile.ZipFile(good, "w") as z:
        z.writestr("day/0002.pb", snapshot(T0 + 30, bus("A", T0), bus("B", T0 + 10)))
        z.writestr("day/0001.pb", snapshot(T0, bus("A", T0)))
        z.writestr("README", "ignored")
    assert read_gtfs_realtime(good)["vehicle"].to_list() == ["A", "B"]  # name order, then de-duplicated
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("trips.csv", "a,b\n")
    with pytest.raises(InputError, match=r"no GTFS-realtime snapshot \(.pb member\) in the archive"):
        read_gtfs_realtime(empty)
    broken = tmp_path / "broken.tar"
    broken.write_bytes(b"not a tar file at all" * 40)
    with pytest.raises(InputError, match="not a readable archive"):
        read_gtfs_realtime(broken)
    with pytest.raises(InputError, match=r"GTFS-realtime \.pb snapshots"):
        expand_inputs([tmp_path / "feed.zip", Path(__file__)])


def test_speeds_need_no_unit_flag_and_a_declared_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "one.pb"
    path.write_bytes(snapshot(T0, bus("A", T0, speed=10.0), bus("B", T0, speed=50.0)))
    loaded = load_records([path], options=ValidationOptions(latest_plausible=dt.datetime(2030, 1, 1)))
    assert loaded.clean["speed"].to_list() == [36.0]  # 50 m/s = 180 km/h: above the plausibility limit
    assert loaded.reasons["speed_above_maximum"] == 1
    with pytest.raises(InputError, match=r"^speed_unit m/s cannot apply to GTFS-realtime input"):
        load_records([path], options=ValidationOptions(speed_unit="m/s"))


def geoparquet(path: Path, geometries: list[object], crs: object = "absent") -> Path:
    """A GeoParquet 1.1 file: vehicle, timestamp, speed and a WKB geometry column with its ``geo`` metadata."""
    n = len(geometries)
    table = pa.table(
        {
            "vehicle": [f"V{i % 2}" for i in range(n)],
            "timestamp": [f"2024-03-04T06:{i:02d}:00" for i in range(n)],
            "speed": [20.0 + i for i in range(n)],
            "geometry": pa.array(shapely.to_wkb(np.array(geometries, dtype=object)), type=pa.binary()),
        }
    )
    column: dict[str, object] = {"encoding": "WKB", "geometry_types": ["Point"]}
    if crs != "absent":
        column["crs"] = crs
    geo = {"version": "1.1.0", "primary_column": "geometry", "columns": {"geometry": column}}
    pq.write_table(table.replace_schema_metadata({b"geo": json.dumps(geo).encode()}), path)
    return path


def test_geoparquet_points_become_latitude_and_longitude(tmp_path: Path) -> None:
    epsg4326 = {"id": {"authority": "EPSG", "code": 4326}, "name": "WGS 84"}
    unnamed = pyproj.CRS.from_epsg(4326).to_json_dict()  # PROJJSON of WGS 84 without its identifier
    del unnamed["id"]
    for crs in ("absent", epsg4326, unnamed):
        path = geoparquet(
            tmp_path / "points.parquet", [shapely.Point(-97.75, 30.25), None, shapely.Point(-97.5, 30.5)], crs
        )
        lines, _, _ = scan_records([path])
        got = lines.collect()
        assert got["latitude"].to_list()[::2] == [30.25, 30.5]
        assert got["longitude"].to_list()[::2] == [-97.75, -97.5]
        assert np.isnan(got["latitude"][1])  # a null geometry: missing_coordinates in validation
        loaded = load_records([path])
        assert loaded.reasons["missing_coordinates"] == 1 and loaded.clean.height == 2


def test_geoparquet_in_another_crs_or_not_points_is_refused_in_one_line(tmp_path: Path) -> None:
    mercator = {"id": {"authority": "EPSG", "code": 3857}, "name": "WGS 84 / Pseudo-Mercator"}
    path = geoparquet(tmp_path / "m.parquet", [shapely.Point(-10881000.0, 3535000.0)], mercator)
    with pytest.raises(InputError, match="geometry column 'geometry' is in EPSG:3857; urbandp reads WGS 84"):
        scan_records([path])
    unnamed = pyproj.CRS.from_epsg(3857).to_json_dict()
    del unnamed["id"]
    path = geoparquet(tmp_path / "m2.parquet", [shapely.Point(-10881000.0, 3535000.0)], unnamed)
    with pytest.raises(InputError, match="is in WGS 84 / Pseudo-Mercator; urbandp reads WGS 84"):
        scan_records([path])
    line = geoparquet(tmp_path / "l.parquet", [shapely.LineString([(0, 0), (1, 1)])])
    with pytest.raises(InputError, match="holds geometries that are not points"):
        scan_records([line])
    plain = tmp_path / "plain.parquet"
    pl.DataFrame({"vehicle": ["A"], "timestamp": ["2024-03-04T06:00:00"], "speed": [1.0]}).write_parquet(
        plain
    )
    with pytest.raises(InputError, match="latitude/longitude"):
        scan_records([plain])  # a plain Parquet without coordinates: as before


def test_an_empty_geoparquet_point_is_missing_coordinates(tmp_path: Path) -> None:
    path = geoparquet(tmp_path / "e.parquet", [shapely.Point(-97.75, 30.25), shapely.from_wkt("POINT EMPTY")])
    loaded = load_records([path])
    assert loaded.reasons["missing_coordinates"] == 1 and loaded.clean.height == 1
