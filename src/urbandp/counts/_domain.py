"""The public domain of a count table: days x taps x 15-minute bins x places (mode, location).

docs/design.md privacy rule 4: the domain is public (read from a file), so every cell -- zeros included -- is released
with noise. Culnane, Rubinstein and Teague (2017), section 3: skipping zeros is what made the Opal release fail
epsilon-DP. The dense layout (C order, axes ``day, tap, bin, place``) lets a 10-million-cell joint table be noised
and marginalised as numpy arrays.

The domain file is validated by a pydantic model (:class:`DomainFile`); its errors become one
:class:`~urbandp.errors.InputError` line each, naming the key and showing an example (:func:`_one_line`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError, field_validator
from pydantic_core import ErrorDetails

from urbandp.errors import InputError

#: at most this many days (a century) in a domain
MAX_DAYS = 36_600
#: bytes per cell the dense path holds at once (raw int64, noise int64, released float64, mask, marginal temporaries)
DENSE_BYTES_PER_CELL = 40


KEYS = ("days", "taps", "bin_minutes", "places")
RANGE_EXAMPLE = '{"start": "2016-08-08", "end": "2016-08-14"}'
#: what each key must be, for the error line of a value that is not
EXPECTED = {
    "days": 'domain "days" must be a list of dates or {{"start": "YYYY-MM-DD", "end": "YYYY-MM-DD"}}, got {kind}',
    "taps": 'domain "taps" must be a list of strings such as ["on", "off"], got {value!r}',
    "bin_minutes": 'domain "bin_minutes" must be an integer number of minutes such as 15, got {value!r}',
    "places": 'domain "places" must map each mode to a list of locations, e.g. {{"bus": ["2000"]}}',
}


def _days_of_range(days: dict[Any, Any]) -> list[str]:
    """The days of ``{"start": ..., "end": ...}`` (inclusive, ISO dates), at most :data:`MAX_DAYS`."""
    try:
        start, end = dt.date.fromisoformat(days["start"]), dt.date.fromisoformat(days["end"])
    except (KeyError, ValueError, TypeError) as err:
        raise ValueError(f"domain days range is unusable ({err}); example: {RANGE_EXAMPLE}") from None
    n_days = (end - start).days + 1
    if n_days < 1:
        raise ValueError(f"domain days range ends ({end}) before it starts ({start})")
    if n_days > MAX_DAYS:
        raise ValueError(f"domain days range has {n_days:,} days; at most {MAX_DAYS:,} are supported")
    return [(start + dt.timedelta(d)).isoformat() for d in range(n_days)]


class DomainFile(BaseModel):
    """The domain JSON: ``{"days": [...], "taps": [...], "bin_minutes": 15, "places": {mode: [locations]}}``.

    ``days`` may instead be ``{"start": "2016-08-08", "end": "2016-08-14"}`` (inclusive), expanded here;
    ``taps`` defaults to ``["on", "off"]`` and ``bin_minutes`` to 15. Strict types: a number is not a date or a
    tap, ``true`` and ``15.0`` are not minutes; a location is a string or an integer (a stop number).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    days: list[StrictStr]
    taps: list[StrictStr] = ["on", "off"]
    bin_minutes: StrictInt = 15
    places: dict[StrictStr, list[StrictStr | StrictInt]]

    @field_validator("days", mode="before")
    @classmethod
    def _expand_range(cls, value: object) -> object:
        return _days_of_range(value) if isinstance(value, dict) else value


def _one_line(err: ValidationError, obj: dict[Any, Any]) -> str:
    """The first problem of a domain file, in the order a reader fixes them: missing keys, unknown keys, values."""
    errors: list[ErrorDetails] = err.errors()
    missing = [str(e["loc"][0]) for e in errors if e["type"] == "missing"]
    if missing:
        return f"domain is missing '{missing[0]}'"
    unknown = sorted(str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden")
    if unknown:
        return f"domain has unknown key(s) {', '.join(unknown)} (known: {', '.join(KEYS)})"
    key = min((str(e["loc"][0]) for e in errors), key=KEYS.index)
    first = next(e for e in errors if e["loc"][0] == key)
    if key == "days" and isinstance(obj["days"], dict):
        return str(first.get("ctx", {}).get("error", first["msg"]))
    value = obj[key]
    return EXPECTED[key].format(value=value, kind=type(value).__name__)


def available_memory_bytes() -> int:
    """MemAvailable from /proc/meminfo (Linux), else total physical memory."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


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

    def check_fits(self, dense: bool, available: int | None = None) -> None:
        """Refuse, before any allocation, a domain whose arrays do not fit in memory (one line: cells, bytes)."""
        available = available_memory_bytes() if available is None else available
        d, t, b, p = self.shape
        cells = self.n_cells
        need = 8 * 4 * (d * t * p + d * t * b * len(self.modes))  # the two marginals (+ temporaries)
        if dense:
            need += DENSE_BYTES_PER_CELL * cells
        if cells >= 2**62 or need > available:
            what = "the dense release" if dense else "the marginal tables"
            raise InputError(
                f"domain too large: {cells:,} cells ({d} days x {t} taps x {b} bins x {p} places); "
                f"{what} would need about {need / 2**30:,.1f} GiB ({need:,} bytes), "
                f"{available / 2**30:,.1f} GiB available"
                + (
                    "; with suppress_below, sparse sampling needs memory only for non-zero cells"
                    if dense
                    else ""
                ),
                parameters="suppress_below",
            )

    def place_mode_index(self) -> np.ndarray:
        """For each place, the index of its mode in :attr:`modes`."""
        modes = {m: i for i, m in enumerate(self.modes)}
        return np.array([modes[m] for m, _ in self.places], dtype=np.int64)

    def to_json(self) -> dict[str, object]:
        return {
            "days": list(self.days),
            "taps": list(self.taps),
            "bin_minutes": self.bin_minutes,
            "places": {m: [loc for mode, loc in self.places if mode == m] for m in self.modes},
        }

    @classmethod
    def from_json(cls, obj: object) -> CountDomain:
        """Build from the domain JSON (:class:`DomainFile`); any problem is one :class:`InputError` line."""
        if not isinstance(obj, dict):
            raise InputError("domain must be a JSON object")
        try:
            model = DomainFile.model_validate(obj)
        except ValidationError as err:
            raise InputError(_one_line(err, obj)) from None
        return cls(
            days=tuple(model.days),
            taps=tuple(model.taps),
            bin_minutes=model.bin_minutes,
            places=tuple((m, str(loc)) for m, locs in model.places.items() for loc in locs),
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
