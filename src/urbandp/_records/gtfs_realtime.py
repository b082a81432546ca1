"""GTFS-realtime ``VehiclePositions`` snapshots as records (what agencies' feed archives hold).

A folder (or a ``.zip``/``.tar``/``.tar.gz``/``.tgz``) of protobuf ``FeedMessage`` snapshots is one input, parsed
with the official bindings (``gtfs-realtime-bindings``) in name order. docs/records.md, section "GTFS-realtime
VehiclePositions", says which fields make a record: speeds are m/s by the GTFS-realtime reference, converted here to
km/h (x 3.6); repeats of a fix across snapshots are de-duplicated by (vehicle, timestamp), the first kept, before
validation; a snapshot that does not parse is one ``unparseable_record`` (its ``vehicle`` column holding
``corrupt GTFS-realtime snapshot <name>: <error>``), never fatal. The frame has the columns of the tolerant readers
(``__line``, ``__record_ok``), so :func:`urbandp._records.readers.scan_records` maps it like any input.
"""

from __future__ import annotations

import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from urbandp.errors import InputError, one_line

KIND = "gtfs-realtime"
SNAPSHOT_SUFFIX = ".pb"
ARCHIVE_SUFFIXES = ((".zip",), (".tar",), (".tgz",), (".tar", ".gz"))
MS_TO_KMH = 3.6
"""GTFS-realtime ``Position.speed`` is in metres per second (the reference); records carry km/h."""

_RAW = {
    "vehicle": pl.String,
    "seconds": pl.Int64,
    "latitude": pl.Float64,
    "longitude": pl.Float64,
    "speed": pl.Float64,
    "__record_ok": pl.Boolean,
}
"""One record as a snapshot gives it: POSIX seconds and m/s, converted by :func:`read_gtfs_realtime`."""
_Row = tuple[str | None, int | None, float | None, float | None, float | None, bool]


def is_archive(path: Path) -> bool:
    """Whether ``path`` is named like an archive of snapshots (``.zip``, ``.tar``, ``.tar.gz``, ``.tgz``)."""
    suffixes = tuple(s.lower() for s in Path(path).suffixes)
    return any(suffixes[-len(a) :] == a for a in ARCHIVE_SUFFIXES)


def is_snapshot_name(name: str) -> bool:
    """Whether a file or archive member name is a protobuf snapshot (``.pb``)."""
    return name.lower().endswith(SNAPSHOT_SUFFIX)


def snapshots(path: Path) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of every snapshot of a ``.pb`` file, a folder or an archive, in name order.

    Raises :class:`InputError` for an archive that cannot be opened or holds no ``.pb`` member.
    """
    path = Path(path)
    if path.is_dir():
        for f in sorted(f for f in path.iterdir() if f.is_file() and is_snapshot_name(f.name)):
            yield f.name, f.read_bytes()
        return
    if not is_archive(path):
        yield path.name, path.read_bytes()
        return
    found = False
    try:
        if path.suffix.lower() == ".zip":
            with zipfile.ZipFile(path) as archive:
                for info in sorted(archive.infolist(), key=lambda i: i.filename):
                    if not info.is_dir() and is_snapshot_name(info.filename):
                        found = True
                        yield info.filename, archive.read(info)
        else:
            with tarfile.open(path, "r:*") as archive:
                for member in sorted(archive.getmembers(), key=lambda m: m.name):
                    handle = archive.extractfile(member) if member.isfile() else None
                    if handle is not None and is_snapshot_name(member.name):
                        found = True
                        yield member.name, handle.read()
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as err:
        raise InputError(f"cannot read {path}: not a readable archive ({one_line(str(err))})") from None
    if not found:
        raise InputError(f"cannot read {path}: no GTFS-realtime snapshot (.pb member) in the archive")


def _snapshot_rows(name: str, data: bytes) -> list[_Row]:
    """The vehicle positions of one snapshot, or one failed record naming the snapshot when it does not parse."""
    from google.protobuf.message import DecodeError
    from google.transit import gtfs_realtime_pb2

    feed = gtfs_realtime_pb2.FeedMessage()
    try:
        feed.ParseFromString(data)
        if not feed.IsInitialized():
            raise DecodeError("missing required fields: " + ", ".join(feed.FindInitializationErrors()))
    except (DecodeError, RuntimeError, ValueError) as err:
        reason = one_line(str(err)) or type(err).__name__
        return [(f"corrupt GTFS-realtime snapshot {name}: {reason}", None, None, None, None, False)]
    header_time = int(feed.header.timestamp) if feed.header.HasField("timestamp") else None
    rows: list[_Row] = []
    for entity in feed.entity:
        if not entity.HasField("vehicle"):
            continue  # a trip update or an alert: not a position
        vp = entity.vehicle
        vehicle = vp.vehicle.id or vp.vehicle.label or None
        timestamp = int(vp.timestamp) if vp.HasField("timestamp") else header_time
        if vp.HasField("position"):
            pos = vp.position
            speed = float(pos.speed) if pos.HasField("speed") else None
            rows.append((vehicle, timestamp, float(pos.latitude), float(pos.longitude), speed, True))
        else:
            rows.append((vehicle, timestamp, None, None, None, True))
    return rows


def read_gtfs_realtime(path: Path) -> pl.DataFrame:
    """Every vehicle position of a snapshot, folder or archive as one frame (see the module docstring).

    Columns: ``vehicle``, ``timestamp`` (UTC), ``latitude``, ``longitude``, ``speed`` (km/h), ``__line`` (the
    record's number after de-duplication, in reading order) and ``__record_ok`` (false for a corrupt snapshot).
    """
    parsed = [_snapshot_rows(name, data) for name, data in snapshots(path)]
    if not parsed:
        raise InputError(f"cannot read {path}: no GTFS-realtime snapshot (.pb file) in it")
    raw = pl.DataFrame([row for rows in parsed for row in rows], schema=_RAW, orient="row")
    keyed = pl.col("__record_ok") & pl.col("vehicle").is_not_null() & pl.col("seconds").is_not_null()
    return raw.filter(~keyed | pl.struct("vehicle", "seconds").is_first_distinct()).select(
        "vehicle",
        pl.from_epoch("seconds", time_unit="s")
        .cast(pl.Datetime("us"))
        .dt.replace_time_zone("UTC")
        .alias("timestamp"),
        "latitude",
        "longitude",
        pl.col("speed") * MS_TO_KMH,
        pl.int_range(1, pl.len() + 1, dtype=pl.UInt32).alias("__line"),
        "__record_ok",
    )


def check_speed_unit(has_feed: bool, speed_unit: str, speed_unit_since: tuple[object, ...]) -> None:
    """Refuse a declared speed unit other than km/h when a GTFS-realtime input is read.

    The feed's speeds are m/s by the GTFS-realtime reference and this reader already gives km/h; ``--speed-unit``
    (which applies to every input of a run) would convert them a second time.
    """
    if has_feed and (speed_unit.lower() not in ("km/h", "kmh", "kph") or speed_unit_since):
        raise InputError(
            f"speed_unit {speed_unit} cannot apply to GTFS-realtime input: its speeds are m/s by the "
            "specification and read as such; leave speed_unit out (release other files with another unit "
            "separately)",
            parameters="speed_unit",
        )
