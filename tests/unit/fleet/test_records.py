"""Readers, column mapping and validation (issue 2 'Input' and 'Validation')."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urbandp._records.validation import REASONS, ValidationOptions
from urbandp.errors import InputError
from urbandp.fleet._pipeline import load_records

HEADER = "license_plate,observationDateTime,location.coordinates,speed\n"


def _csv(tmp_path: Path, rows: list[str], name: str = "in.csv") -> Path:
    p = tmp_path / name
    p.write_text(HEADER + "\n".join(rows) + "\n")
    return p


def test_every_reason_is_detected_and_counted(tmp_path: Path) -> None:
    rows = [
        'A,2021-11-15T09:00:00+05:30,"[72.83, 21.17]",20',  # valid
        'A,not-a-time,"[72.83, 21.17]",20',  # unparseable_timestamp
        ',2021-11-15T09:00:01+05:30,"[72.83, 21.17]",20',  # missing_vehicle
        "A,2021-11-15T09:00:02+05:30,,20",  # missing_coordinates
        'A,2021-11-15T09:00:03+05:30,"[272.83, 21.17]",20',  # coordinates_out_of_range
        'A,2021-11-15T09:00:04+05:30,"[72.83, 21.17]",',  # missing_speed
        'A,2021-11-15T09:00:05+05:30,"[72.83, 21.17]",NaN',  # missing_speed (NaN)
        'A,2021-11-15T09:00:06+05:30,"[72.83, 21.17]",-1',  # negative_speed
        'A,2021-11-15T09:00:07+05:30,"[72.83, 21.17]",400',  # speed_above_maximum
        'A,2021-11-15T09:00:00+05:30,"[72.83, 21.17]",25',  # duplicate of row 1
        'B,2021-11-15T09:00:00+05:30,"[0, 0]",25',  # null_island (issue 9 item 11)
        'B,1970-01-01T09:00:00+05:30,"[72.83, 21.17]",25',  # implausible_timestamp (issue 9)
    ]
    loaded = load_records([_csv(tmp_path, rows)])
    assert loaded.records_in == 12
    assert loaded.clean.height == 1
    assert loaded.clean["speed"][0] == 20.0  # the first of the duplicates is kept
    assert loaded.reasons == {
        "unparseable_record": 0,
        "unparseable_timestamp": 1,
        "implausible_timestamp": 1,
        "missing_vehicle": 1,
        "missing_coordinates": 1,
        "null_island": 1,
        "coordinates_out_of_range": 1,
        "missing_speed": 2,
        "negative_speed": 1,
        "speed_above_maximum": 1,
        "duplicate": 1,
    }
    q = loaded.quarantine.sort("row")
    assert q["row"].to_list() == list(range(2, 13))
    assert q["source"].unique().to_list() == ["in.csv"]
    assert q.filter(pl.col("row") == 10)["reason"][0] == "duplicate"


def test_itms_shape_in_every_format_reads_the_same(tmp_path: Path) -> None:
    recs = [
        {
            "license_plate": "V1",
            "observationDateTime": "2021-11-15T09:15:03+05:30",
            "speed": 30.5,
            "location": {"type": "Point", "coordinates": [72.83, 21.17]},
            "trip_id": "t1",
        },
        {
            "license_plate": "V2",
            "observationDateTime": "2021-11-15T10:00:00+05:30",
            "speed": 0.0,
            "location": {"type": "Point", "coordinates": [72.84, 21.18]},
            "trip_id": "t2",
        },
    ]
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    (tmp_path / "a.json").write_text(json.dumps(recs))
    pl.DataFrame(recs).write_parquet(tmp_path / "a.parquet")
    _csv(
        tmp_path,
        [
            'V1,2021-11-15T09:15:03+05:30,"[72.83, 21.17]",30.5',
            'V2,2021-11-15T10:00:00+05:30,"[72.84, 21.18]",0.0',
        ],
        "a.csv",
    )
    frames = [load_records([tmp_path / f"a.{ext}"]).clean for ext in ("jsonl", "json", "parquet", "csv")]
    for f in frames[1:]:
        assert f.equals(frames[0])
    assert frames[0]["latitude"].to_list() == [21.17, 21.18]
    assert frames[0]["longitude"].to_list() == [72.83, 72.84]
    assert frames[0]["timestamp"][0] == dt.datetime(2021, 11, 15, 9, 15, 3)  # wall-clock time as written


def test_a_malformed_json_line_is_quarantined_not_fatal(tmp_path: Path) -> None:
    """One junk line makes Polars' JSON Lines reader reject the whole file; the tolerant reader keeps the rest."""
    good = {
        "license_plate": "A",
        "observationDateTime": "2021-11-15T09:00:00+05:30",
        "speed": 20,
        "location": {"type": "Point", "coordinates": [72.83, 21.17]},
    }
    lines = [
        json.dumps(good),
        "not json at all",
        json.dumps({**good, "speed": "fast", "license_plate": "B"}),
        json.dumps([1, 2]),
        json.dumps({**good, "license_plate": "C", "location": None}),
    ]
    p = tmp_path / "mixed.jsonl"
    p.write_text("\n".join(lines) + "\n")
    loaded = load_records([p])
    assert loaded.records_in == 5 and loaded.clean.height == 1
    q = loaded.quarantine.sort("row")
    assert list(zip(q["row"].to_list(), q["reason"].to_list(), strict=True)) == [
        (2, "unparseable_record"),
        (3, "missing_speed"),
        (4, "unparseable_record"),
        (5, "missing_coordinates"),
    ]
    assert loaded.clean.row(0) == ("A", dt.datetime(2021, 11, 15, 9), 21.17, 72.83, 20.0)


