"""Column mapping from an input's own names to urbandp's canonical record columns.

Canonical columns (docs/design.md: one name per concept): ``vehicle`` (the privacy unit's id), ``timestamp``,
``latitude``, ``longitude``, ``speed``. The IUDX ITMS shape (``license_plate``, ``observationDateTime``, nested
``location.coordinates = [longitude, latitude]``, ``speed``) is recognised as is; other shapes are mapped by a
TOML config or CLI flags.
"""

from __future__ import annotations

from dataclasses import dataclass

from urbandp.errors import InputError

CANONICAL = ("vehicle", "timestamp", "latitude", "longitude", "speed")

# Candidate source names per canonical column, tried in order when no explicit mapping is given.
_CANDIDATES: dict[str, tuple[str, ...]] = {
    "vehicle": ("license_plate", "vehicle_id", "vehicle", "vehicle_label", "bus_id"),
    "timestamp": ("observationDateTime", "timestamp", "time", "datetime"),
    "latitude": ("latitude", "lat"),
    "longitude": ("longitude", "lon", "lng", "long"),
    "speed": ("speed",),
    "coordinates": ("location.coordinates", "location"),  # one [longitude, latitude] pair (the ITMS shape)
}


@dataclass(frozen=True)
class ColumnMapping:
    """Source column name for each canonical column; ``coordinates`` set means a [lon, lat] pair column."""

    vehicle: str
    timestamp: str
    speed: str
    latitude: str | None = None
    longitude: str | None = None
    coordinates: str | None = None

    @classmethod
    def resolve(cls, columns: list[str], overrides: dict[str, str] | None = None) -> ColumnMapping:
        """Pick source columns for each canonical column, honouring explicit ``overrides``.

        Raises :class:`InputError` naming the missing column when a required one cannot be found.
        """
        overrides = {k: v for k, v in (overrides or {}).items() if v}
        unknown = set(overrides) - set(_CANDIDATES)
        if unknown:
            raise InputError(f"unknown column mapping key(s): {', '.join(sorted(unknown))}")
        present = set(columns)

        def pick(name: str) -> str | None:
            if name in overrides:
                if overrides[name] not in present:
                    raise InputError(f"mapped column '{overrides[name]}' (for {name}) not found in input")
                return overrides[name]
            return next((c for c in _CANDIDATES[name] if c in present), None)

        found = {name: pick(name) for name in _CANDIDATES}
        placed = found["latitude"] is not None and found["longitude"] is not None
        if "coordinates" not in overrides and placed:
            found["coordinates"] = None  # latitude and longitude columns win over a pair found by its name
        missing = [n for n in ("vehicle", "timestamp", "speed") if found[n] is None]
        if found["coordinates"] is None and not placed:
            missing.append("latitude/longitude (or location.coordinates)")
        if missing:
            raise InputError(
                f"missing required columns: {', '.join(missing)}; "
                "map them with column NAME=SOURCE or a [columns] table in the config",
                parameters="column",
            )
        if found["coordinates"] is not None:
            found["latitude"] = found["longitude"] = None
        mapping = cls(**found)  # type: ignore[arg-type]  # vehicle, timestamp and speed: found above
        mapping.check_given(overrides)
        return mapping

    def check_given(self, overrides: dict[str, str]) -> None:
        """Every role reads its own column, and every mapping given is used: ``latitude=speed`` (a role mapped to
        another role's column) and a latitude mapped beside a coordinates pair are refused, never read silently."""
        used = {
            role: source
            for role in (*CANONICAL, "coordinates")
            if (source := getattr(self, role)) is not None
        }
        by_source: dict[str, list[str]] = {}
        for role, source in used.items():
            by_source.setdefault(source, []).append(role)
        for source, roles in by_source.items():
            if len(roles) > 1:
                raise InputError(
                    f"column: '{source}' would be read as {' and as '.join(roles)}; each role needs a source "
                    "of its own (map each with column NAME=SOURCE)",
                    parameters="column",
                )
        unused = [role for role in overrides if role not in used]
        if unused:
            raise InputError(
                f"column: {', '.join(f'{r}={overrides[r]}' for r in unused)} is not used: the positions are read "
                f"from the [longitude, latitude] pairs of '{self.coordinates}'; map both latitude and longitude, or "
                "coordinates, not one of each",
                parameters="column",
            )
