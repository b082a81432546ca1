"""urbandp._records.gtfs_schedule: the one reader of GTFS Schedule feeds (folder or zip)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from urbandp._records.gtfs_schedule import read_feed, read_shapes, read_stops, read_tables
from urbandp.errors import InputDataError

SRC = Path(__file__).resolve().parents[3] / "src" / "urbandp"
FEED = Path(__file__).resolve().parents[2] / "fixtures" / "gtfs-mini-schedule"


def test_only_the_gtfs_readers_open_zip_files() -> None:
    """The fleet's domain, the maps' routes and the agency's time zone read a feed through read_feed; the
    GTFS-realtime snapshots (protobuf archives) are another format with their own reader."""
    openers = sorted(
        str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if re.search(r"\bzipfile\b", p.read_text("utf-8"))
    )
    assert openers == ["_records/gtfs_realtime.py", "_records/gtfs_schedule.py"]


def test_a_zip_with_the_feed_in_one_folder_reads_as_the_folder(tmp_path: Path) -> None:
    archive = tmp_path / "feed.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for p in sorted(FEED.glob("*.txt")):
            z.write(p, f"inner/{p.name}")
    zipped, folder = read_feed(archive), read_feed(FEED)
    assert zipped.files == folder.files and zipped.what == "gtfs feed.zip"
    assert zipped.sha256 is not None and folder.sha256 is not None and zipped.sha256 != folder.sha256
    tables = read_tables(zipped)
    assert tables.stops.equals(read_stops(folder)) and tables.shapes is not None
    assert tables.shapes.equals(read_shapes(folder))
    only = read_feed(archive, ("agency.txt",), digest=False)
    assert list(only.files) == ["agency.txt"] and only.sha256 is None


def test_a_missing_table_is_one_line_naming_the_feed(tmp_path: Path) -> None:
    (tmp_path / "stops.txt").write_text("stop_id,stop_lat,stop_lon\n1,30.2,-97.7\n")
    with pytest.raises(InputDataError, match=rf"^gtfs {tmp_path.name}: no trips.txt in the feed$"):
        read_tables(read_feed(tmp_path))
