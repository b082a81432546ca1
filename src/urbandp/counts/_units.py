"""Privacy units, their neighbouring relation and the sensitivities of a count table.

A count table (one count per cell) under *add/remove one privacy unit*:

* ``event``: one tap is added or removed; it touches one cell by 1, so L1 = L2 = LInf = 1 (Dwork et al. 2006).
* ``card-day`` with at most ``k`` events (truncation keeps a card's first ``k`` taps of a day) and at most
  ``m`` events of one card-day in one cell: a card-day changes at most ``k`` cells, its L1 change is at most
  ``k``; its L2 change is largest when the ``k`` events are packed ``m`` to a cell, so
  ``L2^2 = floor(k/m) m^2 + (k mod m)^2``. With ``m = 1`` that is ``sqrt(k)``; with ``m = k`` it is ``k``
  (``sqrt(k)`` would be wrong when one card can tap twice into the same cell). LInf (one cell) = ``m``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from urbandp.errors import InputError


@dataclass(frozen=True)
class PrivacyUnit:
    """``kind`` is ``event`` or ``card-day``; ``max_events`` = k; ``max_per_cell`` = m."""

    kind: str = "event"
    max_events: int = 1
    max_per_cell: int = 1
    bounding: str = (
        "truncation"  # "truncation" (urbandp truncates the events) or "declared" (pre-aggregated input)
    )

    def __post_init__(self) -> None:
        if self.kind not in ("event", "card-day"):
            raise InputError(f"unit must be 'event' or 'card-day', got {self.kind!r}")
        if self.kind == "event" and (self.max_events != 1 or self.max_per_cell != 1):
            object.__setattr__(self, "max_events", 1)
            object.__setattr__(self, "max_per_cell", 1)
        if self.max_events < 1 or self.max_per_cell < 1:
            raise InputError("max events per card-day and per cell must be >= 1")
        if self.max_per_cell > self.max_events:
            object.__setattr__(self, "max_per_cell", self.max_events)

    @property
    def name(self) -> str:
        if self.kind == "event":
            return "event"
        return f"card-day (at most {self.max_events} event{'s' if self.max_events != 1 else ''})"

    @property
    def neighbouring(self) -> str:
        if self.bounding == "declared" and self.kind == "card-day":
            return (
                f"add/remove one {self.name}, IF the pre-aggregated counts were bounded upstream as declared "
                f"(max_events={self.max_events}, max_per_cell={self.max_per_cell}): urbandp cannot verify it "
                "from counts; the guarantee holds only for that declared bounding"
            )
        return f"add/remove one {self.name}"

    @property
    def l1(self) -> int:
        return self.max_events

    @property
    def l2_squared(self) -> int:
        k, m = self.max_events, self.max_per_cell
        return (k // m) * m * m + (k % m) ** 2

    @property
    def l2(self) -> float:
        return math.sqrt(self.l2_squared)

    @property
    def linf(self) -> int:
        return self.max_per_cell

    @property
    def l0(self) -> int:
        """Number of cells one unit can touch."""
        return self.max_events

    def to_json(self) -> dict[str, object]:
        return {
            "unit": self.name,
            "neighbouring": self.neighbouring,
            "max_events": self.max_events,
            "max_per_cell": self.max_per_cell,
            "bounding": "truncation in urbandp"
            if self.bounding == "truncation"
            else "declared upstream, not verified (pre-aggregated counts)",
            "sensitivity": {"l0": self.l0, "l1": self.l1, "l2": self.l2, "linf": self.linf},
        }
