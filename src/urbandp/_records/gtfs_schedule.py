"""GTFS Schedule feeds, read in one place: the fleet's public domain and schedule prior, and the maps' routes.

A feed is a folder of ``.txt`` tables or the ``gtfs.zip`` agencies ship (tables at its root or in one folder
inside). :func:`read_feed` reads the tables it is asked for within two bounds checked before anything is parsed:
a file (the zip, a folder's table, a zip member counted uncompressed) of at most :data:`MAX_DOMAIN_FILE_BYTES`,
and a table of at most :data:`MAX_GTFS_ROWS` rows; a pipe or a device is refused unopened (:func:`read_public_file`,
the reader of every public domain file). :func:`read_tables` parses and checks the tables the schedule needs
(GTFS Schedule reference, https://gtfs.org/schedule/reference/), :func:`read_shapes` and :func:`read_stops` the two
a map draws. Every problem is one :class:`~urbandp.errors.InputDataError` line naming the feed, the file, the line
and the column. A feed is public information: nothing here reads records or spends privacy budget.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import stat
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from urbandp.errors import InputDataError

MAX_DOMAIN_FILE_BYTES = 1 << 30
"""Largest file (or zip member, uncompressed) a public domain is read from: 1 GiB, several times the largest
agencies' GTFS feeds, so the whole file is read into memory at a known bound."""

MAX_GTFS_ROWS = 3_000_000
"""Most rows one GTFS table may hold (counted by its line ends, before it is parsed): a city's bus feed holds well
under a million stop_times; a larger feed (a national or multi-agency one) is refused at once, to be cut to the
agency and days of the release, rather than parsed for minutes and gigabytes."""

GTFS_FILES = (
    "shapes.txt",
    "stops.txt",
    "trips.txt",
    "stop_times.txt",
    "calendar.txt",
    "calendar_dates.txt",
    "frequencies.txt",
)


