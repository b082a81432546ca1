"""GeoParquet point inputs: the geometry column read into ``latitude``/``longitude``.

A GeoParquet file (https://geoparquet.org, versions 1.0 and 1.1) is a Parquet file whose key-value metadata holds
``geo``: JSON naming the ``primary_column`` and, per geometry column, its ``encoding`` (``WKB``) and ``crs``
(PROJJSON; absent means OGC:CRS84, longitude/latitude on WGS 84). The points are decoded with shapely
(``shapely.from_wkb``) into ``latitude`` and ``longitude`` columns beside the file's other columns, so the records
map and validate as any Parquet input. Only WGS 84 longitude/latitude is accepted (OGC:CRS84 or EPSG:4326; no
reprojection happens here; a PROJJSON without an identifier is recognised by pyproj): another CRS, or a geometry
that is not a point, is refused in one line. A plain Parquet file (no ``geo`` key) is scanned as it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from urbandp.errors import InputError

WGS84_IDS = {("OGC", "CRS84"), ("EPSG", "4326"), ("OGC", "CRS84H")}
"""CRS identifiers (authority, code) read as longitude/latitude on WGS 84."""


def geo_metadata(path: Path) -> dict[str, Any] | None:
    """The parsed ``geo`` metadata of a Parquet file, or None for a plain Parquet file (footer only is read)."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(b"geo")
    if raw is None:
        return None
    try:
        geo = json.loads(raw)
    except ValueError:
        raise InputError(f"cannot read {path}: its GeoParquet 'geo' metadata is not JSON") from None
    if not isinstance(geo, dict) or not isinstance(geo.get("columns"), dict):
        raise InputError(f"cannot read {path}: its GeoParquet 'geo' metadata has no 'columns'")
    return geo


def crs_name(crs: object) -> str:
    """``AUTHORITY:CODE`` of a PROJJSON CRS (or its name, or the text given), for checks and messages."""
    if crs is None:
        return "OGC:CRS84"  # GeoParquet: an absent crs is OGC:CRS84
    if isinstance(crs, str):
        return crs
    if isinstance(crs, dict):
        ident = crs.get("id")
        if isinstance(ident, dict) and "authority" in ident and "code" in ident:
            return f"{ident['authority']}:{ident['code']}"
        if isinstance(crs.get("name"), str):
            return str(crs["name"])
    return "an unnamed CRS"


def check_wgs84(crs: object, path: Path, column: str) -> None:
    """Refuse a geometry column whose CRS is not WGS 84 longitude/latitude (one line naming the CRS). WGS 84 is
    known by its identifier (:data:`WGS84_IDS`), else, for a PROJJSON without one, by pyproj (``CRS.equals``
    OGC:CRS84, the axis order aside: GeoParquet's WKB is lon/lat whatever the CRS's own axis order)."""
    name = crs_name(crs)
    authority, _, code = name.upper().partition(":")
    if (authority, code) in WGS84_IDS:
        return
    if isinstance(crs, dict) and "type" in crs:
        from pyproj import CRS
        from pyproj.exceptions import CRSError

        try:
            if CRS.from_json_dict(crs).equals(CRS("OGC:CRS84"), ignore_axis_order=True):
                return
        except (CRSError, TypeError, ValueError):
            pass
    raise InputError(
        f"cannot read {path}: its geometry column '{column}' is in {name}; urbandp reads WGS 84 "
        "longitude/latitude only (OGC:CRS84 or EPSG:4326): reproject it first (e.g. ogr2ogr -t_srs EPSG:4326)"
    )


def points(wkb: pl.Series, path: Path, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(latitude, longitude) of WKB points; null geometries and empty points give NaN (quarantined as missing
    coordinates)."""
    import shapely

    values = wkb.to_numpy()
    try:
        geoms = shapely.from_wkb(values, on_invalid="raise")
    except Exception as err:  # shapely.errors.GEOSException for malformed WKB
        raise InputError(f"cannot read {path}: column '{column}' holds malformed WKB ({err})") from None
    present = ~shapely.is_missing(geoms)
    kinds = shapely.get_type_id(geoms[present])
    if kinds.size and not np.all(kinds == shapely.GeometryType.POINT):
        raise InputError(f"cannot read {path}: column '{column}' holds geometries that are not points")
    placed = present & ~shapely.is_empty(geoms)  # an empty point has no x or y (GEOS refuses to read them)
    lon = np.full(values.shape, np.nan)
    lat = np.full(values.shape, np.nan)
    lon[placed] = shapely.get_x(geoms[placed])
    lat[placed] = shapely.get_y(geoms[placed])
    return lat, lon


def scan_parquet_points(path: Path) -> pl.LazyFrame:
    """A Parquet file as a lazy frame; a GeoParquet file with its point geometry as ``latitude``/``longitude``.

    The geometry column itself is dropped (it is read once, eagerly, to decode the points).
    """
    geo = geo_metadata(path)
    if geo is None:
        return pl.scan_parquet(path)
    column = str(geo.get("primary_column") or next(iter(geo["columns"])))
    spec = geo["columns"].get(column)
    if not isinstance(spec, dict):
        raise InputError(f"cannot read {path}: its GeoParquet metadata does not describe column '{column}'")
    encoding = str(spec.get("encoding", "WKB"))
    if encoding.upper() != "WKB":
        raise InputError(
            f"cannot read {path}: geometry column '{column}' is encoded as {encoding}; urbandp reads WKB points"
        )
    check_wgs84(spec.get("crs"), path, column)
    frame = pl.read_parquet(path)
    if column not in frame.columns:
        raise InputError(f"cannot read {path}: geometry column '{column}' is missing")
    lat, lon = points(frame[column], path, column)
    plain = frame.drop(column, *(c for c in ("latitude", "longitude") if c in frame.columns))
    return plain.with_columns(pl.Series("latitude", lat), pl.Series("longitude", lon)).lazy()
