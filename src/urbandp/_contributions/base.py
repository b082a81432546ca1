"""The contributions interface (docs/design.md: records -> grid -> contributions).

A backend turns validated records into one row per (cell, slot, day, vehicle) with

``cell`` (UInt64 H3), ``slot`` (Int16 slot index), ``day`` (Date), ``vehicle`` (String), ``n_records`` (UInt32),
``mean_speed`` (Float64: mean of the vehicle's speeds in the HAT that day after clipping to [0, speed_max]: the
per-vehicle-day value of Query 1, ITMS report IV C) and ``max_speed`` (Float64: the unclipped maximum, compared with
the speed limit in Query 2, IV D); with ``keep_speeds`` also ``speeds`` (List[Float64], clipped) for the user-level
mean estimators. The aggregation is exact and splits over days, so the same interface suits a Spark backend
(partition by day, then the release merges).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Protocol

import polars as pl

from urbandp._grid.h3cells import check_resolution
from urbandp._grid.slots import SlotSpec
from urbandp.errors import InputError

CONTRIBUTION_SCHEMA = {  # one row per vehicle-day x HAT: what every backend returns
    "cell": pl.UInt64,
    "slot": pl.Int16,
    "day": pl.Date,
    "vehicle": pl.String,
    "n_records": pl.UInt32,
    "mean_speed": pl.Float64,
    "max_speed": pl.Float64,
}


@dataclass(frozen=True)
class ContributionSpec:
    """Grid, time window and the speed bound used for Query 1's per-vehicle-day means."""

    resolution: int = 7
    slots: SlotSpec = field(default_factory=SlotSpec)
    start: dt.date | None = None
    end: dt.date | None = None
    speed_max: float = 65.0
    keep_speeds: bool = False
    days: tuple[dt.date, ...] | None = None  # a public day set inside start..end (None: every calendar day)

    def __post_init__(self) -> None:
        check_resolution(self.resolution)
        if self.start and self.end and self.start > self.end:
            raise InputError(f"start {self.start} is after end {self.end}", parameters=("start", "end"))
        if not self.speed_max > 0:
            raise InputError("speed_max must be > 0", parameters="speed_max")


class ContributionBackend(Protocol):
    name: str

    def contributions(self, records: pl.DataFrame | pl.LazyFrame, spec: ContributionSpec) -> pl.DataFrame:
        """Per (cell, slot, day, vehicle) aggregates of valid records inside the window."""
        ...
