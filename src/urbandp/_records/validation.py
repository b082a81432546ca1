"""Parse, convert and validate raw records; every rejected row goes to quarantine with a reason.

Rules (docs/design.md "nothing vanishes") are the names of :data:`REASONS`, applied in that order, first failure
wins; docs/records.md, section "Quarantine reasons", gives an example row of each; its section "Speeds and units"
gives the unit switches (``(first_day, unit)``, a feed that changed firmware) and its "Plausible range" paragraph
the plausible timestamps. Time: by default the wall-clock time written in the timestamp (an epoch number is UTC); with
``timezone`` the instant in that zone.

Clipping to the query bound (``--speed-max``) is NOT validation: it is contribution bounding and happens in the
release, so valid fast records still count as speeding in Query 2.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from urbandp.errors import Advice, InputError


@functools.lru_cache(maxsize=256)
def polars_reads_zone(zone: str) -> bool:
    """Whether Polars takes ``zone`` as a time zone (IANA names and ``UTC``; not fixed offsets like ``+05:30``)."""
    try:
        pl.Series([dt.datetime(2020, 1, 1)]).dt.replace_time_zone(zone)
    except Exception:  # Polars raises ComputeError on a name it cannot parse
        return False
    return True


SPEED_FACTORS_TO_KMH = {"km/h": 1.0, "kmh": 1.0, "kph": 1.0, "mph": 1.609344, "m/s": 3.6, "mps": 3.6}

# The quarantine reason names, in rule order (reason code i + 1 is REASONS[i]). Public: the Spark backend mirrors
# them, and docs/records.md lists each with an example.
REASONS = (
    "unparseable_record",
    "unparseable_timestamp",
    "implausible_timestamp",
    "missing_vehicle",
    "missing_coordinates",
    "null_island",
    "coordinates_out_of_range",
    "missing_speed",
    "negative_speed",
    "speed_above_maximum",
    "duplicate",
)


TIMESTAMP_FORMATS = ("auto", "iso", "epoch-s", "epoch-ms")
"""Named timestamp layouts; any other value containing ``%`` is a ``strftime`` pattern (e.g. ``%d/%m/%Y %H:%M``)."""

# Plausible instants: a timestamp outside [PLAUSIBLE_FROM, now + FUTURE_TOLERANCE] is ``implausible_timestamp``.
PLAUSIBLE_FROM = dt.datetime(1990, 1, 1)
FUTURE_TOLERANCE = dt.timedelta(days=2)
# Epoch numbers at or above this are milliseconds: 1e11 s is the year 5138, 1e11 ms is March 1973.
EPOCH_MS_FROM = 1e11


@dataclass(frozen=True)
class ValidationOptions:
    """How raw values are interpreted and which values are rejected.

    ``timestamp_format``: ``auto`` (default: each row read as ISO 8601 with ``T`` or a space, or as an epoch number,
    seconds below 1e11 and milliseconds above), ``iso``, ``epoch-s``, ``epoch-ms`` or a ``strftime`` pattern.
    ``latest_plausible``: the end of the plausible range (default: two days after the run starts).
    """

    speed_unit: str = "km/h"
    speed_unit_since: tuple[tuple[dt.date, str], ...] = field(default_factory=tuple)
    timezone: str | None = None
    speed_reject_above_kmh: float = 150.0
    # presence-public: a record with a missing, negative or implausible speed still counts for presence
    # and N; its speed is clamped to [0, speed_reject_above_kmh], or set to this public value when missing
    impute_speed_kmh: float | None = None
    timestamp_format: str = "auto"
    latest_plausible: dt.datetime | None = None

    def __post_init__(self) -> None:
        for unit in (self.speed_unit, *(u for _, u in self.speed_unit_since)):
            if unit.lower() not in SPEED_FACTORS_TO_KMH:
                raise InputError(f"unknown speed unit '{unit}' (use km/h, mph or m/s)")
        if self.timezone is not None:
            if not self.timezone.strip():  # "" would read as "no zone given": refused, never a silent default
                raise InputError(
                    "timezone is empty: give an IANA zone such as Asia/Kolkata, or leave it out",
                    parameters="timezone",
                )
            if not polars_reads_zone(self.timezone):
                raise InputError(
                    f"unknown time zone '{self.timezone}' for timezone (an IANA zone such as Asia/Kolkata)",
                    parameters="timezone",
                )
        if not self.speed_reject_above_kmh > 0:  # 0 would quarantine every row
            raise InputError("speed_reject_above must be > 0", parameters="speed_reject_above")
        check_timestamp_format(self.timestamp_format)

    @property
    def plausible_until(self) -> dt.datetime:
        """The latest plausible timestamp (naive, compared with wall-clock or converted times)."""
        if self.latest_plausible is not None:
            return self.latest_plausible
        return dt.datetime.now(dt.UTC).replace(tzinfo=None) + FUTURE_TOLERANCE


def check_timestamp_format(fmt: str) -> str:
    """Refuse a timestamp format that is neither a named layout nor a usable ``strftime`` pattern."""
    if fmt in TIMESTAMP_FORMATS:
        return fmt
    if "%" not in fmt:
        raise InputError(
            f"unknown timestamp format '{fmt}' (use auto, iso, epoch-s, epoch-ms or a strftime pattern such as "
            '"%d/%m/%Y %H:%M")'
        )
    try:
        pl.Series(["x"]).str.strptime(pl.Datetime("us"), fmt, strict=False)
    except Exception:
        raise InputError(f"timestamp format '{fmt}' is not a valid strftime pattern") from None
    return fmt


def _epoch(text: pl.Expr, unit: str, timezone: str | None) -> pl.Expr:
    """Epoch seconds (``s``), milliseconds (``ms``) or either by magnitude (``auto``) as a naive datetime: UTC, or
    the wall-clock time in ``timezone`` when given."""
    num = text.cast(pl.Float64, strict=False)
    num = pl.when(num.is_finite() & (num.abs() < 1e16)).then(num)  # beyond 1e16 ms nothing is a date
    micros = {"s": num * 1e6, "ms": num * 1e3}.get(
        unit, pl.when(num.abs() >= EPOCH_MS_FROM).then(num * 1e3).otherwise(num * 1e6)
    )
    utc = pl.from_epoch(micros.cast(pl.Int64, strict=False), "us")
    return utc if timezone is None else _to_zone(utc, pl.lit(0), timezone)


_ISO_SECONDS = "%Y-%m-%dT%H:%M:%S"


def _iso_wall(text: pl.Series) -> pl.Series:
    """The wall-clock time written in ISO 8601 texts, with ``T``, ``t`` or a space between date and time.

    Seconds may be left out (``2021-11-16T10:16``, ISO 8601's reduced precision; RFC 3339 allows a lowercase
    ``t``): the minute form is tried only where no ``:`` follows the minutes, so a bad seconds field never
    passes as a whole minute. The other forms are tried only on the rows the standard one left null: free on
    clean data. Run on batches (``map_batches``) because Polars evaluates every branch of an expression on every
    row (no common subexpression elimination in the streaming engine): written as one expression, the fallbacks
    re-ran the standard parse three times and cost 0.2 s of CPU per 600 k clean rows (benchmarks/bench_jsonl.py).
    """
    head = text.str.slice(0, 19).str.replace(" ", "T", literal=True)
    wall = head.str.strptime(pl.Datetime("us"), _ISO_SECONDS, strict=False)
    failed = (wall.is_null() & head.is_not_null()).arg_true()
    if failed.len() == 0:
        return wall
    rest = head.gather(failed).str.replace("t", "T", literal=True)
    lower_t = rest.str.strptime(pl.Datetime("us"), _ISO_SECONDS, strict=False)
    no_seconds = pl.select(pl.when(pl.lit(rest).str.slice(16, 1) != ":").then(pl.lit(rest).str.slice(0, 16)))
    minutes = no_seconds.to_series().str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M", strict=False)
    return wall.scatter(failed, lower_t.fill_null(minutes))


def _written_offset_minutes(text: pl.Expr) -> pl.Expr:
    """The UTC offset written at the end of an ISO text (``Z``, ``+05:30``, ``-0600``) in minutes; null if none."""
    sign = pl.when(text.str.extract(r"([+-])\d{2}:?\d{2}$", 1) == "-").then(-1).otherwise(1)
    hours = text.str.extract(r"[+-](\d{2}):?\d{2}$", 1).cast(pl.Int64, strict=False)
    minutes = text.str.extract(r"[+-]\d{2}:?(\d{2})$", 1).cast(pl.Int64, strict=False)
    zulu = text.str.ends_with("Z") | text.str.ends_with("z")
    return pl.when(zulu).then(0).otherwise(sign * (hours * 60 + minutes))


def _to_zone(wall: pl.Expr, offset_min: pl.Expr, timezone: str) -> pl.Expr:
    """Wall-clock time with a known UTC offset, converted to ``timezone``; unchanged where the offset is null."""
    utc = (wall - pl.duration(minutes=offset_min)).dt.replace_time_zone("UTC")
    as_zone = utc.dt.convert_time_zone(timezone).dt.replace_time_zone(None)
    return pl.when(offset_min.is_null()).then(wall).otherwise(as_zone)


def parse_timestamp(raw: pl.Expr, dtype: pl.DataType, timezone: str | None, fmt: str = "auto") -> pl.Expr:
    """Naive timestamps from the raw column, per row (files and rows may mix layouts; none is guessed once).

    Text: ``auto`` reads ISO 8601 (``T`` or space, stray whitespace, fractions and offsets allowed) and, where
    that fails, an epoch number (GTFS-realtime ``vehicle.timestamp``). Without ``timezone`` ISO rows keep the
    wall-clock time as written (what an agency means by "9 am") and epoch rows, which have no wall clock, are
    UTC; with ``timezone`` every row with a known instant is converted to that zone. Integer columns (Parquet)
    are epoch numbers. A typed datetime column is used as it is (a zone-aware one converted like text).
    """
    if isinstance(dtype, pl.Datetime):
        zoned = raw.dt.convert_time_zone(timezone) if dtype.time_zone and timezone else raw
        return (zoned.dt.replace_time_zone(None) if dtype.time_zone else raw).cast(pl.Datetime("us"))
    if isinstance(dtype, pl.Date):
        return raw.cast(pl.Datetime("us"))
    text = raw.cast(pl.String).str.strip_chars()
    if fmt in ("epoch-s", "epoch-ms") or dtype.is_numeric():
        return _epoch(text, {"epoch-s": "s", "epoch-ms": "ms"}.get(fmt, "auto"), timezone)
    if fmt not in ("auto", "iso"):  # a strftime pattern
        parsed = text.str.strptime(pl.Datetime("us"), fmt, strict=False)
        if "%z" in fmt or "%Z" in fmt:
            return parsed.dt.convert_time_zone(timezone or "UTC").dt.replace_time_zone(None)
        return parsed
    wall = text.map_batches(_iso_wall, return_dtype=pl.Datetime("us"), is_elementwise=True)
    if timezone is not None:
        wall = _to_zone(wall, _written_offset_minutes(text), timezone)
    return wall if fmt == "iso" else pl.coalesce(wall, _epoch(text, "auto", timezone))


def classify_timestamps(sample: pl.Series) -> str:
    """The layout(s) seen in a sample of raw timestamps, for privacy.json (e.g. ``iso (T, UTC offset)``)."""
    if isinstance(sample.dtype, (pl.Datetime, pl.Date)):
        return f"typed {sample.dtype}"
    if sample.dtype.is_numeric():
        values = sample.drop_nulls().cast(pl.Float64)
        return "epoch-ms" if values.len() and float(values.abs().max()) >= EPOCH_MS_FROM else "epoch-s"  # type: ignore[arg-type]
    kinds = Counter(_layout(t) for v in sample.cast(pl.String).drop_nulls().to_list() if (t := v.strip()))
    return " + ".join(kind for kind, _ in kinds.most_common()) or "none readable"  # most seen first


def _layout(t: str) -> str:
    """The layout of one raw timestamp text: ``epoch-s``, ``epoch-ms``, ``iso (...)`` or ``other``."""
    try:
        return "epoch-ms" if abs(float(t)) >= EPOCH_MS_FROM else "epoch-s"
    except ValueError:
        pass
    if len(t) >= 16 and t[4] == "-" and t[10] in "Tt ":
        tail = t[16:]
        offset = tail.upper().endswith("Z") or any(len(tail) >= k and tail[-k] in "+-" for k in (5, 6))
        return f"iso ({'space' if t[10] == ' ' else 'T'}{', UTC offset' if offset else ''})"
    return "other"


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
    timestamp = parse_timestamp(pl.col("timestamp_raw"), ts_dtype, options.timezone, options.timestamp_format)
    lat, lon, speed = pl.col("latitude"), pl.col("longitude"), pl.col("speed_raw")
    kmh = speed * _speed_factor(pl.col("timestamp").dt.date(), options)
    if options.impute_speed_kmh is not None:  # missing: the public value; out of range: clamped
        impute = options.impute_speed_kmh
        kmh = kmh.clip(0.0, options.speed_reject_above_kmh).fill_nan(impute).fill_null(impute)
    frame = raw.with_columns(timestamp.alias("timestamp")).with_columns(kmh.alias("speed"))
    speed = pl.col("speed") if options.impute_speed_kmh is not None else speed
    ts = pl.col("timestamp")
    # Integer reason codes (0 = valid): a numeric when/then chain is several times cheaper than one that builds
    # strings for every row; codes become reason names only for the few rejected rows (quarantine_frame).
    checks = [
        ~pl.col("record_ok"),
        ts.is_null(),
        (ts < pl.lit(PLAUSIBLE_FROM)) | (ts > pl.lit(options.plausible_until)),
        pl.col("vehicle").is_null() | (pl.col("vehicle").str.len_bytes() == 0),
        lat.is_null() | lon.is_null() | lat.is_nan() | lon.is_nan(),
        (lat == 0) & (lon == 0),
        (lat.abs() > 90) | (lon.abs() > 180),
        speed.is_null() | speed.is_nan(),
        pl.col("speed") < 0,
        pl.col("speed") > options.speed_reject_above_kmh,
    ]
    assert len(checks) == len(REASONS) - 1  # the last reason, duplicate, is found after validation
    code: pl.Expr = pl.lit(0, dtype=pl.UInt8)
    for number, check in reversed(list(enumerate(checks, start=1))):
        code = pl.when(check).then(pl.lit(number, dtype=pl.UInt8)).otherwise(code)
    return frame.with_columns(code.alias("reason_code"))


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


RAW_FIELDS = ("vehicle", "timestamp_raw", "latitude", "longitude", "speed_raw")
"""The record's fields as read, quoted in the quarantine file after its source, row and reason."""
QUARANTINE_COLUMNS = ("source", "row", "reason", *RAW_FIELDS)