def read_public_file(path: Path, what: str) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_DOMAIN_FILE_BYTES`: a pipe or a device (which would block
    or never end) and a larger file are refused before a byte is read."""
    limit = MAX_DOMAIN_FILE_BYTES
    try:
        info = Path(path).stat()
    except FileNotFoundError:
        raise InputDataError(f"{what} {path}: not found") from None
    except OSError as err:
        raise InputDataError(f"{what} {path}: cannot be read ({err.strerror or err})") from None
    if not stat.S_ISREG(info.st_mode):
        raise InputDataError(
            f"{what} {path}: not a regular file (a pipe, device or socket); save it to a file first"
        )
    if info.st_size > limit:
        raise InputDataError(
            f"{what} {path}: {info.st_size:,} bytes, more than the {limit:,} a public domain file may hold"
        )
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise InputDataError(f"{what} {path}: cannot be read ({err.strerror or err})") from None


def _folder_sha(files: dict[str, bytes]) -> str:
    """sha256 of a GTFS folder: of the lines ``<sha256 of the file>  <name>``, one per GTFS file, sorted by name."""
    lines = "".join(f"{hashlib.sha256(files[n]).hexdigest()}  {n}\n" for n in sorted(files))
    return hashlib.sha256(lines.encode()).hexdigest()


@dataclass(frozen=True)
class FeedFiles:
    """The raw tables of a feed: ``files`` maps a table's name (``stops.txt``) to its bytes; ``what`` names the feed
    in messages (``gtfs <file name>``); ``sha256`` (for provenance) is of the zip file, or for a folder of its
    ``*.txt`` files (:func:`_folder_sha`), ``None`` where :func:`read_feed` was not asked for it."""

    what: str
    files: dict[str, bytes]
    sha256: str | None


def read_feed(feed: Path, names: Sequence[str] = GTFS_FILES, *, digest: bool = True) -> FeedFiles:
    """The tables ``names`` of a GTFS folder or zip (at its root or in one folder inside), those it holds.

    ``digest``: also the sha256 a release records (of the zip, or of every ``*.txt`` file of a folder, which are
    then all read). Refused in one line: a feed that is missing, not a regular file or folder, not a zip, or
    above the size or row caps (see the module's docstring)."""
    feed = Path(feed)
    wanted = set(names)
    if feed.is_dir():
        texts = {
            p.name: read_public_file(p, "gtfs")
            for p in sorted(feed.glob("*.txt"))
            if not p.is_dir() and (digest or p.name in wanted)
        }
        files = {n: b for n, b in texts.items() if n in wanted}
        _check_rows(files, f"gtfs {feed}")
        return FeedFiles(f"gtfs {feed.name}", files, _folder_sha(texts) if digest else None)
    raw = read_public_file(feed, "gtfs")
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            members = {Path(n).name: n for n in z.namelist() if Path(n).name in wanted and n.count("/") <= 1}
            for short, full in members.items():
                size = z.getinfo(full).file_size
                if size > MAX_DOMAIN_FILE_BYTES:
                    raise InputDataError(
                        f"gtfs {feed}: {short} holds {size:,} bytes uncompressed, more than the "
                        f"{MAX_DOMAIN_FILE_BYTES:,} a public domain file may hold"
                    )
            files = {short: z.read(full) for short, full in members.items()}
    except (zipfile.BadZipFile, OSError) as err:
        raise InputDataError(f"gtfs {feed}: not a GTFS folder or readable zip file ({err})") from None
    _check_rows(files, f"gtfs {feed}")
    return FeedFiles(f"gtfs {feed.name}", files, hashlib.sha256(raw).hexdigest() if digest else None)


def _check_rows(files: dict[str, bytes], what: str) -> None:
    """Refuse a GTFS table of more than :data:`MAX_GTFS_ROWS` rows, counted by line ends before any parse."""
    for name, data in sorted(files.items()):
        rows = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1) - 1  # less the header
        if rows > MAX_GTFS_ROWS:
            raise InputDataError(
                f"{what}: {name} holds {rows:,} rows, more than {MAX_GTFS_ROWS:,}; cut the feed to the agency "
                "and the days of the release, or give its routes as a GeoJSON"
            )


@dataclass(frozen=True)
class FeedTables:
    """The tables of a feed a schedule needs, parsed and checked (:func:`read_tables`); times in seconds after the
    service day's midnight, dates as dates."""

    shapes: pl.DataFrame | None  # shape_id, lat, lon, seq, sdt (Float64 or null)
    stops: pl.DataFrame  # stop_id, lat, lon
    trips: pl.DataFrame  # trip_id, service_id, shape_id, block_id (null where absent)
    stop_times: pl.DataFrame  # trip_id, seq, stop_id, arr, dep (seconds), sdt
    calendar: pl.DataFrame | None
    calendar_dates: pl.DataFrame | None
    frequencies: pl.DataFrame | None  # trip_id, start, end, headway (seconds)


@dataclass(frozen=True)
class _Table:
    """One GTFS file being read: ``frame`` holds its columns as stripped strings (empty = null) and ``line``
    (1-based, header = 1); ``name`` (``stops.txt``) and ``what`` (the feed) are named by every message."""

    frame: pl.DataFrame
    name: str
    what: str

    @classmethod
    def read(
        cls, files: dict[str, bytes], name: str, required: Sequence[str], optional: Sequence[str], what: str
    ) -> _Table:
        """The ``required`` and the present ``optional`` columns of ``name`` (absent optional ones null)."""
        if name not in files:
            raise InputDataError(f"{what}: no {name} in the feed")
        try:
            table = pl.read_csv(io.BytesIO(files[name]), infer_schema=False, encoding="utf8-lossy")
        except pl.exceptions.PolarsError as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise InputDataError(f"{what}: cannot read {name}: {first}") from None
        table = table.rename({c: c.strip().lstrip("\ufeff") for c in table.columns})
        missing = [c for c in required if c not in table.columns]
        if missing:
            raise InputDataError(
                f"{what}: {name} lacks column(s) {', '.join(missing)} (has {', '.join(table.columns)})"
            )
        cols = [*required, *(c for c in optional if c in table.columns)]
        out = table.select(pl.col(c).str.strip_chars().replace("", None) for c in cols).with_row_index(
            "line", offset=2
        )
        out = out.with_columns(
            pl.lit(None, dtype=pl.String).alias(c) for c in optional if c not in out.columns
        )
        return cls(out, name, what)

    def check(self, ok: pl.Expr, column: str, expected: str) -> None:
        """Refuse the first row where ``ok`` fails (or is null), naming its line, ``column`` and its value."""
        bad = self.frame.filter(~ok.fill_null(False))
        if bad.height:
            line, value = bad.select("line", column).row(0)
            raise InputDataError(
                f"{self.what}: {self.name} line {line}: {column} {value!r} is not {expected} ({bad.height} such "
                "row(s))"
            )

    def number(self, column: str, lo: float, hi: float) -> _Table:
        """``column`` as a number in [``lo``, ``hi``]."""
        value = pl.col(column).cast(pl.Float64, strict=False)
        self.check(value.is_between(lo, hi), column, f"a number in [{lo:g}, {hi:g}]")
        return dataclasses.replace(self, frame=self.frame.with_columns(value.alias(column)))

    def seconds(self, *columns: str) -> _Table:
        """``H:MM:SS`` (hours may pass 24) as seconds after the service day's midnight; empty stays null."""
        frame = self.frame
        for column in columns:
            parts = pl.col(column).str.split_exact(":", 2)
            h, m, s = (parts.struct.field(f"field_{i}").cast(pl.Int64, strict=False) for i in range(3))
            ok = (h >= 0) & m.is_between(0, 59) & s.is_between(0, 59) & (pl.col(column).str.len_bytes() <= 9)
            seconds = pl.when(ok).then(h * 3600 + m * 60 + s)
            self.check(pl.col(column).is_null() | seconds.is_not_null(), column, "a time H:MM:SS")
            frame = frame.with_columns(seconds.alias(column))
        return dataclasses.replace(self, frame=frame)


def read_tables(feed: FeedFiles) -> FeedTables:
    """The GTFS tables a schedule needs, read and checked file by file (the first bad row of the first bad file,
    in this order, is the one error: shapes, stops, trips, stop_times, calendar, calendar_dates, frequencies)."""
    files, what = feed.files, feed.what
    shapes = read_shapes(feed) if "shapes.txt" in files else None
    stops = read_stops(feed)
    trips = _Table.read(
        files, "trips.txt", ("route_id", "service_id", "trip_id"), ("shape_id", "block_id"), what
    )
    trips_frame = trips.frame.select("trip_id", "service_id", "shape_id", "block_id").unique(
        "trip_id", keep="first"
    )
    stop_times = _read_stop_times(files, what)
    calendar = _read_calendar(files, what) if "calendar.txt" in files else None
    calendar_dates = _read_calendar_dates(files, what) if "calendar_dates.txt" in files else None
    if calendar is None and calendar_dates is None:
        raise InputDataError(f"{what}: neither calendar.txt nor calendar_dates.txt (no service days)")
    frequencies = _read_frequencies(files, what) if "frequencies.txt" in files else None
    return FeedTables(shapes, stops, trips_frame, stop_times, calendar, calendar_dates, frequencies)


def read_shapes(feed: FeedFiles) -> pl.DataFrame:
    """``shapes.txt``: shape_id, lat, lon, seq, sdt (Float64 or null), sorted by shape and sequence."""
    required = ("shape_id", "shape_pt_lat", "shape_pt_lon", "shape_pt_sequence")
    shapes = _Table.read(feed.files, "shapes.txt", required, ("shape_dist_traveled",), feed.what)
    shapes = shapes.number("shape_pt_lat", -90, 90).number("shape_pt_lon", -180, 180)
    seq = pl.col("shape_pt_sequence").cast(pl.Int64, strict=False)
    shapes.check(
        seq.is_not_null() & pl.col("shape_id").is_not_null(),
        "shape_pt_sequence",
        "an integer with a shape_id",
    )
    return shapes.frame.select(
        "shape_id",
        pl.col("shape_pt_lat").alias("lat"),
        pl.col("shape_pt_lon").alias("lon"),
        seq.alias("seq"),
        pl.col("shape_dist_traveled").cast(pl.Float64, strict=False).alias("sdt"),
    ).sort("shape_id", "seq")


def read_stops(feed: FeedFiles) -> pl.DataFrame:
    """``stops.txt``: stop_id, lat, lon of the stops with a position (stations, generic nodes and boarding areas
    without one are left out, as GTFS allows)."""
    stops = _Table.read(feed.files, "stops.txt", ("stop_id",), ("stop_lat", "stop_lon"), feed.what)
    placed = stops.frame.filter(pl.col("stop_lat").is_not_null() | pl.col("stop_lon").is_not_null())
    stops = dataclasses.replace(stops, frame=placed).number("stop_lat", -90, 90).number("stop_lon", -180, 180)
    return stops.frame.select("stop_id", pl.col("stop_lat").alias("lat"), pl.col("stop_lon").alias("lon"))


def _read_stop_times(files: dict[str, bytes], what: str) -> pl.DataFrame:
    """``stop_times.txt``: trip_id, seq, stop_id, arr, dep (seconds; either one stands for a missing other), sdt."""
    required = ("trip_id", "arrival_time", "departure_time", "stop_id", "stop_sequence")
    st = _Table.read(files, "stop_times.txt", required, ("shape_dist_traveled",), what)
    st = st.seconds("arrival_time", "departure_time")
    seq = pl.col("stop_sequence").cast(pl.Int64, strict=False)
    st.check(seq.is_not_null(), "stop_sequence", "an integer")
    return st.frame.select(
        "trip_id",
        seq.alias("seq"),
        "stop_id",
        pl.coalesce("arrival_time", "departure_time").alias("arr"),
        pl.coalesce("departure_time", "arrival_time").alias("dep"),
        pl.col("shape_dist_traveled").cast(pl.Float64, strict=False).alias("sdt"),
    )


def _read_calendar(files: dict[str, bytes], what: str) -> pl.DataFrame:
    """``calendar.txt``: service_id, start, end (dates) and week (7 booleans, Monday first)."""
    week = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    calendar = _Table.read(files, "calendar.txt", ("service_id", *week, "start_date", "end_date"), (), what)
    for c in ("start_date", "end_date"):
        calendar.check(_date(c).is_not_null(), c, "a date YYYYMMDD")
    return calendar.frame.select(
        "service_id",
        _date("start_date").alias("start"),
        _date("end_date").alias("end"),
        pl.concat_list(pl.col(w) == "1" for w in week).alias("week"),
    )


def _read_calendar_dates(files: dict[str, bytes], what: str) -> pl.DataFrame:
    """``calendar_dates.txt``: service_id, date and exception_type (True: service added, False: removed)."""
    dates = _Table.read(files, "calendar_dates.txt", ("service_id", "date", "exception_type"), (), what)
    dates.check(_date("date").is_not_null(), "date", "a date YYYYMMDD")
    dates.check(pl.col("exception_type").is_in(["1", "2"]), "exception_type", "1 or 2")
    return dates.frame.select("service_id", _date("date").alias("date"), pl.col("exception_type") == "1")


def _read_frequencies(files: dict[str, bytes], what: str) -> pl.DataFrame:
    """``frequencies.txt``: trip_id, start, end (seconds) and headway (seconds, positive)."""
    required = ("trip_id", "start_time", "end_time", "headway_secs")
    frequencies = _Table.read(files, "frequencies.txt", required, (), what).seconds("start_time", "end_time")
    headway = pl.col("headway_secs").cast(pl.Int64, strict=False)
    frequencies.check(headway > 0, "headway_secs", "a positive integer")
    return frequencies.frame.select(
        "trip_id",
        pl.col("start_time").alias("start"),
        pl.col("end_time").alias("end"),
        headway.alias("headway"),
    )


def _date(column: str) -> pl.Expr:
    return pl.col(column).str.strptime(pl.Date, "%Y%m%d", strict=False)
