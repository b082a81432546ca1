"""A zone-aware timestamp column is an instant: read in the release's time zone, refused when none is known.

The same Austin morning (local 07:00-10:59, -06:00 in January) is given as text with its offsets, as a pandas
frame of UTC instants (what ``pd.to_datetime(..., utc=True)`` makes), a Polars frame, an Arrow table and a
Parquet file; with the release's zone each gives the release of the text, slot for slot. Before, the instants were
read as UTC wall-clock time (the morning moved to 13:00-16:59) and a ``+05:30`` column was refused.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import urbandp as ud
from urbandp._privacy.noise import ExactNoiseForTesting
from urbandp._records.timezones import feed_timezone
from urbandp.errors import InputError

FEED = (
    Path(__file__).resolve().parents[2] / "fixtures" / "gtfs-mini-schedule"
)  # agency_timezone America/Chicago
DAY = dt.date(2024, 1, 10)  # a Wednesday: the mini feed's weekday service runs
CST = dt.timezone(dt.timedelta(hours=-6))
OPTIONS: dict[str, Any] = {
    "start": DAY,
    "end": DAY,
    "hours": (6, 22),
    "epsilon_per_day": 8,
    "max_hats_per_vehicle_day": 4,
    "resolution": 7,
    "domain_bbox": (30.20, -97.85, 30.33, -97.68),
}


def rows(zone: dt.tzinfo) -> list[dict[str, Any]]:
    """60 buses, a reading every 5 minutes from 07:00 to 10:55 local time on the E-W line of the mini feed, the
    instants written in ``zone``."""
    out = []
    for v in range(60):
        for k in range(48):
            local = dt.datetime(2024, 1, 10, 7, 0, tzinfo=CST) + dt.timedelta(minutes=5 * k + v % 5)
            out.append(
                {
                    "vehicle_id": f"bus{v}",
                    "timestamp": local.astimezone(zone),
                    "speed": float(10 + (v * 7 + k * 3) % 40),
                    "latitude": 30.2672,
                    "longitude": -97.78 + 0.04 * ((v + k) % 12) / 11,
                }
            )
    return out


def as_text(zone: dt.tzinfo = CST) -> pl.DataFrame:
    """The records with ISO text timestamps and their UTC offset in ``zone`` (``2024-01-10T07:00:00-06:00``)."""
    return pl.DataFrame([{**r, "timestamp": r["timestamp"].isoformat()} for r in rows(zone)])


def records() -> pl.DataFrame:
    """The records as a Polars frame of UTC instants."""
    return pl.DataFrame(rows(dt.UTC)).with_columns(pl.col("timestamp").dt.convert_time_zone("UTC"))


def utc_pandas() -> pd.DataFrame:
    """The records as a pandas user has them after ``pd.to_datetime(text, utc=True)``."""
    frame = as_text().to_pandas()
    return frame.assign(timestamp=pd.to_datetime(frame["timestamp"], utc=True))


def exact(data: object, **extra: Any) -> Any:
    session = ud.Session(noise=ExactNoiseForTesting(acknowledge_not_private=True))
    return ud.fleet.release(data, **{**OPTIONS, **extra}, session=session, with_map=False)


@pytest.fixture(scope="module")
def text_release() -> pl.DataFrame:
    """The release of the text with offsets (no zone given: the wall clock written, Austin's local time)."""
    table = exact(as_text()).table
    slots = set(table["slot"].to_list())
    assert slots == {"07:00-08:00", "08:00-09:00", "09:00-10:00", "10:00-11:00"}, slots
    assert table.height > 10
    assert exact(as_text(), timezone="America/Chicago").table.equals(table)
    return table


def refused_for_zone(data: object) -> None:
    with pytest.raises(InputError) as err:
        exact(data)
    assert err.value.parameters == ("timezone",)
    assert "holds instants (zone-aware" in str(err.value) and "give timezone" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_pandas_column_of_utc_instants_gives_the_release_of_the_text(text_release: pl.DataFrame) -> None:
    frame = utc_pandas()
    assert str(frame["timestamp"].dtype) == "datetime64[us, UTC]"
    assert exact(frame, timezone="America/Chicago").table.equals(text_release)
    refused_for_zone(frame)  # was: read as UTC wall-clock, the morning in the 13:00-17:00 slots


def test_a_pandas_column_with_a_fixed_offset_is_read(text_release: pl.DataFrame) -> None:
    """``pd.to_datetime`` of uniform offsets gives ``datetime64[ns, UTC-06:00]``; +05:30 was refused ("unable to
    parse time zone"). Both are instants: read in the release's zone."""
    india = dt.timezone(dt.timedelta(hours=5, minutes=30))
    for zone in (CST, india):
        frame = as_text(zone).to_pandas()
        frame = frame.assign(timestamp=pd.to_datetime(frame["timestamp"]))
        assert isinstance(frame["timestamp"].dtype, pd.DatetimeTZDtype)
        assert exact(frame, timezone="America/Chicago").table.equals(text_release)
    refused_for_zone(frame)


def test_a_polars_frame_and_an_arrow_table_of_instants(text_release: pl.DataFrame) -> None:
    frame = records()
    assert frame.schema["timestamp"] == pl.Datetime("us", "UTC")
    assert exact(frame, timezone="America/Chicago").table.equals(text_release)
    assert exact(frame.lazy(), timezone="America/Chicago").table.equals(text_release)
    refused_for_zone(frame)
    table = frame.to_arrow()
    fixed = table.set_column(  # an Arrow zone Polars cannot read: the same instants
        1, "timestamp", table.column("timestamp").cast(pa.timestamp("us", "+05:30"))
    )
    for arrow in (table, fixed):
        assert exact(arrow, timezone="America/Chicago").table.equals(text_release)
    refused_for_zone(fixed)


def test_parquet_files_of_instants(text_release: pl.DataFrame, tmp_path: Path) -> None:
    utc = tmp_path / "utc.parquet"
    records().write_parquet(utc)
    # written by pandas: tz "+05:30", which Polars cannot scan (it panicked)
    fixed = tmp_path / "india.parquet"
    india = as_text(dt.timezone(dt.timedelta(hours=5, minutes=30))).to_pandas()
    india.assign(timestamp=pd.to_datetime(india["timestamp"])).to_parquet(fixed)
    for path in (utc, fixed):
        assert exact(path, timezone="America/Chicago").table.equals(text_release)
        refused_for_zone(path)
    # a zone-aware file beside a text file: the instants keep their rule (not read as text with a +00:00 offset)
    text = tmp_path / "text.csv"
    as_text().write_csv(text)
    refused_for_zone([text, utc])


def test_the_gtfs_feed_gives_the_zone() -> None:
    """With a GTFS domain, the feed's agency_timezone is the release's zone when none is given."""
    assert feed_timezone(FEED) == "America/Chicago"
    frame = utc_pandas()
    by_feed = exact(frame, domain_bbox=None, domain_gtfs=FEED)
    given = exact(frame, domain_bbox=None, domain_gtfs=FEED, timezone="America/Chicago")
    text = exact(as_text(), domain_bbox=None, domain_gtfs=FEED)
    assert by_feed.hat_release.privacy["input"]["timezone"] == "America/Chicago"
    assert by_feed.table.height > 0
    assert by_feed.table.equals(given.table) and by_feed.table.equals(text.table)
    assert not exact(frame, domain_bbox=None, domain_gtfs=FEED, timezone="UTC").table.equals(by_feed.table)


def test_a_feed_with_two_zones_or_an_unknown_one_is_refused(tmp_path: Path) -> None:
    header = "agency_id,agency_name,agency_url,agency_timezone\n"
    agency = tmp_path / "agency.txt"
    agency.write_text(
        header + "A,a,https://a.invalid,America/Chicago\nB,b,https://b.invalid,America/New_York\n"
    )
    with pytest.raises(InputError, match="several time zones") as err:
        feed_timezone(tmp_path)
    assert err.value.parameters == ("domain_gtfs", "timezone")
    agency.write_text(header + "A,a,https://a.invalid,Mars/Olympus\n")
    with pytest.raises(InputError, match="unknown time zone 'Mars/Olympus'"):
        feed_timezone(tmp_path)
    agency.write_text("agency_id,agency_name\nA,a\n")
    assert feed_timezone(tmp_path) is None
    assert feed_timezone(tmp_path / "absent") is None


def test_the_parquet_check_of_an_engine_that_reads_files_itself(tmp_path: Path) -> None:
    """The Spark engine reads the files on its own: the footer check refuses what the default engine refuses."""
    from urbandp._records.timezones import check_parquet_instants

    instants, naive, text = tmp_path / "i.parquet", tmp_path / "n.parquet", tmp_path / "t.csv"
    records().write_parquet(instants)
    records().with_columns(pl.col("timestamp").dt.replace_time_zone(None)).write_parquet(naive)
    as_text().write_csv(text)
    check_parquet_instants([naive, text], None, None)
    check_parquet_instants([instants], None, "America/Chicago")
    with pytest.raises(InputError, match=r"'timestamp' holds instants \(zone-aware, UTC\)") as err:
        check_parquet_instants([naive, instants], None, None)
    assert err.value.parameters == ("timezone",)
    renamed = tmp_path / "r.parquet"
    records().rename({"timestamp": "when"}).write_parquet(renamed)
    with pytest.raises(InputError, match="'when' holds instants"):
        check_parquet_instants([renamed], {"timestamp": "when"}, None)


def test_the_planner_reads_instants_as_the_release_does(tmp_path: Path) -> None:
    """``plan --histogram-epsilon`` reads the records: with a GTFS domain it takes the feed's zone, as the release
    does; without a zone it refuses the instants, naming the flag."""
    from typer.testing import CliRunner

    from urbandp.cli import app

    data = tmp_path / "instants.parquet"
    records().write_parquet(data)
    window = [
        "--start",
        "2024-01-10",
        "--end",
        "2024-01-10",
        "--histogram-epsilon",
        "1",
        "--epsilon-per-day",
        "4",
    ]
    runner = CliRunner()
    by_feed = runner.invoke(
        app, ["plan", str(data), *window, "--domain-gtfs", str(FEED), "--out", str(tmp_path / "a")]
    )
    assert by_feed.exit_code == 0, by_feed.output
    assert (tmp_path / "a" / "plan.json").is_file()
    bbox = ["--domain-bbox", "30.2,-97.85,30.33,-97.68", "--out", str(tmp_path / "b")]
    refused = runner.invoke(app, ["plan", str(data), *window, *bbox])
    assert refused.exit_code == 2
    assert "holds instants (zone-aware, UTC)" in refused.output and "give --timezone" in refused.output
