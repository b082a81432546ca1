"""Public domains from a cell list, a GeoJSON of routes and a GTFS feed (issue 33): cells compared with H3 walked
directly along the lines, and the schedule of the synthetic feed tests/fixtures/gtfs-mini-schedule (README.md there
gives each expected HAT by hand)."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import shutil
import zipfile
from pathlib import Path

import h3
import polars as pl
import pytest

from urbandp.errors import InputDataError
from urbandp.fleet._domain_files import domain_from_cells, domain_from_geojson, domain_from_gtfs

FEED = Path(__file__).resolve().parents[2] / "fixtures" / "gtfs-mini-schedule"
RES = 7
E1, E2, E3 = (30.2672, -97.7800), (30.2672, -97.7400), (30.2672, -97.7000)
N1, N2, N3 = (30.2400, -97.7431), (30.2800, -97.7431), (30.3200, -97.7431)
X1, X2, X3 = (30.2000, -97.8000), (30.2200, -97.7700), (30.2400, -97.7400)
WED, FRI, SAT, HOLIDAY, TUE = (dt.date(2024, 1, d) for d in (10, 12, 13, 15, 16))


def walked(*points: tuple[float, float], res: int = RES) -> set[int]:
    """Cells of a polyline by H3 directly, every metre or so along each straight (lat/lon) segment."""
    cells: set[int] = set()
    for (a, b), (c, d) in itertools.pairwise(points):
        n = max(1, math.ceil(h3.great_circle_distance((a, b), (c, d), unit="m")))
        cells |= {
            h3.str_to_int(h3.latlng_to_cell(a + (c - a) * i / n, b + (d - b) * i / n, res))
            for i in range(n + 1)
        }
    return cells


def hats(domain_trips: pl.DataFrame) -> dict[tuple[int, int], float]:
    return {(c, s): v for c, s, v in domain_trips.iter_rows()}


def expected(*parts: tuple[set[int], int, float]) -> dict[tuple[int, int], float]:
    out: dict[tuple[int, int], float] = {}
    for cells, slot, value in parts:
        for c in cells:
            out[(c, slot)] = out.get((c, slot), 0.0) + value
    return out


EW, EW_WEST, EW_EAST = walked(E1, E3), walked(E1, E2), walked(E2, E3)
NS_SOUTH, NS_NORTH = walked(N1, N2), walked(N2, N3)
X_FIRST, X_SECOND = walked(X1, X2), walked(X2, X3)


# ------------------------------------------------------------------------------------------------------- GeoJSON


def write_geojson(tmp_path: Path, value: object) -> Path:
    path = tmp_path / "routes.geojson"
    path.write_text(json.dumps(value))
    return path


def test_an_east_west_line_has_the_cells_h3_walks(tmp_path: Path) -> None:
    line = {"type": "LineString", "coordinates": [[E1[1], E1[0]], [E3[1], E3[0]]]}
    domain = domain_from_geojson(write_geojson(tmp_path, line), RES)
    assert set(domain.cells.to_list()) == EW
    assert domain.cells.dtype == pl.UInt64 and domain.cells.is_sorted() and domain.cells.n_unique() == len(EW)
    assert (domain.kind, domain.source, domain.resolution, domain.hats) == (
        "geojson",
        "routes.geojson",
        RES,
        None,
    )


@pytest.mark.parametrize("res", [8, 9])
def test_a_diagonal_multiline_at_finer_resolutions(tmp_path: Path, res: int) -> None:
    lines = [[[X1[1], X1[0]], [X2[1], X2[0]], [X3[1], X3[0]]], [[N1[1], N1[0]], [N3[1], N3[0]]]]
    feature = {
        "type": "Feature",
        "properties": {},
        "geometry": {"type": "MultiLineString", "coordinates": lines},
    }
    domain = domain_from_geojson(
        write_geojson(tmp_path, {"type": "FeatureCollection", "features": [feature]}), res
    )
    assert set(domain.cells.to_list()) == walked(X1, X2, X3, res=res) | walked(N1, N3, res=res)


def test_polygons_points_and_collections(tmp_path: Path) -> None:
    ring = [[-97.76, 30.26], [-97.72, 30.26], [-97.72, 30.29], [-97.76, 30.29], [-97.76, 30.26]]
    polygon = {"type": "Polygon", "coordinates": [ring]}
    point = {"type": "Point", "coordinates": [-97.80, 30.20]}
    value = {
        "type": "FeatureCollection",
        "features": [
            {"type": "Feature", "geometry": {"type": "GeometryCollection", "geometries": [polygon, point]}},
            {"type": "Feature", "geometry": None, "properties": {}},
        ],
    }
    domain = domain_from_geojson(write_geojson(tmp_path, value), 8)
    inside = {h3.str_to_int(c) for c in h3.h3shape_to_cells(h3.LatLngPoly([(la, lo) for lo, la in ring]), 8)}
    boundary = walked(*[(la, lo) for lo, la in ring], res=8)
    assert set(domain.cells.to_list()) == inside | boundary | {
        h3.str_to_int(h3.latlng_to_cell(30.20, -97.80, 8))
    }
    assert inside - boundary  # the interior adds cells the ring does not touch


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not readable JSON"),
        (
            '{"type": "LineString", "coordinates": [[3112000.0, 10070000.0], [3113000.0, 10071000.0]]}',
            "RFC 7946",
        ),
        ('{"type": "Curve", "coordinates": []}', "unknown geometry type 'Curve'"),
        ('{"type": "FeatureCollection"}', "without a features array"),
        ('{"type": "LineString", "coordinates": [[-97.7], [-97.8, 30.2]]}', "a position that is not"),
        ('{"type": "FeatureCollection", "features": []}', "no geometry"),
    ],
)
def test_malformed_geojson_is_one_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.geojson"
    path.write_text(content)
    with pytest.raises(InputDataError, match=message) as err:
        domain_from_geojson(path, RES)
    assert "\n" not in str(err.value)


def test_capmetro_routes_fixture() -> None:
    """The Capital Metro routes of 2015 (tests/fixtures): cell counts measured when this module was written."""
    fixture = FEED.parent / "capmetro-routes-2015.geojson"
    assert [domain_from_geojson(fixture, r).cells.len() for r in (7, 8)] == [146, 613]


# --------------------------------------------------------------------------------------------------------- cells


def cell(lat: float, lon: float, res: int) -> str:
    return str(h3.latlng_to_cell(lat, lon, res))


def test_cells_file_maps_finer_cells_to_parents_and_coarser_to_children(tmp_path: Path) -> None:
    fine, coarse, same = cell(*E1, 9), cell(*N1, 6), cell(*X1, 7)
    path = tmp_path / "cells.txt"
    path.write_text(f"{fine}\n\n{coarse.upper()}\n{same}\n{same}\n")
    domain = domain_from_cells(path, 7)
    want = {h3.str_to_int(h3.cell_to_parent(fine, 7)), h3.str_to_int(same)}
    want |= {h3.str_to_int(c) for c in h3.cell_to_children(coarse, 7)}
    assert set(domain.cells.to_list()) == want and domain.cells.len() == 9
    assert domain.kind == "cells" and domain.hats is None and domain.scheduled_trips is None


def test_cells_csv_with_a_named_column(tmp_path: Path) -> None:
    path = tmp_path / "cells.csv"
    path.write_text(f"name,h3_cell\na,{cell(*E1, 7)}\nb,{cell(*E3, 7)}\n")
    assert domain_from_cells(path, 7).cells.to_list() == sorted(h3.str_to_int(cell(*p, 7)) for p in (E1, E3))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            f"{cell(*E1, 7)}\n{cell(*E2, 7)}\nzzz-not-a-cell\n",
            "line 3: 'zzz-not-a-cell' is not an H3 cell id",
        ),
        ("h3_cell\n" + cell(*E1, 7) + "\n8a2a1072b59ffff0\n", "line 3"),
        ("\n\n", "no H3 cell id"),
        ("a,b\n1,2\n", "without an h3_cell or cell column"),
    ],
)
def test_bad_cells_files_are_one_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "cells.txt"
    path.write_text(content)
    with pytest.raises(InputDataError, match=message) as err:
        domain_from_cells(path, 7)
    assert "\n" not in str(err.value)


def test_grid_is_cells_times_slots_without_a_schedule(tmp_path: Path) -> None:
    path = tmp_path / "cells.txt"
    path.write_text(f"{cell(*E3, 7)}\n{cell(*E1, 7)}\n")
    grid = domain_from_cells(path, 7).grid([10, 9])
    a, b = sorted(h3.str_to_int(cell(*p, 7)) for p in (E1, E3))
    assert grid.schema == pl.Schema({"cell": pl.UInt64, "slot": pl.Int16})
    assert grid.rows() == [(a, 9), (a, 10), (b, 9), (b, 10)]


# ---------------------------------------------------------------------------------------------------------- GTFS


def gtfs(days: list[dt.date], hours: tuple[int, int] = (9, 21), slot_minutes: int = 60, feed: Path = FEED):
    return domain_from_gtfs(feed, RES, slot_minutes, hours, days)


def test_gtfs_cells_are_the_shapes_and_the_stop_lines_of_shapeless_trips() -> None:
    domain = gtfs([WED])
    assert set(domain.cells.to_list()) == EW | walked(N1, N3) | X_FIRST | X_SECOND
    assert (domain.kind, domain.source, domain.resolution) == ("gtfs", FEED.name, RES)


def test_a_wednesday() -> None:
    """T1 09:10-09:50 and T2 10:10-10:50 cover the whole E-W line in slots 9 and 10 only; T3 20:40-21:20 on N-S
    is in slot 20 up to its middle stop N2 (21:00:00) and leaves the window after it."""
    domain = gtfs([WED])
    assert hats(domain.scheduled_trips) == expected((EW, 9, 1.0), (EW, 10, 1.0), (NS_SOUTH, 20, 1.0))
    assert (
        domain.hats is not None and domain.hats.rows() == domain.scheduled_trips.select("cell", "slot").rows()
    )
    assert domain.grid([9, 20]).rows() == sorted(k for k in hats(domain.scheduled_trips) if k[1] in (9, 20))


def test_calendar_dates_remove_the_weekday_service_and_add_the_holiday_one() -> None:
    """2024-01-15 (a Monday): WK removed, HOL added (T5 12:00-12:40)."""
    assert hats(gtfs([HOLIDAY]).scheduled_trips) == expected((EW, 12, 1.0))


def test_trips_per_day_is_the_mean_over_the_public_days() -> None:
    domain = gtfs([WED, HOLIDAY, WED])  # a repeated day counts once
    want = expected((EW, 9, 0.5), (EW, 10, 0.5), (EW, 12, 0.5), (NS_SOUTH, 20, 0.5))
    assert hats(domain.scheduled_trips) == want


def test_a_trip_past_midnight_runs_on_the_next_calendar_day() -> None:
    """T4 (WK, no shape) 23:40 -> X2 at 24:00:00 -> 24:20: Friday's T4 is in Saturday's slot 0 from X2 on;
    Monday 15th's is cancelled, so Tuesday 16th has no slot 0 but its own T4 in slot 23 up to X2."""
    assert hats(gtfs([SAT], (0, 24)).scheduled_trips) == expected((X_SECOND, 0, 1.0), (EW, 10, 1.0))
    tuesday = expected(
        (EW, 9, 1.0), (EW, 10, 1.0), (NS_SOUTH, 20, 1.0), (NS_NORTH, 21, 1.0), (X_FIRST, 23, 1.0)
    )
    assert hats(gtfs([TUE], (0, 24)).scheduled_trips) == tuesday
    friday = gtfs([FRI], (0, 24)).scheduled_trips
    assert hats(friday.filter(pl.col("slot").is_in([0, 23]))) == expected(
        (X_SECOND, 0, 1.0), (X_FIRST, 23, 1.0)
    )


