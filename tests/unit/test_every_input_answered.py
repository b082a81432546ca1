"""Every input answered, in the library (issue 40's sweep): each value below was an internal error (exit 70), a hang,
accepted although it misreads the data, or published a non-finite number. Each is now refused with the project's
error naming the parameter, before any record is noised or any file written. The command-line side of the same
cases (one line, exit 2, nothing written) is in the generated sweep of the system tests."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

import h3
import numpy as np
import polars as pl
import pytest

from urbandp.errors import InputDataError, InputError, InvalidParameterError

FEED = Path(__file__).resolve().parents[1] / "fixtures" / "gtfs-mini-schedule"
BOX = (22.49, 88.32, 22.60, 88.44)
WED = dt.date(2024, 1, 10)  # a service day of the fixture feed
DAY = {"start": "2024-01-15", "end": "2024-01-15"}


def _refused(call: Any, *parameters: str, kind: type[Exception] = InvalidParameterError) -> Exception:
    """``call()`` raises ``kind`` listing (at least) ``parameters``; returns the error."""
    with pytest.raises(kind) as caught:
        call()
    err = caught.value
    if parameters:
        assert set(parameters) <= set(getattr(err, "parameters", ())), (err, getattr(err, "parameters", ()))
    return err


# ------------------------------------------------------------------------------------------------------ sensing


@pytest.mark.parametrize(
    "box",
    [(22.45, 88.30, 22.65, float("inf")), (-91.0, 0.0, 91.0, 1.0), (22.0, -181.0, 23.0, 88.0)],
)
def test_a_box_off_the_globe_is_refused_naming_bbox(box: tuple[float, ...]) -> None:
    from urbandp.sensing._grid import SquareGrid
    from urbandp.sensing._options import DpMapOptions, PmMapOptions

    err = _refused(lambda: DpMapOptions(bbox=box, epsilon=1.0), "bbox")
    assert "latitudes in [-90, 90] and longitudes in [-180, 180]" in str(err)
    _refused(lambda: PmMapOptions(bbox=box, **DAY), "bbox")
    _refused(lambda: SquareGrid(*box, 500.0), "bbox")


def test_a_window_of_millennia_is_refused_before_any_window_is_listed() -> None:
    from urbandp.sensing._options import MAX_CELL_WINDOWS, DpMapOptions, PmMapOptions

    far = {"start": "0001-01-01", "end": "9999-12-31"}
    err = _refused(lambda: DpMapOptions(bbox=BOX, **far), "start", "end", "window_minutes")
    assert "87,649,417 windows" in str(err) and f"more than {MAX_CELL_WINDOWS:,}" in str(err)
    _refused(lambda: PmMapOptions(bbox=BOX, **far), "start", "end")
    # the largest span admitted: MAX_CELL_WINDOWS windows of a day (the first may start before start)
    PmMapOptions(bbox=BOX, start="2024-01-01", end="2024-01-31", window_minutes=1)


@pytest.mark.parametrize("cell_metres", [1e9, 1e8])
def test_a_cell_larger_than_the_globe_allows_is_refused_naming_cell_metres(cell_metres: float) -> None:
    from urbandp.sensing._grid import SquareGrid

    err = _refused(lambda: SquareGrid(*BOX, cell_metres), "cell_metres")
    assert "off the globe" in str(err)


def test_a_grid_around_the_readings_padded_off_the_globe_is_refused_naming_cell_metres() -> None:
    from urbandp.sensing._grid import SquareGrid

    lat, lon = np.array([22.5, 22.6]), np.array([88.3, 88.4])
    err = _refused(lambda: SquareGrid.covering(lat, lon, 1e9), "cell_metres")
    assert "padded by 0.5 cell reaches off the globe" in str(err)
    assert SquareGrid.covering(lat, lon, 500.0).n_cells > 1


def test_a_large_cell_that_stays_on_the_globe_gives_finite_centres() -> None:
    from urbandp.sensing._grid import SquareGrid

    grid = SquareGrid(*BOX, 1e6)
    ids, lat, lon = grid.centroids()
    assert ids.tolist() == [0] and np.isfinite(lat).all() and np.isfinite(lon).all()


@pytest.mark.parametrize("steepness", [1e-300, 1e-4, 1e4])
def test_a_steepness_outside_its_bounds_is_refused(steepness: float) -> None:
    from urbandp.sensing._options import QueryOptions

    err = _refused(
        lambda: QueryOptions(rect=BOX, sigma2_min=0.0, sigma2_max=900.0, steepness=steepness), "steepness"
    )
    assert ">= 0.001 and <= 1000" in str(err)


@pytest.mark.parametrize("rho", [1e-300, -1e-300, 1e4])
def test_a_rho_outside_its_bounds_is_refused(rho: float) -> None:
    from urbandp.sensing._options import QueryOptions

    _refused(lambda: QueryOptions(rect=BOX, sigma2_min=0.0, sigma2_max=900.0, rho=rho), "rho")


def test_a_sensitivity_that_underflows_to_zero_is_refused_not_an_internal_error() -> None:
    from urbandp._privacy.noise import OpenDPNoise
    from urbandp.sensing._queries import QueryResult, privatize_error

    result = QueryResult(3.0, 0.5, 8, True)
    for steepness, sigma2_max in ((1e-300, 900.0), (1e-3, 1e-320)):
        err = _refused(
            lambda s=steepness, m=sigma2_max: privatize_error(result, "count", 1.0, 0.0, m, OpenDPNoise(), s),
            "steepness",
            "sigma2_max",
        )
        assert "not a finite number > 0" in str(err)


def test_a_grid_window_of_nan_is_refused_not_answered_with_a_dp_label(tmp_path: Path) -> None:
    from urbandp._session import Session
    from urbandp.sensing._options import QueryOptions
    from urbandp.sensing._query_release import run_sensing_query

    grid = tmp_path / "grid.csv"
    rows = [f"{i},22.5{i},88.3{i},2023-10-09T11:00,{'nan' if i < 4 else 40 + i},9" for i in range(8)]
    grid.write_text("cell_id,lat,lon,window,mu,sigma2\n" + "\n".join(rows) + "\n")
    options = QueryOptions(rect=(22.40, 88.20, 22.70, 88.50), sigma2_min=0.0, sigma2_max=900.0)
    err = _refused(lambda: run_sensing_query(grid, options, Session()), "rect", kind=InputDataError)
    assert "4 of 8 cells of window 2023-10-09T11:00 in rect have a missing or non-finite mu" in str(err)


# ------------------------------------------------------------------------------------------------------- counts


def test_a_noise_scale_that_overflows_the_counts_is_refused() -> None:
    from urbandp.counts._options import MAX_NOISE_SCALE, CountsReleaseSpec

    base: dict[str, Any] = {"domain": "domain.json", "unit": "event", "epsilon": None}
    err = _refused(lambda: CountsReleaseSpec(**base, noise_scale=1e300), "noise_scale")
    assert "64-bit integers" in str(err)
    assert CountsReleaseSpec(**base, noise_scale=MAX_NOISE_SCALE).noise_scale == MAX_NOISE_SCALE


# -------------------------------------------------------------------------------------------------------- fleet


def test_k_beyond_what_opendp_takes_is_refused_naming_it() -> None:
    from urbandp.fleet._options import MAX_HATS_PER_VEHICLE_DAY, HatReleaseConfig

    for k in (10**23, 2**32, MAX_HATS_PER_VEHICLE_DAY + 1):
        err = _refused(
            lambda k=k: HatReleaseConfig(**{"epsilon_per_day": 4.0, "max_hats_per_vehicle_day": k}),
            "max_hats_per_vehicle_day",
            kind=InputError,
        )
        assert f"between 1 and {MAX_HATS_PER_VEHICLE_DAY:,}" in str(err)
    cfg = HatReleaseConfig(**{"epsilon_per_day": 4.0, "max_hats_per_vehicle_day": MAX_HATS_PER_VEHICLE_DAY})
    assert cfg.max_hats_per_vehicle_day == MAX_HATS_PER_VEHICLE_DAY


def test_a_speed_clip_near_zero_is_refused() -> None:
    from urbandp.fleet._options import HatReleaseConfig

    err = _refused(lambda: HatReleaseConfig(**{"epsilon_per_day": 4.0, "speed_max": 1e-300}), kind=InputError)
    assert str(err).startswith(
        "speed_max must be a finite number >= 1 and <= 500 (the noise is calibrated to U"
    )
    assert HatReleaseConfig(**{"epsilon_per_day": 4.0, "speed_max": 1.0}).speed_max == 1.0


@pytest.mark.parametrize("table", [True, False])
def test_a_file_value_of_the_wrong_type_is_refused_even_when_the_flag_replaces_it(
    table: bool, tmp_path: Path
) -> None:
    from urbandp.fleet._options_input import configure

    config = tmp_path / "c.toml"
    config.write_text(("[release]\n" if table else "") + "epsilon_per_day = [1, 2]\n")
    err = _refused(lambda: configure({"epsilon_per_day": 10.0, "config": config}), kind=InputError)
    where = f"{config} [release]" if table else f"{config}"  # options outside a table are the release's
    assert str(err).startswith(f"epsilon_per_day in {where} = [1, 2] is not a value")
    # a well-typed value the flag replaces is fine, and so is the other one of the pair (B, epsilon per day)
    for file in ("epsilon_per_day = 3.0", "noise_scale = 5.0"):
        config.write_text(f"[release]\n{file}\n")
        cfg, _, _, _ = configure({"epsilon_per_day": 10.0, "config": config})
        assert cfg.epsilon_per_day == 10.0 and cfg.noise_scale is None


# ------------------------------------------------------------------------------------------------ public domains


def _within(seconds: float, call: Any, fifo: Path) -> BaseException | None:
    """What ``call()`` raised, run in a daemon thread; fails if it is still running after ``seconds`` (blocked
    on the pipe), after opening the pipe for writing so that the blocked reader ends."""
    import threading

    raised: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            raised.append(None)
        except BaseException as err:
            raised.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the blocked reader gets end-of-file
        thread.join(10)
        pytest.fail("blocked reading the pipe")
    return raised[0]


def test_a_pipe_or_a_device_is_never_read_as_a_domain(tmp_path: Path) -> None:
    from urbandp.fleet._domain_files import domain_from_cells, domain_from_geojson, domain_from_gtfs

    fifo = tmp_path / "routes.geojson"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes
    for call in (
        lambda: domain_from_geojson(fifo, 7),
        lambda: domain_from_cells(fifo, 7),
        lambda: domain_from_gtfs(fifo, 7, 60, (9, 21), [WED]),
        lambda: domain_from_gtfs(Path("/dev/null"), 7, 60, (9, 21), [WED]),  # a device, read as empty
    ):
        err = _within(10, call, fifo)
        assert isinstance(err, InputDataError) and "not a regular file" in str(err), err


def test_a_domain_file_above_the_size_cap_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urbandp._records import gtfs_schedule
    from urbandp.fleet import _domain_files as domain

    path = tmp_path / "cells.txt"
    path.write_text("872830828ffffff\n" * 10)
    monkeypatch.setattr(gtfs_schedule, "MAX_DOMAIN_FILE_BYTES", 100)
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("read"))
    err = _refused(lambda: domain.domain_from_cells(path, 7), kind=InputDataError)
    assert "160 bytes, more than the 100" in str(err)


def test_a_gtfs_table_above_the_row_cap_is_refused_before_it_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urbandp._records import gtfs_schedule
    from urbandp.fleet import _domain_files as domain

    feed = tmp_path / "feed"
    shutil.copytree(FEED, feed)
    rows = len((feed / "stop_times.txt").read_text().splitlines()) - 1
    monkeypatch.setattr(gtfs_schedule, "MAX_GTFS_ROWS", rows - 1)
    monkeypatch.setattr(pl, "read_csv", lambda *a, **k: pytest.fail("parsed"))
    err = _refused(lambda: domain.domain_from_gtfs(feed, 7, 60, (9, 21), [WED]), kind=InputDataError)
    assert f"stop_times.txt holds {rows:,} rows, more than {rows - 1:,}" in str(err)
    archive = tmp_path / "feed.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(feed.glob("*.txt")):
            z.write(p, p.name)
    _refused(lambda: domain.domain_from_gtfs(archive, 7, 60, (9, 21), [WED]), kind=InputDataError)
    monkeypatch.setattr(gtfs_schedule, "MAX_GTFS_ROWS", 10**6)
    with zipfile.ZipFile(
        archive, "a", zipfile.ZIP_DEFLATED
    ) as z:  # 200 kB that deflate to a few hundred bytes
        z.writestr(
            "frequencies.txt",
            "trip_id,start_time,end_time,headway_secs\n" + "x,09:00:00,10:00:00,600\n" * 8_000,
        )
    cap = archive.stat().st_size + 1  # the zip is read; its member would not be
    monkeypatch.setattr(gtfs_schedule, "MAX_DOMAIN_FILE_BYTES", cap)
    err = _refused(lambda: domain.domain_from_gtfs(archive, 7, 60, (9, 21), [WED]), kind=InputDataError)
    assert f"frequencies.txt holds 192,041 bytes uncompressed, more than the {cap:,}" in str(err)


@pytest.mark.parametrize(
    "ring",
    [
        [[-180, -85], [180, -85], [180, 85], [-180, 85], [-180, -85]],  # the world, across the antimeridian
        [[-170, -60], [170, -60], [170, 60], [-170, 60], [-170, -60]],
        [[60, 10], [100, 10], [100, 40], [60, 40], [60, 10]],  # a subcontinent
    ],
)
def test_a_region_sized_polygon_is_refused_before_h3_fills_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ring: list[list[int]]
) -> None:
    from urbandp.fleet import _domain_files as domain

    path = tmp_path / "region.geojson"
    path.write_text(json.dumps({"type": "Polygon", "coordinates": [ring]}))
    monkeypatch.setattr(domain.h3, "h3shape_to_cells", lambda *a: pytest.fail("filled"))
    err = _refused(lambda: domain.domain_from_geojson(path, 7), "resolution")
    assert "H3 cells at resolution 7, more than 2,000,000" in str(err)


def test_a_city_polygon_is_still_filled(tmp_path: Path) -> None:
    from urbandp.fleet._domain_files import domain_from_geojson

    ring = [[72.78, 21.15], [72.82, 21.15], [72.82, 21.19], [72.78, 21.19], [72.78, 21.15]]
    path = tmp_path / "city.geojson"
    path.write_text(json.dumps({"type": "Polygon", "coordinates": [ring]}))
    assert 3 <= domain_from_geojson(path, 7).cells.len() <= 20  # about 18 km^2 of 5.2 km^2 cells


def _route(swap: bool, tmp_path: Path) -> Any:
    from urbandp.fleet._domain_files import domain_from_geojson

    line = [(21.17, 72.78), (21.17, 72.84), (21.21, 72.84)]  # (lat, lon) in Surat
    coords = [[la, lo] if swap else [lo, la] for la, lo in line]
    path = tmp_path / ("swapped.geojson" if swap else "route.geojson")
    path.write_text(json.dumps({"type": "LineString", "coordinates": coords}))
    return domain_from_geojson(path, 8), line


def test_a_route_domain_with_latitude_and_longitude_swapped_is_refused(tmp_path: Path) -> None:
    from urbandp.fleet._domain import domain_grid, restrict_to_domain

    swapped, line = _route(True, tmp_path)
    right, _ = _route(False, tmp_path)
    cells = [h3.str_to_int(h3.latlng_to_cell(la, lo, 8)) for la, lo in line]
    records = pl.DataFrame(
        {"cell": cells, "slot": [9, 9, 10], "day": [0, 0, 0], "n_records": [40, 30, 30]},
        schema={"cell": pl.UInt64, "slot": pl.Int16, "day": pl.Int32, "n_records": pl.Int64},
    )
    slots = list(range(9, 21))
    err = _refused(
        lambda: restrict_to_domain(records, domain_grid(swapped, slots), swapped),
        "domain_geojson",
        kind=InputError,
    )
    assert "latitude and longitude swapped" in str(err)
    kept, dropped = restrict_to_domain(records, domain_grid(right, slots), right)
    assert (kept.height, dropped) == (3, 0)
    # records mostly off a right domain, elsewhere: dropped and counted, not refused
    far = records.with_columns(
        pl.lit(h3.str_to_int(h3.latlng_to_cell(23.0, 72.6, 8))).cast(pl.UInt64).alias("cell")
    )
    assert restrict_to_domain(far, domain_grid(right, slots), right)[1] == 100


# ------------------------------------------------------------------------------------------------------ records


@pytest.mark.parametrize(
    ("columns", "mapping", "said"),
    [
        (["license_plate", "observationDateTime", "location", "speed"], {"latitude": "speed"}, "is not used"),
        (["vehicle_id", "time", "lat", "lon", "speed"], {"latitude": "speed"}, "as latitude and as speed"),
        (["vehicle_id", "time", "lat", "lon", "speed"], {"vehicle": "lat"}, "as vehicle and as latitude"),
        (["vehicle_id", "time", "lat", "lon", "speed"], {"timestamp": "vehicle_id"}, "as vehicle and as"),
    ],
)
def test_a_column_read_for_two_roles_or_a_mapping_left_unused_is_refused(
    columns: list[str], mapping: dict[str, str], said: str
) -> None:
    from urbandp._records.schema import ColumnMapping

    err = _refused(lambda: ColumnMapping.resolve(columns, mapping), "column", kind=InputError)
    assert said in str(err)
    found = ColumnMapping.resolve(["bus", "time", "lat", "lon", "speed"], {"vehicle": "bus"})
    assert (found.latitude, found.longitude) == ("lat", "lon")


def test_a_latin1_json_lines_file_is_refused_as_not_utf8_from_its_first_line(tmp_path: Path) -> None:
    from urbandp._records.readers import read_json_lines

    record = {
        "license_plate": "GJ05 \u00e9",
        "observationDateTime": "2021-11-15T09:00:00+05:30",
        "location": {"coordinates": [72.8, 21.2]},
        "speed": 20,
    }
    path = tmp_path / "fleet.jsonl"
    path.write_bytes(((json.dumps(record, ensure_ascii=False) + "\n") * 3).encode("latin-1"))
    err = _refused(lambda: read_json_lines(path), kind=InputError)
    assert "line 1 is not UTF-8 text" in str(err)


# ------------------------------------------------------------------------------------------------------- survey


def test_escape_refuses_polygons_without_an_area_or_away_from_the_points(tmp_path: Path) -> None:
    from urbandp.survey._escape import load_polygons, polygon_escape

    bad = tmp_path / "bad.geojson"
    bad.write_text(json.dumps({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [0, 0], [0, 0]]]}))
    assert "not a valid polygon" in str(_refused(lambda: load_polygons(bad), kind=InputError))
    line = tmp_path / "line.geojson"
    line.write_text(json.dumps({"type": "LineString", "coordinates": [[0, 0], [1, 1]]}))
    assert "not a Polygon" in str(_refused(lambda: load_polygons(line), kind=InputError))
    square = tmp_path / "square.geojson"
    square.write_text(
        json.dumps({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]})
    )
    polygons = load_polygons(square)
    x, y = np.array([5.0, 5.5]), np.array([5.0, 5.5])
    with np.errstate(all="raise"):
        err = _refused(lambda: polygon_escape(x, y, polygons, 0.01, runs=2), kind=InputError)
    assert "no point lies inside" in str(err)
    inside = polygon_escape(np.array([0.5, 0.6]), np.array([0.5, 0.4]), polygons, 1e-6, runs=2)
    assert (inside.escape_share, inside.unchanged_block_share) == (0.0, 1.0)
