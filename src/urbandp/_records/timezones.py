"""Zone-aware timestamps: a typed timestamp column with a time zone is an instant, read in the release's zone.

Hour slots are local hours. A column of instants (pandas ``datetime64[ns, UTC]``, a Polars ``Datetime`` with a
``time_zone``, an Arrow or Parquet ``timestamp`` with a ``tz``) does not say which wall clock is meant, so it is
converted to the release's zone (``timezone``, else the ``agency_timezone`` of the domain's GTFS feed,
:func:`feed_timezone`) and refused when no zone is known (docs/records.md, section "Timestamps"). ISO text with a UTC
offset is read by :mod:`urbandp._records.validation`. Fixed offsets (pandas ``UTC+05:30``, Arrow ``+05:30``), which
Polars does not take as a time zone, are read as the same instants in UTC (:func:`arrow_schema_in_utc`,
:func:`pandas_in_utc`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from urbandp._records.validation import ValidationOptions, polars_reads_zone
from urbandp.errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa


def arrow_schema_in_utc(schema: pa.Schema) -> pa.Schema | None:
    """``schema`` with every timestamp whose zone Polars cannot read (a fixed offset) in UTC instead, or None when
    there is none. The stored values are UTC instants either way (Arrow and Parquet store instants), so only the
    label changes."""
    import pyarrow as pa

    fixed = [pa.types.is_timestamp(f.type) and f.type.tz and not polars_reads_zone(f.type.tz) for f in schema]
    if not any(fixed):
        return None
    fields = [
        f.with_type(pa.timestamp(f.type.unit, "UTC")) if o else f for f, o in zip(schema, fixed, strict=True)
    ]
    return pa.schema(fields, metadata=schema.metadata)


def arrow_in_utc(table: Any) -> Any:
    """A PyArrow table (or record batch) with fixed-offset timestamps relabelled UTC (same instants)."""
    if not hasattr(table, "schema") or not hasattr(table, "cast"):
        return table
    schema = arrow_schema_in_utc(table.schema)
    return table if schema is None else table.cast(schema)


def pandas_in_utc(frame: Any) -> Any:
    """A pandas frame whose zone-aware columns with a fixed offset (``datetime64[ns, UTC+05:30]``) are converted to
    UTC (same instants); other columns, and IANA zones, as they are."""
    import pandas as pd

    fixed = [
        name
        for name, dtype in frame.dtypes.items()
        if isinstance(dtype, pd.DatetimeTZDtype) and not polars_reads_zone(str(dtype.tz))
    ]
    if not fixed:
        return frame
    return frame.assign(**{str(name): frame[name].dt.tz_convert("UTC") for name in fixed})


def check_instants(dtype: object, column: str, timezone: str | None) -> None:
    """Refuse a zone-aware timestamp column (instants) when the release's time zone is unknown (one line naming
    ``timezone``): its hours would otherwise be the column's zone's hours (UTC for ``pd.to_datetime(...,
    utc=True)``), not the local hours the slots mean."""
    if timezone is not None or not isinstance(dtype, pl.Datetime) or dtype.time_zone is None:
        return
    _refuse_instants(column, dtype.time_zone)


def _refuse_instants(column: str, zone: str) -> None:
    raise InputError(
        f"the timestamp column '{column}' holds instants (zone-aware, {zone}), and the release's time "
        "zone is unknown: give timezone (an IANA zone such as America/Chicago) or a GTFS domain with "
        "agency_timezone, so the hour slots are local hours",
        parameters="timezone",
    )


def feed_timezone(feed: Path) -> str | None:
    """The ``agency_timezone`` of a GTFS feed (a folder or a zip), or None when the feed, its ``agency.txt`` or that
    column is absent or cannot be read (the domain's reader, the same
    :func:`urbandp._records.gtfs_schedule.read_feed`, says what is wrong with the feed). Several different zones,
    or one Polars does not know, are refused in one line naming ``domain_gtfs`` and ``timezone`` (the GTFS
    reference requires one zone per feed)."""
    from urbandp._records.gtfs_schedule import _Table, read_feed

    try:
        files = read_feed(Path(feed), ("agency.txt",), digest=False)
        table = _Table.read(files.files, "agency.txt", (), ("agency_timezone",), files.what).frame
    except InputError:
        return None
    zones = sorted(set(table["agency_timezone"].drop_nulls().to_list()))
    if not zones:
        return None
    if len(zones) > 1:
        raise InputError(
            f"domain_gtfs: agency.txt of {Path(feed).name} names several time zones ({', '.join(zones)}); give "
            "timezone",
            parameters=("domain_gtfs", "timezone"),
        )
    if not polars_reads_zone(zones[0]):
        raise InputError(
            f"domain_gtfs: agency.txt of {Path(feed).name} names an unknown time zone '{zones[0]}'; give timezone",
            parameters=("domain_gtfs", "timezone"),
        )
    return zones[0]


def with_feed_zone(options: ValidationOptions, feed: Path | None) -> ValidationOptions:
    """``options`` with the release's time zone: ``options.timezone`` when given, else the ``agency_timezone`` of
    the GTFS domain ``feed`` (:func:`feed_timezone`), else none (a zone-aware column is then refused)."""
    if options.timezone is not None or feed is None:
        return options
    zone = feed_timezone(Path(feed))
    return options if zone is None else dataclasses.replace(options, timezone=zone)


def check_parquet_instants(
    files: Sequence[Path], columns: dict[str, str] | None, timezone: str | None
) -> None:
    """:func:`check_instants` on the timestamp column of each Parquet file in ``files``, from its schema alone (the footer):
    for an engine that reads the files itself (Spark), so it refuses what the default engine refuses. A file
    whose columns do not map is left to that engine's own message."""
    if timezone is not None:
        return
    import pyarrow.parquet as pq

    from urbandp._records.schema import ColumnMapping

    for path in files:
        try:
            schema = pq.read_schema(path)
            mapping = ColumnMapping.resolve(list(schema.names), columns)
        except (InputError, OSError, ValueError):
            continue
        zone = getattr(schema.field(mapping.timestamp).type, "tz", None)
        if zone:
            _refuse_instants(mapping.timestamp, str(zone))
