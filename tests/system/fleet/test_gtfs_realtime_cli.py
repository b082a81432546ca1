"""A GTFS-realtime VehiclePositions archive releases the same HATs as the same records given as CSV (issue 32).

The archive is built here with the official bindings from the synthetic fleet, shaped as an agency's feed
archive is: a snapshot every two minutes holding every vehicle's latest fix of the last ten minutes (so a fix
repeats in up to six consecutive snapshots, and a fix overtaken within two minutes never appears), trip updates beside
the positions, and one corrupt snapshot. The CSV holds exactly the fixes the snapshots carry, at the precision the
protobuf carries them (float32 coordinates, float32 m/s speeds written as km/h).
"""

from __future__ import annotations

import datetime as dt
import io
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from google.transit import gtfs_realtime_pb2
from urbandp_process import assert_refused, run_urbandp

import urbandp as ud
from urbandp._privacy.noise import ExactNoiseForTesting
from urbandp._synth.fleet import generate_fleet

pytestmark = pytest.mark.system
START = dt.date(2024, 3, 4)
BBOX = (21.09, 72.75, 21.25, 72.91)
OPTIONS: dict[str, Any] = {
    "start": START,
    "end": START,
    "epsilon_per_day": 8,
    "max_hats_per_vehicle_day": 2,
    "resolution": 6,
    "slot_minutes": 60,
    "domain_bbox": BBOX,
    "timezone": "Asia/Kolkata",
}
EVERY_S = 120  # one snapshot every two minutes
STALE_S = 600  # a vehicle drops out of the feed ten minutes after its last fix
CORRUPT = "vp-corrupt.pb"


def fleet_fixes() -> pl.DataFrame:
    """The synthetic fleet's fixes as (vehicle, t epoch seconds, latitude, longitude, speed km/h)."""
    raw = generate_fleet(150, 1, 11, start=START, records_per_vehicle_day=120, dirty_fraction=0.0)
    return raw.select(
        pl.col("license_plate").alias("vehicle"),
        pl.col("observationDateTime").str.to_datetime("%Y-%m-%dT%H:%M:%S%:z").dt.epoch("s").alias("t"),
        pl.col("location").struct.field("coordinates").list.get(1).alias("latitude"),
        pl.col("location").struct.field("coordinates").list.get(0).alias("longitude"),
        pl.col("speed"),
    ).unique(["vehicle", "t"], keep="first", maintain_order=True)


def snapshot_rows(fixes: pl.DataFrame) -> pl.DataFrame:
    """Per snapshot time, each vehicle's latest fix of the last STALE_S seconds (as a feed repeats it)."""
    first, last = int(fixes["t"].min()), int(fixes["t"].max())  # type: ignore[arg-type]
    times = pl.DataFrame({"snap": np.arange(first, last + EVERY_S, EVERY_S, dtype=np.int64)})
    grid = times.join(fixes.select("vehicle").unique(), how="cross").sort("vehicle", "snap")
    latest = grid.join_asof(
        fixes.sort("vehicle", "t"),
        left_on="snap",
        right_on="t",
        by="vehicle",
        strategy="backward",
        check_sortedness=False,
    )
    return latest.filter(pl.col("t").is_not_null() & (pl.col("snap") - pl.col("t") <= STALE_S)).sort(
        "snap", "vehicle"
    )


def feed_message(snap: int, rows: pl.DataFrame) -> bytes:
    feed = gtfs_realtime_pb2.FeedMessage()
    feed.header.gtfs_realtime_version = "2.0"
    feed.header.incrementality = gtfs_realtime_pb2.FeedHeader.FULL_DATASET
    feed.header.timestamp = snap
    for i, r in enumerate(rows.iter_rows(named=True)):
        entity = feed.entity.add()
        entity.id = f"vp-{i}"
        vp = entity.vehicle
        vp.trip.trip_id = f"trip-{r['vehicle']}"
        vp.vehicle.id = r["vehicle"]
        vp.vehicle.label = f"bus {i}"
        vp.timestamp = r["t"]
        vp.position.latitude = r["latitude"]
        vp.position.longitude = r["longitude"]
        vp.position.speed = r["speed"] / 3.6  # the feed's unit: m/s
        update = feed.entity.add()  # a trip update beside the position: not a record
        update.id = f"tu-{i}"
        update.trip_update.trip.trip_id = f"trip-{r['vehicle']}"
        update.trip_update.vehicle.id = r["vehicle"]
    return feed.SerializeToString()