def test_column_mapping_and_missing_column(tmp_path: Path) -> None:
    p = tmp_path / "other.csv"
    p.write_text("bus,t,y,x,v\nB7,2021-01-01 10:00:00,21.1,72.8,12\n")
    loaded = load_records(
        [p], {"vehicle": "bus", "timestamp": "t", "latitude": "y", "longitude": "x", "speed": "v"}
    )
    assert loaded.clean.row(0) == ("B7", dt.datetime(2021, 1, 1, 10), 21.1, 72.8, 12.0)
    with pytest.raises(InputError, match="missing required column"):
        load_records([p])
    with pytest.raises(InputError, match="not found in input"):
        load_records([p], {"vehicle": "nope"})


def test_unusable_inputs_raise_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="input not found"):
        load_records([tmp_path / "missing.csv"])
    empty = tmp_path / "empty.csv"
    empty.write_text(HEADER)
    with pytest.raises(InputError, match="no records"):
        load_records([empty])
    (tmp_path / "x.txt").write_text("hello")
    with pytest.raises(InputError, match="unsupported input format"):
        load_records([tmp_path / "x.txt"])


def test_speed_units_and_a_unit_switch_on_a_date(tmp_path: Path) -> None:
    p = tmp_path / "u.csv"
    p.write_text(
        "vehicle_id,timestamp,speed,latitude,longitude\n"
        "1,2015-12-31T10:00:00-06:00,10,30.2,-97.7\n"
        "1,2016-01-01T10:00:00-06:00,10,30.2,-97.7\n"
    )
    opts = ValidationOptions(speed_unit="mph", speed_unit_since=((dt.date(2016, 1, 1), "m/s"),))
    speeds = load_records([p], options=opts).clean["speed"].to_list()
    assert speeds == pytest.approx([16.09344, 36.0])


def test_timezone_conversion_uses_the_written_offset(tmp_path: Path) -> None:
    p = tmp_path / "tz.csv"
    p.write_text(
        "vehicle_id,timestamp,speed,latitude,longitude\n"
        "1,2016-11-25T11:53:40-06:00,1,30.2,-97.7\n"
        "2,2016-11-25T17:53:40Z,1,30.2,-97.7\n"
    )
    wall = load_records([p]).clean["timestamp"].to_list()
    assert wall == [dt.datetime(2016, 11, 25, 11, 53, 40), dt.datetime(2016, 11, 25, 17, 53, 40)]
    utc = load_records([p], options=ValidationOptions(timezone="UTC")).clean["timestamp"].to_list()
    assert utc == [dt.datetime(2016, 11, 25, 17, 53, 40)] * 2
    kolkata = load_records([p], options=ValidationOptions(timezone="Asia/Kolkata")).clean["timestamp"][0]
    assert kolkata == dt.datetime(2016, 11, 25, 23, 23, 40)
    with pytest.raises(InputError, match="time zone"):
        ValidationOptions(timezone="Mars/Olympus")


text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters='"\r\n,'), max_size=12
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            text,
            text,
            st.one_of(text, st.floats(allow_nan=True).map(str)),
            st.floats(-100, 100).map(str),
            st.floats(-200, 200).map(str),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_validation_never_crashes_and_loses_no_row(
    tmp_path_factory: pytest.TempPathFactory, rows: list
) -> None:
    """Property: whatever the cell contents, every row is either clean or quarantined with a known reason."""
    p = tmp_path_factory.mktemp("h") / "h.csv"
    p.write_text(
        "vehicle_id,timestamp,speed,latitude,longitude\n" + "\n".join(",".join(r) for r in rows) + "\n"
    )
    loaded = load_records([p])
    assert loaded.clean.height + loaded.quarantine.height == loaded.records_in == len(rows)
    assert set(loaded.quarantine["reason"].to_list()) <= set(REASONS)
