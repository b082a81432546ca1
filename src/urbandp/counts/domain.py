"""The public domain of a count table: days x taps x 15-minute bins x places (mode, location).

DESIGN.md privacy rule 4: the domain is public (read from a file), so every cell -- zeros included -- is released
with noise. Culnane, Rubinstein and Teague (2017), section 3: skipping zeros is what made the Opal release fail
epsilon-DP. The dense layout (C order, axes ``day, tap, bin, place``) lets a 10-million-cell joint table be noised
and marginalised as numpy arrays.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from urbandp.errors import InputError

AXES = ("day", "tap", "bin", "place")


@dataclass(frozen=True)
class CountDomain:
    """Public categories of every dimension; ``places`` are (mode, location) pairs (locations are per mode)."""

    days: tuple[str, ...]
    taps: tuple[str, ...]
    bin_minutes: int
    places: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        if not self.days or not self.taps or not self.places:
            raise InputError("domain needs at least one day, one tap and one place")
        if self.bin_minutes <= 0 or (24 * 60) % self.bin_minutes:
            raise InputError(f"bin_minutes must divide 1440, got {self.bin_minutes}")
        for name, values in (("days", self.days), ("taps", self.taps), ("places", self.places)):
            if len(set(values)) != len(values):
                raise InputError(f"domain {name} has duplicates")

    @property
    def bins(self) -> tuple[str, ...]:
        return tuple(f"{m // 60:02d}:{m % 60:02d}" for m in range(0, 24 * 60, self.bin_minutes))

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m for m, _ in self.places))

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return (len(self.days), len(self.taps), len(self.bins), len(self.places))

    @property
    def n_cells(self) -> int:
        return int(np.prod(self.shape))

    def place_mode_index(self) -> np.ndarray:
        """For each place, the index of its mode in :attr:`modes`."""
        modes = {m: i for i, m in enumerate(self.modes)}
        return np.array([modes[m] for m, _ in self.places], dtype=np.int64)

    def to_json(self) -> dict[str, object]:
        places: dict[str, list[str]] = {}
        for m, loc in self.places:
            places.setdefault(m, []).append(loc)
        return {
            "days": list(self.days),
            "taps": list(self.taps),
            "bin_minutes": self.bin_minutes,
            "places": places,
        }

    @classmethod
    def from_json(cls, obj: object) -> CountDomain:
        """Build from ``{"days": [...], "taps": [...], "bin_minutes": 15, "places": {mode: [locations]}}``.

        ``days`` may instead be ``{"start": "2016-08-08", "end": "2016-08-14"}`` (inclusive).
        """
        if not isinstance(obj, dict):
            raise InputError("domain must be a JSON object")
        for key in ("days", "places"):
            if key not in obj:
                raise InputError(f"domain is missing '{key}'")
        days = obj["days"]
        if isinstance(days, dict):
            try:
                start, end = dt.date.fromisoformat(days["start"]), dt.date.fromisoformat(days["end"])
            except (KeyError, ValueError, TypeError) as err:
                raise InputError(f"domain days range is unusable: {err}") from None
            days = [(start + dt.timedelta(d)).isoformat() for d in range((end - start).days + 1)]
        places = obj["places"]
        if not isinstance(places, dict) or not all(isinstance(v, list) for v in places.values()):
            raise InputError("domain 'places' must map each mode to a list of locations")
        return cls(
            days=tuple(str(d) for d in days),
            taps=tuple(str(t) for t in obj.get("taps", ["on", "off"])),
            bin_minutes=int(obj.get("bin_minutes", 15)),
            places=tuple((str(m), str(loc)) for m, locs in places.items() for loc in locs),
        )

    @classmethod
    def from_file(cls, path: Path) -> CountDomain:
        if not path.is_file():
            raise InputError(f"domain file not found: {path}")
        try:
            obj = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise InputError(f"domain file {path} is not valid JSON: {err}") from None
        return cls.from_json(obj)
