"""``urbandp counts prepare``: a count table of any layout -> the long ``mode,day,tap,bin,location,count`` table and
a domain file, the inputs ``urbandp counts release --input-kind counts`` takes.

What it writes, and the Opal example, are in docs/counts.md, section "Tables of any layout". ``counts.csv`` is
the owner's raw table in another layout (NOT differentially private: the input of a release, not one). A domain
read off the data is public only when what it lists is public knowledge: a release over one that lists only where
people travelled discloses that list, so the command warns, and ``--places`` (a public list) removes the doubt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from urbandp._table_reader import read_table
from urbandp.counts._aggregate import COUNT_COLUMNS, MAX_COUNT
from urbandp.counts._columns import ColumnsLike, apply_columns, column_map, normalise_days
from urbandp.counts._domain import CountDomain
from urbandp.errors import InputDataError, InvalidParameterError

DAILY_BIN = "00:00"
DOMAIN_WARNING = (
    "domain.json lists the days, taps and places found in the input: a release over it is differentially "
    "private only if that list is public knowledge (e.g. every stop of the network); give a public list of "
    "places, or release with partition selection"
)
DAYS_WARNING = (
    "domain.json's days and taps are those found in the input: check that they are public knowledge (the "
    "published period)"
)


@dataclass
class Prepared:
    """The long table, its domain (a :class:`CountDomain`), the rows dropped with their reasons, and where the
    places came from (``places_from``: ``"data"`` or the public file)."""

    table: pl.DataFrame
    domain: CountDomain
    dropped: dict[str, int] = field(default_factory=dict)
    places_from: str = "data"

    @property
    def warnings(self) -> list[str]:
        return [DOMAIN_WARNING if self.places_from == "data" else DAYS_WARNING]

    def summary(self) -> dict[str, object]:
        d = self.domain
        return {
            "rows": self.table.height,
            "rows_dropped": sum(self.dropped.values()),
            "dropped_reasons": dict(self.dropped),
            "days": [d.days[0], d.days[-1]],
            "taps": list(d.taps),
            "bin_minutes": d.bin_minutes,
            "places": len(d.places),
            "places_from": self.places_from,
            "cells": d.n_cells,
        }


def _melt_taps(frame: pl.DataFrame, taps: Sequence[str]) -> pl.DataFrame:
    """A wide table whose ``taps`` are columns of counts -> one row per tap (``tap``, ``count``)."""
    missing = [t for t in taps if t not in frame.columns]
    if missing:
        raise InvalidParameterError(
            f"taps_as_columns: the input has no field {', '.join(map(repr, missing))} (its header: "
            f"{', '.join(frame.columns)})",
            parameters="taps_as_columns",
        )
    if "tap" in frame.columns or "count" in frame.columns:
        raise InvalidParameterError(
            "taps_as_columns: the input already has a field named tap or count", parameters="taps_as_columns"
        )
    keep = [c for c in frame.columns if c not in taps]
    return frame.unpivot(index=keep, on=list(taps), variable_name="tap", value_name="count")


def _bin_minutes(bins: pl.Series) -> int:
    """The largest bin width (minutes, dividing 1440) that puts every ``HH:MM`` bin of ``bins`` on a boundary."""
    return math.gcd(1440, *(int(h) * 60 + int(m) for h, m in (b.split(":") for b in bins.to_list())))


def _places(table: pl.DataFrame, places: Path | None) -> tuple[tuple[tuple[str, str], ...], str]:
    if places is None:
        pairs = table.select("mode", "location").unique().sort("mode", "location")
        return tuple(pairs.iter_rows()), "data"
    listed = read_table(places)
    if not {"mode", "location"} <= set(listed.columns):
        raise InvalidParameterError(
            f"places: {places} needs columns mode, location (it has {', '.join(listed.columns)})",
            parameters="places",
        )
    pairs = listed.select(pl.col("mode", "location").cast(pl.String)).drop_nulls().unique(maintain_order=True)
    return tuple(pairs.iter_rows()), str(places)


def prepare(
    data: Path,
    *,
    column: ColumnsLike = None,
    taps_as_columns: Sequence[str] | None = None,
    bin_minutes: int | None = None,
    places: Path | None = None,
) -> Prepared:
    """Read ``data`` (CSV or Parquet), map its columns (``column``: ``ROLE=NAME`` items, roles
    ``mode,day,tap,bin,location,count``), melt tap columns (``taps_as_columns``), and return the long table with
    its domain (module docstring). ``bin_minutes`` overrides the width read off the bins."""
    frame = read_table(Path(data))
    header = frame.columns
    mapping = column_map(column, "counts")
    if taps_as_columns and ("tap" in mapping or "count" in mapping):
        raise InvalidParameterError(
            "taps_as_columns makes the tap and count fields: do not map them too",
            parameters=("taps_as_columns", "column"),
        )
    frame = apply_columns(frame, mapping)
    if taps_as_columns:
        frame = _melt_taps(frame, list(taps_as_columns))
    daily = "bin" not in frame.columns
    if daily:
        frame = frame.with_columns(bin=pl.lit(DAILY_BIN))
    missing = [c for c in COUNT_COLUMNS if c not in frame.columns]
    if missing:
        raise InvalidParameterError(
            f"column: no field of the input has the role {', '.join(missing)} (its header: "
            f"{', '.join(header)}); map one, e.g. location=loc",
            parameters="column",
        )
    table = frame.select(pl.col(c).cast(pl.String).str.strip_chars() for c in COUNT_COLUMNS)
    n = pl.col("count").cast(pl.Int64, strict=False)
    bin_ok = pl.col("bin").str.contains(r"^([01]\d|2[0-3]):[0-5]\d$")
    day_ok = normalise_days(pl.col("day")).str.to_date("%Y-%m-%d", strict=False).is_not_null()
    reason = (
        pl.when(pl.any_horizontal(pl.col(c).is_null() | (pl.col(c) == "") for c in COUNT_COLUMNS))
        .then(pl.lit("missing value"))
        .when(n.is_null() | (n < 0) | (n > MAX_COUNT))
        .then(pl.lit("count is not a non-negative integer"))
        .when(~day_ok)
        .then(pl.lit("day is not a date (YYYY-MM-DD or YYYYMMDD)"))
        .when(~bin_ok)
        .then(pl.lit("bin is not a time HH:MM"))
    )
    table = table.with_columns(_reason=reason)
    dropped = dict(table.filter(pl.col("_reason").is_not_null())["_reason"].value_counts().iter_rows())
    table = table.filter(pl.col("_reason").is_null()).drop("_reason")
    if table.height == 0:
        raise InputDataError(
            f"no usable row in {data}: " + "; ".join(f"{r} ({k})" for r, k in dropped.items())
        )
    table = table.with_columns(day=normalise_days(pl.col("day")), count=n)
    table = table.group_by(COUNT_COLUMNS[:-1], maintain_order=True).agg(pl.col("count").sum())
    width = 1440 if daily else (bin_minutes or _bin_minutes(table["bin"].unique()))
    days = sorted(table["day"].unique().to_list())
    taps = table["tap"].unique(maintain_order=True).to_list()
    if set(taps) == {"on", "off"}:
        taps = ["on", "off"]
    pairs, source = _places(table, places)
    domain = CountDomain.from_json(
        {
            "days": {"start": days[0], "end": days[-1]},
            "taps": taps,
            "bin_minutes": width,
            "places": {m: [loc for mm, loc in pairs if mm == m] for m in dict.fromkeys(m for m, _ in pairs)},
        }
    )
    return Prepared(table.sort(COUNT_COLUMNS[:-1]), domain, dropped, source)
