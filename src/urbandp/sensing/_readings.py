"""Read sensor readings (lat, lon, time, value) and quarantine bad rows with a reason.

Accepted column names (case-insensitive): latitude ``lat|latitude``, longitude ``lon|long|lng|longitude``,
time ``time|timestamp|datetime|observationdatetime``, value ``value|pm|pm25|pm2_5`` (or ``value_column``).
The Kolkata mobile files (IIT Delhi's KolkataDataset, ``Mobile_*.csv``: ``lat,long,time,pm``) use times like
``9/15/2023 5:00`` (month/day/year, no zero padding, no seconds) and coordinates rounded to 0.01 degree
(about 1.1 km), so several readings share one location; they carry no vehicle id. A vehicle id column is read
only when asked for (``vehicle_column``); :func:`csv_columns` tells whether a file has one.
Times with a UTC offset are converted to UTC; naive times are kept as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from urbandp.errors import InputError

LAT_NAMES = ("lat", "latitude")
LON_NAMES = ("lon", "long", "lng", "longitude")
TIME_NAMES = ("time", "timestamp", "datetime", "observationdatetime")
VALUE_NAMES = ("value", "pm", "pm25", "pm2_5", "pm2.5")
NAIVE_FORMATS = (
    "%m/%d/%Y %H:%M",
    "%m/%d/%Y %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S%.f",
    "%Y-%m-%d %H:%M:%S%.f",
    "%Y-%m-%dT%H:%M",
    "%Y-%m-%d %H:%M",
)
AWARE_FORMATS = ("%Y-%m-%dT%H:%M:%S%.f%z", "%Y-%m-%d %H:%M:%S%.f%z", "%Y-%m-%dT%H:%M:%S%z")


@dataclass(frozen=True)
class Readings:
    """Validated readings as numpy arrays (``time`` as datetime64[us], naive or UTC)."""

    lat: np.ndarray
    lon: np.ndarray
    time: np.ndarray
    value: np.ndarray
    vehicle: np.ndarray | None = None
    """The vehicle id of each reading (strings), when a vehicle column was read."""

    def __len__(self) -> int:
        return int(self.value.shape[0])

    def subset(self, mask: np.ndarray) -> Readings:
        vehicle = None if self.vehicle is None else self.vehicle[mask]
        return Readings(self.lat[mask], self.lon[mask], self.time[mask], self.value[mask], vehicle)

    def within(self, start: np.datetime64, end: np.datetime64) -> tuple[Readings, int]:
        """The readings taken in the public window ``[start, end)``, and how many were taken outside it."""
        t = self.time.astype("datetime64[m]")
        inside = (t >= start) & (t < end)
        return self.subset(inside), int((~inside).sum())


@dataclass(frozen=True)
class LoadReport:
    rows_read: int
    rows_kept: int
    rows_quarantined: int
    reasons: dict[str, int]


MAX_ABS_VALUE = 1e100
"""Readings beyond +-1e100 are quarantined: the GP standardises by the sd and works in squares (sd^2, sums of
squared deviations over up to millions of readings), which overflow to inf near 1e154; no sensor reads such a value."""


def _pick(columns: list[str], names: tuple[str, ...], what: str, path: Path) -> str:
    lower = {c.strip().lower(): c for c in columns}
    for n in names:
        if n in lower:
            return lower[n]
    raise InputError(f"{path}: no {what} column (looked for {', '.join(names)}; found {', '.join(columns)})")


def _parse_time(col: pl.Expr) -> pl.Expr:
    s = col.str.strip_chars()
    naive = [s.str.to_datetime(f, strict=False, time_unit="us") for f in NAIVE_FORMATS]
    aware = [
        s.str.to_datetime(f, strict=False, time_unit="us")
        .dt.convert_time_zone("UTC")
        .dt.replace_time_zone(None)
        for f in AWARE_FORMATS
    ]
    return pl.coalesce(*aware, *naive)


def _read_csv(path: Path, n_rows: int | None = None) -> pl.DataFrame:
    """The CSV at ``path``, every column as text; :class:`InputError` in one line if it cannot be read."""
    if not path.is_file():
        raise InputError(f"input file not found: {path}")
    try:
        return pl.read_csv(path, infer_schema=False, n_rows=n_rows, truncate_ragged_lines=True)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError, OSError) as err:
        raise InputError(f"{path}: cannot read as CSV ({str(err).splitlines()[0]})") from None


def csv_columns(path: Path | str) -> list[str]:
    """The header of a CSV of readings (its schema, not its values); :class:`InputError` if it cannot be read."""
    return list(_read_csv(Path(path), n_rows=0).columns)


def read_readings(
    path: Path | str,
    value_column: str | None = None,
    quarantine_path: Path | str | None = None,
    bbox: tuple[float, float, float, float] | None = None,
    vehicle_column: str | None = None,
) -> tuple[Readings, LoadReport]:
    """Read a CSV of readings; bad rows go to ``quarantine_path`` (CSV with ``line`` and ``reason``).

    ``bbox = (lat_min, lon_min, lat_max, lon_max)`` quarantines readings outside a public box.
    ``vehicle_column``: read each reading's vehicle id (``Readings.vehicle``); a row without one is quarantined.
    Raises :class:`InputError` for a missing file, a missing column or no usable row.
    """
    path = Path(path)
    raw = _read_csv(path)
    if raw.height == 0:
        raise InputError(f"{path}: no rows")
    cols = raw.columns
    c_lat = _pick(cols, LAT_NAMES, "latitude", path)
    c_lon = _pick(cols, LON_NAMES, "longitude", path)
    c_time = _pick(cols, TIME_NAMES, "time", path)
    c_val = _pick(cols, (value_column.lower(),) if value_column else VALUE_NAMES, "value", path)
    c_veh = _pick(cols, (vehicle_column.lower(),), "vehicle", path) if vehicle_column else None
    df = raw.with_row_index("line", offset=2).with_columns(
        pl.col(c_lat).str.strip_chars().cast(pl.Float64, strict=False).alias("_lat"),
        pl.col(c_lon).str.strip_chars().cast(pl.Float64, strict=False).alias("_lon"),
        _parse_time(pl.col(c_time)).alias("_time"),
        pl.col(c_val).str.strip_chars().cast(pl.Float64, strict=False).alias("_value"),
        (pl.col(c_veh).str.strip_chars() if c_veh else pl.lit("", dtype=pl.String)).alias("_vehicle"),
    )
    reason = (
        pl.when(pl.col("_lat").is_null() | pl.col("_lat").is_nan())
        .then(pl.lit("latitude not a number"))
        .when(pl.col("_lon").is_null() | pl.col("_lon").is_nan())
        .then(pl.lit("longitude not a number"))
        .when((pl.col("_lat") < -90) | (pl.col("_lat") > 90))
        .then(pl.lit("latitude outside [-90, 90]"))
        .when((pl.col("_lon") < -180) | (pl.col("_lon") > 180))
        .then(pl.lit("longitude outside [-180, 180]"))
        .when(pl.col("_time").is_null())
        .then(pl.lit("time not parseable"))
        .when(pl.col("_value").is_null() | ~pl.col("_value").is_finite())
        .then(pl.lit("value not a finite number"))
        .when(pl.col("_value").abs() > MAX_ABS_VALUE)
        .then(
            pl.lit(
                f"value beyond +-{MAX_ABS_VALUE:g} (no sensor reads it; its square would overflow the model)"
            )
        )
    )
    if c_veh is not None:
        missing = pl.col("_vehicle").is_null() | (pl.col("_vehicle") == "")
        reason = reason.when(missing).then(pl.lit("vehicle id missing"))
    if bbox is not None:
        la0, lo0, la1, lo1 = bbox
        outside = (
            (pl.col("_lat") < la0) | (pl.col("_lat") > la1) | (pl.col("_lon") < lo0) | (pl.col("_lon") > lo1)
        )
        reason = reason.when(outside).then(pl.lit("outside the bounding box"))
    df = df.with_columns(reason.otherwise(pl.lit(None, dtype=pl.String)).alias("reason"))
    bad = df.filter(pl.col("reason").is_not_null())
    good = df.filter(pl.col("reason").is_null())
    if quarantine_path is not None:
        Path(quarantine_path).parent.mkdir(parents=True, exist_ok=True)
        bad.select(["line", *cols, "reason"]).write_csv(quarantine_path)
    counts = dict(bad.group_by("reason").len().sort("reason").iter_rows()) if bad.height else {}
    report = LoadReport(raw.height, good.height, bad.height, {str(k): int(v) for k, v in counts.items()})
    if good.height == 0:
        raise InputError(f"{path}: no usable rows ({bad.height} quarantined: {report.reasons})")
    readings = Readings(
        good["_lat"].to_numpy(),
        good["_lon"].to_numpy(),
        good["_time"].to_numpy().astype("datetime64[us]"),
        good["_value"].to_numpy(),
        good["_vehicle"].to_numpy().astype(str) if c_veh is not None else None,
    )
    return readings, report


def window_starts(time: np.ndarray, minutes: int, origin: np.datetime64 | None = None) -> np.ndarray:
    """Start of the ``minutes``-long window each time falls in: windows follow each other from ``origin`` (a
    release's public ``start``), or from the Unix epoch when no origin is given (whole hours and days then begin
    at midnight UTC)."""
    step = np.timedelta64(int(minutes), "m")
    t = time.astype("datetime64[m]")
    anchor = np.datetime64(0, "m") if origin is None else np.asarray(origin).astype("datetime64[m]")[()]
    return anchor + ((t - anchor) // step) * step


def windows_per_day(windows: np.ndarray, window_minutes: int) -> int:
    """The largest number of the public ``windows`` that overlap one calendar day (a window that spans midnight
    counts on both days)."""
    if len(windows) == 0:
        return 0
    first = np.sort(windows.astype("datetime64[D]"))
    end = windows.astype("datetime64[m]") + np.timedelta64(int(window_minutes) - 1, "m")
    last = np.sort(end.astype("datetime64[D]"))
    days = np.arange(first[0], last[-1] + np.timedelta64(1, "D"))
    # on day d: the windows begun by d, less those ended before it
    return int((np.searchsorted(first, days, "right") - np.searchsorted(last, days, "left")).max())