def test_half_hour_slots_split_a_trip_at_its_middle_stop() -> None:
    """T1 reaches E2 at 09:30 and leaves it at 09:31: west half in slot 18 (09:00-09:30), east half in 19."""
    domain = gtfs([WED], (9, 10), slot_minutes=30)
    assert hats(domain.scheduled_trips) == expected((EW_WEST, 18, 1.0), (EW_EAST, 19, 1.0))


# ----------------------------------------------------------------------------------- blocks: per-vehicle priors


def test_hats_per_vehicle_day_is_the_mean_over_the_block_days_in_the_window() -> None:
    """Wednesday: B1 (T1, T2) 2 x |EW| HATs (slots 9, 10), B2 (T3) |NS_SOUTH| (slot 20), B3 (T4, 23:40) has none
    in 9-21 and is not a vehicle-day of the window; Saturday: B5 (T6) |EW| (slot 10), Friday's B3 in slot 0 is
    out of the window. Three block-days."""
    domain = gtfs([WED, SAT])
    assert domain.hats_per_vehicle_day == pytest.approx((3 * len(EW) + len(NS_SOUTH)) / 3, rel=1e-12)
    assert gtfs([WED]).hats_per_vehicle_day == pytest.approx((2 * len(EW) + len(NS_SOUTH)) / 2, rel=1e-12)