def rejected_rows(validated: pl.LazyFrame) -> pl.LazyFrame:
    """The rows that failed a check, with their reason name (code i is ``REASONS[i - 1]``), in the quarantine
    columns."""
    reason = pl.col("reason_code").replace_strict(
        range(1, len(REASONS)), REASONS[:-1], return_dtype=pl.String
    )
    return (
        validated.filter(pl.col("reason_code") > 0)
        .with_columns(reason.alias("reason"))
        .select(QUARANTINE_COLUMNS)
    )


def quarantine_frame(rejected: pl.DataFrame, duplicates: pl.DataFrame) -> pl.DataFrame:
    """Rejected rows and duplicates with their reason, in the columns written to ``quarantine.csv``.

    ``duplicates`` holds the duplicate rows' raw columns (:func:`raw_rows`), so the quarantine shows what the input
    said; with no row it may have any columns.
    """
    text = pl.col("vehicle", "timestamp_raw").cast(pl.String)
    bad = rejected.select(QUARANTINE_COLUMNS).with_columns(text)
    if duplicates.height == 0:
        return bad.sort("source", "row")
    dup = duplicates.select("source", "row", pl.lit("duplicate").alias("reason"), *RAW_FIELDS).with_columns(
        text
    )
    return pl.concat([bad, dup], how="vertical_relaxed").sort("source", "row")


