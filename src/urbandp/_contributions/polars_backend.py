"""Polars in-process backend for the record-level stage (ITMS report IV A-D, the per-record part)."""

from __future__ import annotations

import polars as pl

from urbandp._contributions.base import ContributionSpec
from urbandp._grid.h3cells import cell_expr


def window_filter(spec: ContributionSpec) -> pl.Expr:
    """Records inside the date window and the daily hour window (filtered before H3: halves the H3 work)."""
    ts = pl.col("timestamp")
    keep = spec.slots.in_window_expr(ts)
    if spec.start is not None:
        keep &= ts.dt.date() >= pl.lit(spec.start)
    if spec.end is not None:
        keep &= ts.dt.date() <= pl.lit(spec.end)
    if spec.days is not None:
        keep &= ts.dt.date().is_in(pl.lit(pl.Series(spec.days, dtype=pl.Date)).implode())
    return keep


def hat_keys(spec: ContributionSpec, cell: pl.Expr | None = None) -> list[pl.Expr]:
    """A record's HAT key and day: ``cell`` (default: the H3 cell of its position), ``slot`` and ``day`` of its
    ``timestamp`` (wall-clock time)."""
    ts = pl.col("timestamp")
    return [
        (cell_expr(spec.resolution) if cell is None else cell).alias("cell"),
        spec.slots.slot_expr(ts).alias("slot"),
        ts.dt.date().alias("day"),
    ]


def keyed_records(records: pl.LazyFrame, spec: ContributionSpec) -> pl.LazyFrame:
    """The records inside the window, each as ``cell, slot, day, vehicle, speed`` (a ``cell`` column computed
    upstream, by ``pipeline.load_records`` at the same resolution, is reused)."""
    has_cell = "cell" in records.collect_schema().names()
    keys = hat_keys(spec, pl.col("cell") if has_cell else None)
    return records.filter(window_filter(spec)).select(*keys, pl.col("vehicle"), pl.col("speed"))


class PolarsBackend:
    name = "polars"

    def contributions(self, records: pl.DataFrame | pl.LazyFrame, spec: ContributionSpec) -> pl.DataFrame:
        clipped = pl.col("speed").clip(0.0, spec.speed_max)
        aggs = [
            pl.len().cast(pl.UInt32).alias("n_records"),
            clipped.mean().alias("mean_speed"),
            pl.col("speed").max().alias("max_speed"),
        ]
        if spec.keep_speeds:
            aggs.append(clipped.alias("speeds"))
        return (
            keyed_records(records.lazy(), spec)
            .group_by("cell", "slot", "day", "vehicle")
            .agg(aggs)
            .with_columns(pl.col("vehicle").cast(pl.String))
            .collect(engine="streaming")
        )
