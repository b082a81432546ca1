"""Timestamps as real agencies write them (issue 9): per-row layouts, epoch numbers, declared formats, plausibility."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from urbandp._records.validation import ValidationOptions, classify_timestamps
from urbandp.errors import InputError
from urbandp.fleet._pipeline import NoValidRecords, date_window, load_records

HEADER = "vehicle_id,timestamp,speed,latitude,longitude\n"
T0 = dt.datetime(2016, 11, 24, 9, 0, tzinfo=dt.UTC)


def _rows(n: int, fmt: object, start: int = 0) -> list[str]:
    """``n`` valid rows of distinct vehicles and instants; ``fmt(t)`` writes the timestamp."""
    out = []
    for i in range(start, start + n):
        t = T0 + dt.timedelta(seconds=60 * i)
        out.append(f"v{i},{fmt(t)},{10 + i % 30},30.26,-97.74")  # type: ignore[operator]
    return out


def _csv(path: Path, rows: list[str]) -> Path:
    path.write_text(HEADER + "\n".join(rows) + "\n")
    return path


def _iso_t(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S")


def _iso_space(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def test_epoch_seconds_and_milliseconds_are_detected_as_utc_instants(tmp_path: Path) -> None:
    seconds = _csv(tmp_path / "s.csv", _rows(50, lambda t: int(t.timestamp())))
    millis = _csv(tmp_path / "ms.csv", _rows(50, lambda t: int(t.timestamp() * 1000)))
    iso = _csv(tmp_path / "iso.csv", _rows(50, _iso_t))
    expected = load_records([iso]).clean["timestamp"].to_list()
    for path in (seconds, millis):
        loaded = load_records([path])
        assert loaded.quarantine.height == 0
        assert loaded.clean["timestamp"].to_list() == expected
    assert load_records([seconds]).timestamp_formats == {"s.csv": "epoch-s"}
    assert load_records([millis]).timestamp_formats == {"ms.csv": "epoch-ms"}
    # With a zone, the epoch instant is shown in it (Austin is UTC-6 in November).
    local = load_records([seconds], options=ValidationOptions(timezone="America/Chicago")).clean["timestamp"]
    assert local[0] == dt.datetime(2016, 11, 24, 3, 0)


def test_declared_formats(tmp_path: Path) -> None:
    dm = _csv(tmp_path / "dm.csv", _rows(20, lambda t: t.strftime("%d/%m/%Y %H:%M")))
    with pytest.raises(NoValidRecords, match=r"all 20 records were quarantined \(unparseable_timestamp 20\)"):
        load_records([dm]).require_valid()
    loaded = load_records([dm], options=ValidationOptions(timestamp_format="%d/%m/%Y %H:%M"))
    assert loaded.quarantine.height == 0 and loaded.clean["timestamp"][0] == dt.datetime(2016, 11, 24, 9, 0)
    s = _csv(tmp_path / "s.csv", _rows(5, lambda t: int(t.timestamp() * 1000)))
    # Declared seconds: milliseconds are then far in the future, quarantined with their own reason.
    as_s = load_records([s], options=ValidationOptions(timestamp_format="epoch-s"))
    assert as_s.reasons["implausible_timestamp"] == 5
    as_ms = load_records([s], options=ValidationOptions(timestamp_format="epoch-ms"))
    assert as_ms.quarantine.height == 0
    with pytest.raises(InputError, match="unknown timestamp format 'unix'"):
        ValidationOptions(timestamp_format="unix")


def test_layouts_are_read_per_file_and_per_row(tmp_path: Path) -> None:
    a = _csv(tmp_path / "a.csv", _rows(30, _iso_t))
    b = _csv(tmp_path / "b.csv", _rows(30, _iso_space, start=100))
    loaded = load_records([a, b])
    assert loaded.quarantine.height == 0 and loaded.clean.height == 60
    # One file mixing T, space, padding, an offset, epoch seconds and milliseconds, row by row.
    writers = [
        _iso_t,
        _iso_space,
        lambda t: f"  {_iso_t(t)}+05:30 ",
        lambda t: int(t.timestamp()),
        lambda t: int(t.timestamp() * 1000),
    ]
    rows = [r for i, w in enumerate(writers) for r in _rows(10, w, start=200 + 10 * i)]
    mixed = load_records([_csv(tmp_path / "m.csv", rows)])
    assert mixed.quarantine.height == 0 and mixed.clean.height == 50
    assert mixed.timestamp_formats["m.csv"].count("+") == 4  # five layouts seen in the sample


def test_parquet_with_typed_datetimes_beside_a_csv_reads_both(tmp_path: Path) -> None:
    csv = _csv(tmp_path / "a.csv", _rows(30, _iso_t))
    pq = tmp_path / "b.parquet"
    pl.DataFrame(
        {
            "vehicle_id": [f"p{i}" for i in range(30)],
            "timestamp": [T0.replace(tzinfo=None) + dt.timedelta(minutes=i) for i in range(30)],
            "speed": [20.0] * 30,
            "latitude": [30.26] * 30,
            "longitude": [-97.74] * 30,
        }
    ).write_parquet(pq)
    loaded = load_records([csv, pq])
    assert loaded.quarantine.height == 0 and loaded.clean.height == 60


@pytest.mark.parametrize(
    "stamp",
    ["1970-01-01T09:00:00", "0000-01-01T09:00:00", "-001-01-01T09:00:00", "2199-01-01T09:00:00", "0", "-5"],
)
def test_implausible_timestamps_get_their_own_reason_and_leave_the_window_alone(
    tmp_path: Path, stamp: str
) -> None:
    rows = [*_rows(20, _iso_t), f"bad,{stamp},10,30.26,-97.74"]
    loaded = load_records([_csv(tmp_path / "x.csv", rows)])
    q = loaded.quarantine
    assert q.height == 1
    assert q["reason"][0] == "implausible_timestamp"
    assert q["timestamp_raw"][0] == stamp  # the raw text is kept
    from urbandp.fleet._options import HatReleaseConfig

    start, end, derived = date_window(HatReleaseConfig(epsilon_per_day=1.0), loaded.clean_lazy)
    assert (start, end, derived) == (dt.date(2016, 11, 24), dt.date(2016, 11, 24), True)


def test_future_tolerance_is_small(tmp_path: Path) -> None:
    now = dt.datetime(2016, 11, 24, 12, 0)
    opts = ValidationOptions(latest_plausible=now + dt.timedelta(days=2))
    rows = [
        *_rows(3, _iso_t),
        "f,2016-11-27T12:00:00,10,30.26,-97.74",
        "g,2016-11-26T11:00:00,10,30.26,-97.74",
    ]
    loaded = load_records([_csv(tmp_path / "f.csv", rows)], options=opts)
    assert loaded.quarantine["vehicle"].to_list() == ["f"]
    assert loaded.quarantine["reason"].to_list() == ["implausible_timestamp"]


def test_duplicates_keep_their_raw_values_in_the_quarantine(tmp_path: Path) -> None:
    rows = [
        "a, 2016-11-24T09:00:00-06:00,10.0,30.26,-97.74",
        "a,2016-11-24 09:00:00,12.5,30.27000,-97.75",  # same vehicle and wall-clock instant, other layout
    ]
    loaded = load_records([_csv(tmp_path / "d.csv", rows)], options=ValidationOptions(speed_unit="mph"))
    q = loaded.quarantine
    assert q["reason"].to_list() == ["duplicate"]
    dup = q.row(0, named=True)
    assert dup["timestamp_raw"] == "2016-11-24 09:00:00"
    assert dup["speed_raw"] == 12.5  # not converted to km/h (20.1)
    assert (dup["latitude"], dup["longitude"]) == (30.27, -97.75)
    assert loaded.clean["speed"][0] == pytest.approx(10.0 * 1.609344)


def test_speeds_in_ms_read_as_kmh_or_mph_are_warned_about(tmp_path: Path) -> None:
    import numpy as np

    rng = np.random.default_rng(4)
    ms = rng.gamma(4.0, 2.0, 600).clip(0, 25)  # m/s of a city bus: mean 8, p95 about 14
    rows = [
        f"v{i % 30},{_iso_t(T0 + dt.timedelta(minutes=i))},{s:.3f},30.26,-97.74" for i, s in enumerate(ms)
    ]
    path = _csv(tmp_path / "u.csv", rows)
    for unit in ("km/h", "mph"):
        warnings = load_records([path], options=ValidationOptions(speed_unit=unit)).warnings
        assert len(warnings) == 1 and f"read as {unit}, look like m/s" in warnings[0]
        # a Python caller reads the parameters it passes; the command line renames them (Advice.parameters)
        assert warnings[0].endswith('give speed_unit="m/s" (or speed_unit_since DAY=m/s from that day)')
        assert warnings[0].parameters == ("speed_unit", "speed_unit_since")  # type: ignore[attr-defined]
    assert load_records([path], options=ValidationOptions(speed_unit="m/s")).warnings == []
    # The same distribution in km/h (x 3.6) is a bus fleet: no warning.
    kmh = [
        f"v{i % 30},{_iso_t(T0 + dt.timedelta(minutes=i))},{s * 3.6:.3f},30.26,-97.74"
        for i, s in enumerate(ms)
    ]
    assert load_records([_csv(tmp_path / "k.csv", kmh)]).warnings == []
    # Per declared span: before the switch m/s read as mph is flagged, after it nothing.
    switch = ValidationOptions(speed_unit="mph", speed_unit_since=((dt.date(2016, 11, 24), "m/s"),))
    assert load_records([path], options=switch).warnings == []


def test_classify_timestamps_names_each_layout() -> None:
    sample = pl.Series(
        ["2016-11-24 09:00:00", "2016-11-24T09:00:00-06:00", "2016-11-24T09:00:00Z", "1479978000"]
    )
    assert classify_timestamps(sample) == "iso (T, UTC offset) + iso (space) + epoch-s"
    assert classify_timestamps(pl.Series([1479978000000])) == "epoch-ms"
    assert classify_timestamps(pl.Series([None], dtype=pl.String)) == "none readable"


def test_kmh_read_as_ms_is_warned_about(tmp_path: Path) -> None:
    rows = [
        f"v{i % 30},{_iso_t(T0 + dt.timedelta(minutes=i))},{20 + i % 40},30.26,-97.74" for i in range(300)
    ]
    path = _csv(tmp_path / "k.csv", rows)
    loaded = load_records([path], options=ValidationOptions(speed_unit="m/s"))
    assert loaded.reasons["speed_above_maximum"] == 126  # 42..59 m/s (18 of each 40 rows) exceed 150 km/h
    assert any("km/h read as m/s" in w for w in loaded.warnings)
    assert load_records([path]).warnings == []


def test_a_zone_aware_parquet_beside_a_csv_keeps_its_instant(tmp_path: Path) -> None:
    csv = _csv(tmp_path / "a.csv", ["c0,2016-11-24T03:00:00-06:00,20,30.26,-97.74"])
    pq = tmp_path / "b.parquet"
    pl.DataFrame(
        {
            "vehicle_id": ["p0"],
            "timestamp": pl.Series([T0]).dt.convert_time_zone("UTC"),  # 09:00 UTC = 03:00 in Austin
            "speed": [20.0],
            "latitude": [30.26],
            "longitude": [-97.74],
        }
    ).write_parquet(pq)
    clean = load_records([csv, pq], options=ValidationOptions(timezone="America/Chicago")).clean
    assert set(clean["timestamp"].dt.hour().to_list()) == {3}
    # without a zone the instants have no local hour (they were read as 09:00 UTC wall-clock): refused
    with pytest.raises(InputError, match="holds instants") as err:
        load_records([csv, pq])
    assert err.value.parameters == ("timezone",)