def test_a_block_past_midnight_is_a_vehicle_day_of_the_next_calendar_day() -> None:
    """Saturday 0-24: Friday's T4 (B3) from X2 on in slot 0 and T6 (B5); Tuesday 0-24: B1, B2 (slots 20 and 21),
    B3 up to X2 in slot 23 (Monday's T4 is cancelled with WK on the holiday)."""
    assert gtfs([SAT], (0, 24)).hats_per_vehicle_day == pytest.approx(
        (len(X_SECOND) + len(EW)) / 2, rel=1e-12
    )
    tuesday = (2 * len(EW) + len(NS_SOUTH) + len(NS_NORTH) + len(X_FIRST)) / 3
    assert gtfs([TUE], (0, 24)).hats_per_vehicle_day == pytest.approx(tuesday, rel=1e-12)


def test_one_vehicle_twice_in_a_slot_is_two_trips_but_one_vehicle() -> None:
    """180-minute slots, Wednesday 0-24: T1 and T2 (both B1) are in slot 3 (09:00-12:00): 2 trips, 1 vehicle.
    B3 is Tuesday's T4 in slot 0 (X2..X3) and Wednesday's in slot 7 (X1..X2): one block-day of Wednesday."""
    domain = gtfs([WED], (0, 24), slot_minutes=180)
    rest = ((NS_SOUTH, 6, 1.0), (NS_NORTH, 7, 1.0), (X_FIRST, 7, 1.0), (X_SECOND, 0, 1.0))
    assert hats(domain.scheduled_trips) == expected((EW, 3, 2.0), *rest)
    assert domain.scheduled_vehicles is not None
    assert hats(domain.scheduled_vehicles) == expected((EW, 3, 1.0), *rest)
    assert domain.scheduled_vehicles.schema == pl.Schema(
        {"cell": pl.UInt64, "slot": pl.Int16, "vehicles_per_day": pl.Float64}
    )
    per_block = (len(EW), len(NS_SOUTH) + len(NS_NORTH), len(X_FIRST) + len(X_SECOND))
    assert domain.hats_per_vehicle_day == pytest.approx(sum(per_block) / 3, rel=1e-12)


