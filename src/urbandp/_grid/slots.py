"""Time slots within a day (ITMS report section II B, steps 4-5: 24 one-hour slots, 09:00-21:00 kept)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from urbandp.errors import InputError


@dataclass(frozen=True)
class SlotSpec:
    """Slots of ``slot_minutes`` within the daily window ``[start_hour, end_hour)``; with ``merge`` above 1 (a
    coarser level), slots of ``merge`` consecutive base slots counted from the window's start, each indexed by its
    first base slot (so keys of different levels compare), the last one possibly shorter."""

    slot_minutes: int = 60
    start_hour: int = 9
    end_hour: int = 21
    merge: int = 1

    def __post_init__(self) -> None:
        if self.slot_minutes <= 0 or 1440 % self.slot_minutes:
            raise InputError(
                f"slot length must divide a day (e.g. 15, 30, 60, 120 minutes), got {self.slot_minutes}"
            )
        if not (0 <= self.start_hour < self.end_hour <= 24):
            raise InputError(
                f"hour window must satisfy 0 <= start < end <= 24, got {self.start_hour}-{self.end_hour}"
            )
        if (self.start_hour * 60) % self.slot_minutes or (self.end_hour * 60) % self.slot_minutes:
            raise InputError("the hour window must start and end on slot boundaries")

    @property
    def slots(self) -> list[int]:
        """Slot indices (minutes since midnight // slot_minutes) inside the window, every ``merge``-th."""
        first, end = self.start_hour * 60 // self.slot_minutes, self.end_hour * 60 // self.slot_minutes
        return list(range(first, end, self.merge))

    def label(self, slot: int) -> str:
        """``"09:00-10:00"`` for slot 9 of 60 minutes (``"09:00-11:00"`` merging 2)."""
        a = slot * self.slot_minutes
        b = min(slot + self.merge, self.end_hour * 60 // self.slot_minutes) * self.slot_minutes
        return f"{a // 60:02d}:{a % 60:02d}-{b // 60:02d}:{b % 60:02d}"

    def group(self, slot: pl.Expr) -> pl.Expr:
        """Index of the (merged) slot holding base (or merged) slot ``slot``."""
        first = self.start_hour * 60 // self.slot_minutes
        return (first + (slot.cast(pl.Int32) - first) // self.merge * self.merge).cast(pl.Int16)

    def slot_expr(self, timestamp: pl.Expr) -> pl.Expr:
        """Slot index of a timestamp (its wall-clock minutes since midnight // slot length)."""
        minutes = timestamp.dt.hour().cast(pl.Int32) * 60 + timestamp.dt.minute().cast(pl.Int32)
        return (minutes // self.slot_minutes).cast(pl.Int16)

    def in_window_expr(self, timestamp: pl.Expr) -> pl.Expr:
        hour = timestamp.dt.hour()
        return (hour >= self.start_hour) & (hour < self.end_hour)

    def label_expr(self, slot: pl.Expr) -> pl.Expr:
        return slot.replace_strict(self.slots, [self.label(s) for s in self.slots], return_dtype=pl.String)


def parse_hours(text: str) -> tuple[int, int]:
    """``"9-21"`` -> (9, 21)."""
    try:
        a, b = (int(x) for x in text.split("-"))
    except ValueError:
        raise InputError(f"hours must look like 9-21, got '{text}'", parameters="hours") from None
    return a, b
