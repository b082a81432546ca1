"""GeoJSON (RFC 7946), read in one place: the fleet's public domain and the maps' context.

:func:`geojson_parts` walks a parsed GeoJSON value (features, collections) and checks every position is
longitude/latitude; :func:`read_geojson` reads a public file (:func:`urbandp._records.gtfs_schedule.read_public_file`:
a regular file within the size cap) and walks it. Every problem is one :class:`~urbandp.errors.InputDataError` line
naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from urbandp._records.gtfs_schedule import read_public_file
from urbandp.errors import InputDataError


def read_geojson(path: Path) -> tuple[bytes, list[np.ndarray], list[np.ndarray], list[dict[str, Any]]]:
    """A GeoJSON file's bytes and its geometries (:func:`geojson_parts`); a file that is not GeoJSON is refused
    in one line."""
    raw = read_public_file(path, "GeoJSON")
    what = f"GeoJSON {path}"
    try:
        value = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputDataError(f"{what}: not readable JSON ({err})") from None
    return (raw, *geojson_parts(value, what))


def geojson_parts(
    value: object, what: str
) -> tuple[list[np.ndarray], list[np.ndarray], list[dict[str, Any]]]:
    """The geometries of a GeoJSON value: lines (polygon rings included) and points as [lon, lat] arrays, and the
    polygons; ``what`` names the source in the one-line errors."""
    lines: list[np.ndarray] = []
    points: list[np.ndarray] = []
    polygons: list[dict[str, Any]] = []
    for geometry in _geometries(value, what):
        _collect(geometry, what, lines, points, polygons)
    return lines, points, polygons


def _geometries(value: object, what: str) -> Iterator[dict[str, Any]]:
    """The geometry objects of a GeoJSON value (collections and features walked)."""
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise InputDataError(f"{what}: not a GeoJSON object (no type member)")
    kind = value["type"]
    if kind in ("FeatureCollection", "GeometryCollection"):
        key = "features" if kind == "FeatureCollection" else "geometries"
        members = value.get(key)
        if not isinstance(members, list):
            raise InputDataError(f"{what}: {kind} without a {key} array")
        for member in members:
            if key == "features" and (not isinstance(member, dict) or member.get("type") != "Feature"):
                raise InputDataError(f"{what}: a member of features is not a Feature")
            yield from _geometries(member, what)
    elif kind == "Feature":
        if "geometry" not in value:
            raise InputDataError(f"{what}: a Feature without a geometry member")
        if value["geometry"] is not None:
            yield from _geometries(value["geometry"], what)
    else:
        yield value


def _positions(coords: object, depth: int, what: str, kind: str) -> list[np.ndarray]:
    """Arrays ``(n, 2)`` of [lon, lat] at nesting ``depth`` (1: a line or ring, 2: lines or rings, ...)."""
    if not isinstance(coords, list):
        raise InputDataError(f"{what}: {kind} coordinates are not an array")
    if depth > 1:
        return [a for c in coords for a in _positions(c, depth - 1, what, kind)]
    try:
        array = np.array([p[:2] for p in coords], dtype=np.float64).reshape(-1, 2)
        if any(len(p) < 2 for p in coords):
            raise ValueError
    except (TypeError, ValueError, IndexError):
        raise InputDataError(f"{what}: {kind} has a position that is not [longitude, latitude]") from None
    ok = np.isfinite(array).all(axis=1) & (np.abs(array[:, 0]) <= 180) & (np.abs(array[:, 1]) <= 90)
    if not ok.all():
        lon, lat = array[np.flatnonzero(~ok)[0]]
        raise InputDataError(
            f"{what}: position [{lon}, {lat}] is not longitude/latitude (GeoJSON is WGS84 degrees, RFC 7946); "
            "convert the file first, e.g. ogr2ogr -t_srs EPSG:4326"
        )
    return [array]


GEOMETRY_DEPTHS = {
    "Point": 0,
    "MultiPoint": 1,
    "LineString": 1,
    "MultiLineString": 2,
    "Polygon": 2,
    "MultiPolygon": 3,
}
"""How deep each geometry type nests its positions (RFC 7946 section 3.1; a Point is read as a one-position list)."""


def _collect(
    geometry: dict[str, Any],
    what: str,
    lines: list[np.ndarray],
    points: list[np.ndarray],
    polygons: list[dict[str, Any]],
) -> None:
    kind = geometry["type"]
    if kind not in GEOMETRY_DEPTHS:
        raise InputDataError(f"{what}: unknown geometry type {kind!r}")
    coords = geometry.get("coordinates")
    arrays = _positions([coords] if kind == "Point" else coords, GEOMETRY_DEPTHS[kind], what, kind)
    if kind.endswith("Point"):
        points.extend(arrays)
    elif kind.endswith("Polygon"):
        if any(r.shape[0] < 4 for r in arrays):
            raise InputDataError(f"{what}: a {kind} ring has fewer than 4 positions (RFC 7946 3.1.6)")
        lines.extend(arrays)  # the rings, walked as lines
        polygons.append({"type": kind, "coordinates": coords})
    else:
        lines.extend(arrays)