def raw_rows(raw: pl.LazyFrame, keys: pl.DataFrame) -> pl.DataFrame:
    """The raw columns of the rows named by ``keys`` (``source``, ``row``): one more scan, run only when needed."""
    wanted = keys.select(pl.col("source").cast(pl.UInt16), pl.col("row").cast(pl.UInt32)).lazy()
    return (
        raw.with_columns(pl.col("timestamp_raw").cast(pl.String))
        .join(wanted, on=["source", "row"], how="semi")
        .select("source", "row", *RAW_FIELDS)
        .collect()
    )


def speed_unit_warnings(kept: pl.DataFrame, options: ValidationOptions) -> list[str]:
    """Warnings when the valid speeds, by their distribution, look read in the wrong unit.

    Per span of one declared unit (``speed_unit_since`` splits the data by day): among moving records (above
    1 km/h after conversion), a 95th percentile below :data:`SLOW_P95_KMH` km/h is what m/s read as km/h (x1) or
    as mph (x1.609) gives for a bus fleet (moving buses: 95th percentile 40-70 km/h; the Austin 2016 m/s files
    give 16.5 read as km/h and 26.6 read as mph; its 2015 mph files give 48 read as mph, 29.9 read as km/h).
    Needs :data:`MIN_MOVING` moving records per span; silent otherwise.
    """
    if kept.height == 0 or "speed" not in kept.columns:
        return []
    switches = sorted(options.speed_unit_since)
    day = pl.col("timestamp").dt.date()
    span: pl.Expr = pl.lit(0, dtype=pl.UInt32)
    for first_day, _ in switches:
        span = span + (day >= pl.lit(first_day)).cast(pl.UInt32)
    stats = (
        kept.lazy()
        .filter(pl.col("speed") > 1.0)
        .group_by(span.alias("span"))
        .agg(pl.len().alias("n"), pl.col("speed").quantile(0.95).alias("p95"))
        .sort("span")
        .collect()
    )
    units = [options.speed_unit, *(u for _, u in switches)]
    out: list[str] = []
    for row in stats.iter_rows(named=True):
        i = int(row["span"])
        unit = units[i]
        if row["n"] < MIN_MOVING or row["p95"] >= SLOW_P95_KMH or SPEED_FACTORS_TO_KMH[unit.lower()] == 3.6:
            continue
        if not switches:
            where = "all records"
        elif i == 0:
            where = f"records before {switches[0][0]}"
        else:
            where = f"records from {switches[i - 1][0]}" + (
                f" to before {switches[i][0]}" if i < len(switches) else ""
            )
        # No data-derived figure in the text: it is published in privacy.json's warnings.
        out.append(
            Advice(
                f"speeds of {where}, read as {unit}, look like m/s by their distribution (95th percentile of moving "
                f"speeds below {SLOW_P95_KMH:g} km/h, where a bus fleet's is 40-70; mph read as km/h looks alike); if "
                'the input is in m/s, give speed_unit="m/s" (or speed_unit_since DAY=m/s from that day)',
                parameters=("speed_unit", "speed_unit_since"),
            )
        )
    return out


SLOW_P95_KMH = 30.0
MIN_MOVING = 200
# Share of rows above the plausibility limit beyond which the unit (km/h read as m/s, say) is suspect.
FAST_SHARE = 0.2


def reason_counts(quarantine: pl.DataFrame) -> dict[str, int]:
    """Counts per reason, every reason listed (zeros included) in a stable order."""
    counts = dict(quarantine.group_by("reason").len().iter_rows()) if quarantine.height else {}
    return {r: int(counts.get(r, 0)) for r in REASONS}
