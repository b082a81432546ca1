"""GIS-ready copies of a release table: GeoParquet 1.1 and GeoJSON (RFC 7946), written through one geometry layer.

Each row's cell (an H3 cell id or a square grid cell) becomes its polygon in WGS 84 longitude/latitude, exterior
rings counter-clockwise; the files hold the rows and DP values of the CSV and nothing else. What the files hold,
why shapely + pyarrow and not geopandas, and the timings: docs/outputs.md, "GIS-ready tables". As the GeoParquet
spec says ("Coordinate axis order"), the WKB stores (x, y) = (longitude, latitude) whatever the CRS's axis order.
This is the one GeoJSON and GeoParquet writer of urbandp (the release folders, the sensing grids, the map site).

The polygons are public: an H3 cell's boundary is a function of its public id (h3-py, ``cell_to_boundary``), a
grid cell's of the public grid. Adding them to a DP table is post-processing. Polygons that cross the antimeridian
are not split (city data never does).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

GEOPARQUET_VERSION = "1.1.0"
GEOMETRY_COLUMN = "geometry"


@functools.cache
def wgs84_projjson() -> dict[str, Any]:
    """EPSG:4326 (WGS 84) as PROJJSON, from pyproj's copy of the EPSG database: the ``crs`` of every GeoParquet
    written here (its WKB coordinates are lon/lat whatever the CRS's axis order, as the spec says)."""
    from pyproj import CRS

    return dict(CRS.from_epsg(4326).to_json_dict())


def h3_polygons(cells: Sequence[str] | pl.Series) -> np.ndarray:
    """The polygon (lon/lat, counter-clockwise) of every H3 cell id, in order; each distinct cell computed once.

    The boundary is h3-py's ``cell_to_boundary`` (Uber H3, Brodsky 2018): the cell's 6 (or 5 for pentagons)
    vertices, plus distortion vertices for class III cells, as (lat, lng) pairs.
    """
    import h3
    import shapely

    distinct, position = np.unique(pl.Series(cells, dtype=pl.String).to_numpy(), return_inverse=True)
    rings = [[(lng, lat) for lat, lng in h3.cell_to_boundary(cell)] for cell in distinct]
    return _ccw(np.array([shapely.Polygon(ring) for ring in rings], dtype=object))[position]


def _ccw(polygons: np.ndarray) -> np.ndarray:
    """Exterior rings counter-clockwise (RFC 7946 section 3.1.6; GeoParquet ``orientation``)."""
    import shapely

    return np.asarray(shapely.orient_polygons(polygons, exterior_cw=False), dtype=object)


def write_geoparquet(frame: pl.DataFrame, polygons: np.ndarray, path: Path) -> Path:
    """``frame`` with a WKB ``geometry`` column and GeoParquet 1.1 ``geo`` metadata, zstd-compressed."""
    import pyarrow.parquet as pq
    import shapely

    _check_rows(frame, polygons)
    # large_string, not string_view: GDAL reads it
    table = frame.to_arrow(compat_level=pl.CompatLevel.oldest())
    wkb = _binary_array(shapely.to_wkb(polygons, output_dimension=2))
    table = table.append_column(GEOMETRY_COLUMN, wkb)
    geo = geo_metadata(polygons)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"geo": json.dumps(geo).encode()})
    pq.write_table(table, path, compression="zstd")
    return path


def _binary_array(blobs: np.ndarray) -> Any:
    """WKB blobs as an Arrow binary array built from its buffers: ``pa.array`` of Python objects imports pandas
    (0.2 s of every release's start-up) to inspect them."""
    import pyarrow as pa

    items = blobs.tolist()
    offsets = np.zeros(len(items) + 1, dtype=np.int32)
    np.cumsum([len(b) for b in items], out=offsets[1:])
    data = pa.py_buffer(b"".join(items))
    return pa.Array.from_buffers(pa.binary(), len(items), [None, pa.py_buffer(offsets.tobytes()), data])


def geo_metadata(polygons: np.ndarray) -> dict[str, Any]:
    """The GeoParquet 1.1 ``geo`` file metadata of a column of polygons."""
    import shapely

    column: dict[str, Any] = {
        "encoding": "WKB",
        "geometry_types": ["Polygon"],
        "crs": wgs84_projjson(),
        "orientation": "counterclockwise",
        "edges": "planar",
    }
    if len(polygons):
        column["bbox"] = [float(v) for v in shapely.total_bounds(polygons)]
    return {
        "version": GEOPARQUET_VERSION,
        "primary_column": GEOMETRY_COLUMN,
        "columns": {GEOMETRY_COLUMN: column},
    }


def write_geojson(frame: pl.DataFrame, polygons: np.ndarray, path: Path) -> Path:
    """``frame`` as an RFC 7946 FeatureCollection: one Feature per row, its columns as properties."""
    import shapely

    _check_rows(frame, polygons)
    geometries = shapely.to_geojson(polygons)
    # NaN, inf -> null
    properties = frame.select(pl.struct(pl.all()).struct.json_encode()).to_series().to_list()
    features = (
        f'{{"type":"Feature","properties":{props},"geometry":{geometry}}}'
        for props, geometry in zip(properties, geometries, strict=True)
    )
    path.write_text(
        '{"type":"FeatureCollection","features":[\n' + ",\n".join(features) + "\n]}\n", encoding="utf-8"
    )
    return path


def write_geo_pair(frame: pl.DataFrame, polygons: np.ndarray, folder: Path, stem: str) -> tuple[Path, Path]:
    """``<stem>.parquet`` (GeoParquet) and ``<stem>.geojson`` in ``folder``, the same rows and polygons."""
    return (
        write_geoparquet(frame, polygons, folder / f"{stem}.parquet"),
        write_geojson(frame, polygons, folder / f"{stem}.geojson"),
    )


def _check_rows(frame: pl.DataFrame, polygons: np.ndarray) -> None:
    if len(polygons) != frame.height:
        raise ValueError(f"{len(polygons)} polygons for {frame.height} rows")