def test_vehicles_per_day_is_the_mean_over_the_public_days() -> None:
    domain = gtfs([WED, HOLIDAY])
    assert domain.scheduled_vehicles is not None
    assert hats(domain.scheduled_vehicles) == hats(domain.scheduled_trips)


def test_without_block_id_there_is_no_vehicle_prior(tmp_path: Path) -> None:
    folder = copy_feed(tmp_path)
    trips = pl.read_csv(folder / "trips.txt", infer_schema=False)
    trips.drop("block_id").write_csv(folder / "trips.txt")
    domain = gtfs([WED], feed=folder)
    assert domain.hats_per_vehicle_day is None and domain.scheduled_vehicles is None
    assert hats(domain.scheduled_trips) == hats(gtfs([WED]).scheduled_trips)
    trips.with_columns(block_id=pl.lit("")).write_csv(folder / "trips.txt")  # the column, every value empty
    assert gtfs([WED], feed=folder).hats_per_vehicle_day is None


def test_other_domains_have_no_vehicle_prior(tmp_path: Path) -> None:
    cells = tmp_path / "cells.txt"
    cells.write_text(h3.latlng_to_cell(*E1, RES) + "\n")
    domain = domain_from_cells(cells, RES)
    assert domain.hats_per_vehicle_day is None and domain.scheduled_vehicles is None


