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
}
# Where the coordinates may arrive as one [longitude, latitude] pair (the ITMS shape).
COORDINATE_PAIR_COLUMNS = ("location.coordinates", "location")


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
        unknown = set(overrides) - set(CANONICAL) - {"coordinates"}
        if unknown:
            raise InputError(f"unknown column mapping key(s): {', '.join(sorted(unknown))}")
        present = set(columns)

        def pick(name: str) -> str | None:
            if name in overrides:
                if overrides[name] not in present:
                    raise InputError(f"mapped column '{overrides[name]}' (for {name}) not found in input")
                return overrides[name]
            return next((c for c in _CANDIDATES[name] if c in present), None)

        found = {name: pick(name) for name in CANONICAL}
        coordinates = overrides.get("coordinates")
        if coordinates is not None and coordinates not in present:
            raise InputError(f"mapped column '{coordinates}' (for coordinates) not found in input")
        if coordinates is None and (found["latitude"] is None or found["longitude"] is None):
            coordinates = next((c for c in COORDINATE_PAIR_COLUMNS if c in present), None)
        missing = [n for n in ("vehicle", "timestamp", "speed") if found[n] is None]
        if coordinates is None and (found["latitude"] is None or found["longitude"] is None):
            missing.append("latitude/longitude (or location.coordinates)")
        if missing:
            raise InputError(
                f"missing required columns: {', '.join(missing)}; "
                "map them with column NAME=SOURCE or a [columns] table in the config",
                parameters="column",
            )
        mapping = cls(
            vehicle=found["vehicle"],  # type: ignore[arg-type]
            timestamp=found["timestamp"],  # type: ignore[arg-type]
            speed=found["speed"],  # type: ignore[arg-type]
            latitude=None if coordinates else found["latitude"],
            longitude=None if coordinates else found["longitude"],
            coordinates=coordinates,
        )
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
