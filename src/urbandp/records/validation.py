"""Parse, convert and validate raw records; every rejected row goes to quarantine with a reason.

Rules (issue 2, DESIGN.md "nothing vanishes"), applied in this order, first failure wins:

``unparseable_record`` - a JSON Lines line that is not a JSON object (read by the tolerant reader);
``unparseable_timestamp`` - the timestamp is missing or not ISO 8601 ``YYYY-MM-DD[T ]HH:MM:SS...``;
``missing_vehicle``; ``missing_coordinates``; ``null_island`` (exactly (0, 0): a GPS unit's default fix, not a place); ``coordinates_out_of_range`` (|lat| > 90 or |lon| > 180);
``missing_speed`` (absent, unparseable or NaN); ``negative_speed``; ``speed_above_maximum`` (above the plausibility
limit, default 150 km/h: a sensor fault, not a fast bus); ``duplicate`` (a second record with the same vehicle
and timestamp; the first is kept). In a release, duplicates are looked for among the valid rows inside the date and
hour window (rows outside it are counted as ``records_outside_window`` and never enter a statistic).

Speeds are converted to km/h. The unit may change on a date (real feeds change firmware: the Austin AVL data is mph
in 2015 and m/s from 2016), so a list of ``(first_day, unit)`` switches is accepted.

Time: by default the wall-clock time written in the timestamp is used (its own UTC offset, which is what a transit
agency means by "9 am"); with ``timezone`` the instant is converted to that zone.

Clipping to the query bound (``--speed-max``) is NOT validation: it is contribution bounding and happens in the
release, so valid fast records still count as speeding in Query 2.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from urbandp.errors import InputError

SPEED_FACTORS_TO_KMH = {"km/h": 1.0, "kmh": 1.0, "kph": 1.0, "mph": 1.609344, "m/s": 3.6, "mps": 3.6}

REASONS = (
    "unparseable_record",
    "unparseable_timestamp",
    "missing_vehicle",
    "missing_coordinates",
    "null_island",
    "coordinates_out_of_range",
    "missing_speed",
    "negative_speed",
    "speed_above_maximum",
    "duplicate",
)


@dataclass(frozen=True)
class ValidationOptions:
    """How raw values are interpreted and which values are rejected."""

    speed_unit: str = "km/h"
    speed_unit_since: tuple[tuple[dt.date, str], ...] = field(default_factory=tuple)
    timezone: str | None = None
    speed_reject_above_kmh: float = 150.0

    def __post_init__(self) -> None:
        for unit in (self.speed_unit, *(u for _, u in self.speed_unit_since)):
            if unit.lower() not in SPEED_FACTORS_TO_KMH:
                raise InputError(f"unknown speed unit '{unit}' (use km/h, mph or m/s)")
        if self.timezone is not None:
            try:
                pl.Series([dt.datetime(2020, 1, 1)]).dt.replace_time_zone(self.timezone)
            except Exception:
                raise InputError(f"unknown time zone '{self.timezone}'") from None
        if not self.speed_reject_above_kmh > 0:
            raise InputError("speed_reject_above must be > 0")


@dataclass(frozen=True)
class TimestampLayout:
    """How ISO 8601 text timestamps are written in one input: the date-time separator and stray whitespace."""

    separator: str = "T"
    padded: bool = False

    @classmethod
    def detect(cls, sample: pl.Series) -> TimestampLayout:
        """Read the layout off a sample of values (the first non-empty ones). Parsing with one fixed format is
        several times faster than trying formats per row; a row written differently is quarantined as
        ``unparseable_timestamp`` and counted, never silently dropped."""
        values = [v for v in sample.drop_nulls().to_list() if isinstance(v, str) and v.strip()]
        if not values:
            return cls()
        padded = any(v != v.strip() for v in values)
        with_t = sum(len(v.strip()) > 10 and v.strip()[10] == "T" for v in values)
        return cls("T" if with_t * 2 >= len(values) else " ", padded)


def _parse_timestamp(
    raw: pl.Expr, dtype: pl.DataType, timezone: str | None, layout: TimestampLayout = TimestampLayout()
) -> pl.Expr:
    if isinstance(dtype, pl.Datetime):
        if dtype.time_zone is not None and timezone:
            return raw.dt.convert_time_zone(timezone).dt.replace_time_zone(None).cast(pl.Datetime("us"))
        return (
            raw.dt.replace_time_zone(None).cast(pl.Datetime("us"))
            if dtype.time_zone
            else raw.cast(pl.Datetime("us"))
        )
    text = raw.str.strip_chars() if layout.padded else raw
    wall = text.str.slice(0, 19).str.strptime(
        pl.Datetime("us"), f"%Y-%m-%d{layout.separator}%H:%M:%S", strict=False
    )
    if timezone is None:
        return wall
    sign = pl.when(text.str.extract(r"([+-])\d{2}:?\d{2}$", 1) == "-").then(-1).otherwise(1)
    hours = text.str.extract(r"[+-](\d{2}):?\d{2}$", 1).cast(pl.Int64, strict=False)
    minutes = text.str.extract(r"[+-]\d{2}:?(\d{2})$", 1).cast(pl.Int64, strict=False)
    offset_min = pl.when(text.str.ends_with("Z")).then(0).otherwise(sign * (hours * 60 + minutes))
    utc = (wall - pl.duration(minutes=offset_min)).dt.replace_time_zone("UTC")
    as_zone = utc.dt.convert_time_zone(timezone).dt.replace_time_zone(None)
    # No offset written: the wall-clock time is taken to be in the requested zone already.
    return pl.when(offset_min.is_null()).then(wall).otherwise(as_zone)


def _speed_factor(day: pl.Expr, options: ValidationOptions) -> pl.Expr:
    factor: pl.Expr = pl.lit(SPEED_FACTORS_TO_KMH[options.speed_unit.lower()])
    for first_day, unit in sorted(options.speed_unit_since):
        factor = (
            pl.when(day >= pl.lit(first_day))
            .then(pl.lit(SPEED_FACTORS_TO_KMH[unit.lower()]))
            .otherwise(factor)
        )
    return factor


def validate(raw: pl.LazyFrame, options: ValidationOptions) -> pl.LazyFrame:
    """Add parsed ``timestamp``, ``speed`` (km/h) and ``reason_code`` (0 for a valid row) to the raw frame."""
    ts_dtype = raw.collect_schema()["timestamp_raw"]
    layout = TimestampLayout()
    if ts_dtype == pl.String:
        layout = TimestampLayout.detect(raw.select("timestamp_raw").head(1000).collect()["timestamp_raw"])
    timestamp = _parse_timestamp(pl.col("timestamp_raw"), ts_dtype, options.timezone, layout)
    lat, lon, speed = pl.col("latitude"), pl.col("longitude"), pl.col("speed_raw")
    frame = raw.with_columns(timestamp.alias("timestamp")).with_columns(
        (speed * _speed_factor(pl.col("timestamp").dt.date(), options)).alias("speed")
    )
    # Integer reason codes (0 = valid): a numeric when/then chain is several times cheaper than one that builds
    # strings for every row; codes become reason names only for the few rejected rows (quarantine_frame).
    checks = [
        ~pl.col("record_ok"),
        pl.col("timestamp").is_null(),
        pl.col("vehicle").is_null() | (pl.col("vehicle").str.len_bytes() == 0),
        lat.is_null() | lon.is_null() | lat.is_nan() | lon.is_nan(),
        (lat == 0) & (lon == 0),
        (lat.abs() > 90) | (lon.abs() > 180),
        speed.is_null() | speed.is_nan(),
        pl.col("speed") < 0,
        pl.col("speed") > options.speed_reject_above_kmh,
    ]
    code: pl.Expr = pl.lit(0, dtype=pl.UInt8)
    for number, check in reversed(list(enumerate(checks, start=1))):
        code = pl.when(check).then(pl.lit(number, dtype=pl.UInt8)).otherwise(code)
    return frame.with_columns(code.alias("reason_code"))


def reason_name(code: pl.Expr) -> pl.Expr:
    """Reason name of a non-zero reason code (see :data:`REASONS`)."""
    return code.replace_strict(list(range(1, len(REASONS))), list(REASONS[:-1]), return_dtype=pl.String)


def later_duplicates(frame: pl.DataFrame) -> pl.Series | None:
    """Mask of rows that repeat an earlier row's (vehicle, timestamp); ``None`` when there is none.

    ``frame`` needs ``vehicle``, ``timestamp``, ``source`` and ``row``; "earlier" is input order (file, then row).
    Sort-based, not hash-based, because hashing 15 M (vehicle, timestamp) pairs takes seconds here:

    1. pack each row into one int64 key (vehicle code x time span + microseconds since the first timestamp),
       sort the key column (multi-threaded) and read the repeated keys off neighbours;
    2. find the rows holding a repeated key through a 2^24-slot bit table indexed by the key's low bits (numpy
       gather; false hits are removed by an exact check on the few candidates);
    3. among candidates, every occurrence after the first in (source, row) order is a later duplicate.

    A mask (not two copies) lets the caller fuse the filter into its next query.
    """
    n = frame.height
    if n == 0:
        return None
    code = frame["vehicle"].cast(pl.Categorical).to_physical().cast(pl.Int64)
    micros = frame["timestamp"].dt.epoch("us")
    t0 = int(micros.min())  # type: ignore[arg-type]
    span = int(micros.max()) - t0 + 1  # type: ignore[arg-type]
    if (int(code.max()) + 1) * span < 2**62:  # type: ignore[arg-type]
        key = code * span + (micros - t0)
    else:  # astronomically wide windows: a hash of the pair (collisions only widen the candidate set)
        key = (
            pl.DataFrame({"c": code, "t": micros})
            .select(pl.struct("c", "t").hash().cast(pl.Int64))
            .to_series()
        )
    sorted_key = key.sort().to_numpy()
    repeated = np.unique(sorted_key[1:][sorted_key[1:] == sorted_key[:-1]])
    if repeated.size == 0:
        return None
    bits = (1 << 24) - 1
    table = np.zeros(bits + 1, dtype=bool)
    table[repeated & bits] = True
    key_np = key.to_numpy()
    hit = np.flatnonzero(table[key_np & bits])
    hit = hit[np.isin(key_np[hit], repeated)]
    candidates = frame[hit].select("vehicle", "timestamp", "source", "row").with_columns(pl.Series("_i", hit))
    later = (
        candidates.sort("source", "row")
        .filter(~pl.struct("vehicle", "timestamp").is_first_distinct())["_i"]
        .to_numpy()
    )
    mask = np.zeros(n, dtype=bool)
    mask[later] = True
    return pl.Series("later_duplicate", mask)


QUARANTINE_COLUMNS = (
    "source",
    "row",
    "reason",
    "vehicle",
    "timestamp_raw",
    "latitude",
    "longitude",
    "speed_raw",
)


def rejected_rows(validated: pl.LazyFrame) -> pl.LazyFrame:
    """The rows that failed a check, with their reason name, in the quarantine columns."""
    return (
        validated.filter(pl.col("reason_code") > 0)
        .with_columns(reason_name(pl.col("reason_code")).alias("reason"))
        .select(QUARANTINE_COLUMNS)
    )


def quarantine_frame(rejected: pl.DataFrame, duplicates: pl.DataFrame) -> pl.DataFrame:
    """Rejected rows and duplicates with their reason, in the columns written to ``quarantine.csv``."""
    dup = duplicates.select(
        pl.col("source"),
        pl.col("row"),
        pl.lit("duplicate").alias("reason"),
        pl.col("vehicle").cast(pl.String),
        pl.col("timestamp").dt.strftime("%Y-%m-%dT%H:%M:%S").alias("timestamp_raw"),
        *(  # a release pass keeps the H3 cell instead of the coordinates
            pl.col(c) if c in duplicates.columns else pl.lit(None, pl.Float64).alias(c)
            for c in ("latitude", "longitude")
        ),
        pl.col("speed").alias("speed_raw"),
    )
    bad = rejected.select(QUARANTINE_COLUMNS).with_columns(pl.col("timestamp_raw").cast(pl.String))
    return pl.concat([bad, dup], how="vertical_relaxed").sort("source", "row")


def reason_counts(quarantine: pl.DataFrame) -> dict[str, int]:
    """Counts per reason, every reason listed (zeros included) in a stable order."""
    counts = dict(quarantine.group_by("reason").len().iter_rows()) if quarantine.height else {}
    return {r: int(counts.get(r, 0)) for r in REASONS}