def copy_feed(tmp_path: Path) -> Path:
    folder = tmp_path / "feed"
    shutil.copytree(FEED, folder)
    return folder


def test_projection_without_shape_dist_traveled_gives_the_same_hats(tmp_path: Path) -> None:
    folder = copy_feed(tmp_path)
    for name in ("shapes.txt", "stop_times.txt"):
        frame = pl.read_csv(folder / name, infer_schema=False).with_columns(shape_dist_traveled=pl.lit(None))
        frame.write_csv(folder / name)
    for hours, days, slot_minutes in (((9, 21), [WED], 60), ((9, 10), [WED], 30), ((0, 24), [TUE], 60)):
        assert hats(gtfs(days, hours, slot_minutes, folder).scheduled_trips) == hats(
            gtfs(days, hours, slot_minutes).scheduled_trips
        )


def test_frequencies_run_the_trip_once_per_headway(tmp_path: Path) -> None:
    """T2 every 20 minutes from 10:00 before 11:00: departures 10:00, 10:20, 10:40 (40 minutes each)."""
    folder = copy_feed(tmp_path)
    (folder / "frequencies.txt").write_text(
        "trip_id,start_time,end_time,headway_secs\nT2,10:00:00,11:00:00,1200\n"
    )
    trips = hats(gtfs([WED], feed=folder).scheduled_trips)
    west, east = h3.str_to_int(cell(*E1, RES)), h3.str_to_int(cell(*E3, RES))
    assert trips[(west, 10)] == 3.0 and (west, 11) not in trips
    assert (
        trips[(east, 10)] == 2.0 and trips[(east, 11)] == 1.0
    )  # the 10:20 arrives at 11:00:00, the 10:40 at 11:20
    assert trips[(west, 9)] == 1.0


def test_zip_equals_folder(tmp_path: Path) -> None:
    archive = tmp_path / "feed.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in sorted(FEED.glob("*.txt")):
            z.write(f, f"gtfs/{f.name}")  # one folder inside, as some agencies ship it
    folder, zipped = gtfs([WED, SAT]), gtfs([WED, SAT], feed=archive)
    assert zipped.cells.to_list() == folder.cells.to_list()
    assert zipped.scheduled_trips.equals(folder.scheduled_trips)
    assert zipped.source == "feed.zip" and zipped.source_sha256 != folder.source_sha256


def write(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(text)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda f: (f / "calendar.txt").unlink() or (f / "calendar_dates.txt").unlink(),
            "neither calendar.txt",
        ),
        (
            lambda f: write(
                f,
                "stop_times.txt",
                (FEED / "stop_times.txt").read_text().replace("09:10:00,09:10:00", "9h10,9h10"),
            ),
            "stop_times.txt line 2: arrival_time '9h10'",
        ),
        (lambda f: write(f, "trips.txt", "route_id,trip_id\nR1,T1\n"), "trips.txt lacks column"),
        (
            lambda f: write(f, "stops.txt", "stop_id,stop_lat,stop_lon\nE1,30.2672,-97.78\n"),
            "stop 'E2' without coordinates",
        ),
        (
            lambda f: write(
                f,
                "shapes.txt",
                (FEED / "shapes.txt").read_text().replace("30.2672,-97.7400", "302672,-97.7400"),
            ),
            "shapes.txt line 3: shape_pt_lat",
        ),
    ],
)
def test_bad_feeds_are_one_line(tmp_path: Path, change, message: str) -> None:
    folder = copy_feed(tmp_path)
    change(folder)
    with pytest.raises(InputDataError, match=message) as err:
        gtfs([WED], feed=folder)
    assert "\n" not in str(err.value)


def test_a_day_without_service_is_refused() -> None:
    with pytest.raises(InputDataError, match="no trip is scheduled"):
        gtfs([dt.date(2024, 1, 14)])  # a Sunday