@pytest.fixture(scope="module")
def feed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The archive as a folder, a .zip and a .tar.gz, and the CSV of the fixes it carries."""
    root = tmp_path_factory.mktemp("gtfsrt")
    rows = snapshot_rows(fleet_fixes())
    folder = root / "archive"
    folder.mkdir()
    blobs: dict[str, bytes] = {}
    for (snap,), part in rows.group_by(["snap"], maintain_order=True):
        blobs[f"vp-{snap}.pb"] = feed_message(int(snap), part)  # type: ignore[call-overload]
    good = next(iter(blobs.values()))
    blobs[CORRUPT] = good[: len(good) // 2] + b"\xff\xff\xff"  # a snapshot cut short by a failed download
    for name, blob in blobs.items():
        (folder / name).write_bytes(blob)
    with zipfile.ZipFile(root / "archive.zip", "w") as z:
        for name, blob in blobs.items():
            z.writestr(f"feed/{name}", blob)
    with tarfile.open(root / "archive.tar.gz", "w:gz") as t:
        for name, blob in blobs.items():
            info = tarfile.TarInfo(f"feed/{name}")
            info.size = len(blob)
            t.addfile(info, io.BytesIO(blob))
    carried = rows.unique(["vehicle", "t"], keep="first", maintain_order=True)
    csv = root / "fixes.csv"
    carried.select(
        "vehicle",
        pl.col("t").alias("timestamp"),
        pl.col("latitude").cast(pl.Float32).cast(pl.Float64),  # what the protobuf carries
        pl.col("longitude").cast(pl.Float32).cast(pl.Float64),
        ((pl.col("speed") / 3.6).cast(pl.Float32).cast(pl.Float64) * 3.6).alias("speed"),
    ).write_csv(csv)
    return {
        "folder": folder,
        "zip": root / "archive.zip",
        "tar": root / "archive.tar.gz",
        "csv": csv,
        "snapshots": len(blobs),
        "entities": rows.height,
        "fixes": carried.height,
    }


def exact_release(data: Path, **extra: Any) -> Any:
    session = ud.Session(noise=ExactNoiseForTesting(acknowledge_not_private=True))
    return ud.fleet.release(data, **OPTIONS, **extra, session=session, with_map=False)


@pytest.mark.parametrize("form", ["folder", "zip", "tar"])
def test_an_archive_releases_the_same_hats_as_the_csv(feed: dict[str, Any], form: str) -> None:
    assert 300 <= feed["snapshots"] <= 800  # real feed shapes: a few hundred snapshots ...
    assert feed["entities"] > 2 * feed["fixes"]  # ... each fix repeated in consecutive ones
    csv = exact_release(feed["csv"])
    pb = exact_release(feed[form])
    assert csv.table.height > 20
    assert pb.table.equals(csv.table)
    assert (
        pb.loaded.records_in == feed["fixes"] + 1
    )  # the repeats are one record; the corrupt snapshot one row
    assert csv.loaded.records_in == feed["fixes"]
    assert pb.loaded.records_valid == csv.loaded.records_valid  # valid records inside the window
    q = pb.loaded.quarantine
    assert q.height == 1 and q["reason"][0] == "unparseable_record"
    assert q["vehicle"][0].startswith(
        f"corrupt GTFS-realtime snapshot {'' if form == 'folder' else 'feed/'}{CORRUPT}"
    )
    assert csv.loaded.quarantine.height == 0


def test_cli_releases_the_archive_and_quarantines_the_corrupt_snapshot(
    feed: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "rel"
    res = run_urbandp(
        "release", str(feed["zip"]), "--out", str(out), "--start", "2024-03-04", "--end", "2024-03-04",
        "--epsilon-per-day", "8", "--max-hats-per-vehicle-day", "2", "--resolution", "6", "--slot-minutes", "60",
        "--domain-bbox", ",".join(map(str, BBOX)), "--timezone", "Asia/Kolkata", "--no-map",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    quarantine = pl.read_csv(out.parent / "owner_only" / out.name / "quarantine.csv")
    assert quarantine.height == 1
    assert quarantine["source"][0] == "archive.zip"
    assert f"corrupt GTFS-realtime snapshot feed/{CORRUPT}" in quarantine["vehicle"][0]
    assert CORRUPT not in (out / "privacy.json").read_text()  # what the input held stays with its owner
    assert pl.read_csv(out / "hat_speed.csv").height > 20


def test_every_snapshot_corrupt_is_the_usual_no_valid_record_error(tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    for i in range(3):
        (folder / f"vp-{i}.pb").write_bytes(b"<html>502 Bad Gateway</html>")
    res = run_urbandp("release", str(folder), "--out", str(tmp_path / "rel"), "--start", "2024-03-04",
                      "--end", "2024-03-04", "--epsilon-per-day", "4", "--no-map")  # fmt: skip
    assert_refused(res, "all 3 records were quarantined (unparseable_record 3)")
