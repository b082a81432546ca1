"""The square grid of the fleet-sensing paper (section IV, "Query Granularity").

The paper's cell id ``i = floor((x - x_0) / z) + floor((y - y_0) / z) * n_cols`` of a point in local planar
metres, with ``n_cols = ceil(l / z)`` and ``n_rows = ceil(b / z)`` so that the grid extends the box east and north
to whole cells (points on its east/north edge fall in the last column/row, points outside get id -1). The plane
is pyproj's transverse Mercator centred on the box (:func:`urbandp._geodesy.box_projection`); ``(x_0, y_0)``,
``l`` and ``b`` are the envelope of the projected box, and a cell maps back to lon/lat as a quadrilateral
(:meth:`SquareGrid.cell_corners`). Why this projection, and what it measures: docs/sensing.md, section "Grid and
cell ids (paper section IV)".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from urbandp._geodesy import PlanarProjection, box_projection, shift
from urbandp.errors import InvalidParameterError

EDGE_SAMPLES = 65
"""Points per edge of the box (corners and midpoints among them) whose projections give the grid's envelope.

Away from the equator the envelope's extremes lie at corners and edge midpoints (the projection is symmetric about
the central meridian); across the equator a 50 km box's west and east edges bulge between samples by 0.04 mm."""


MAX_CELLS = 250_000
"""The most cells a release grid may have (the interpolation and the DP map are refused above it)."""


def check_on_globe(box: tuple[float, float, float, float]) -> None:
    """A box of finite WGS 84 degrees: latitudes in [-90, 90], longitudes in [-180, 180] (an infinite or off-globe
    corner has no projection to put a grid on)."""
    lat_min, lon_min, lat_max, lon_max = box
    if not (lat_min >= -90 and lat_max <= 90 and lon_min >= -180 and lon_max <= 180):
        raise InvalidParameterError(
            f"bbox must be WGS 84 degrees, latitudes in [-90, 90] and longitudes in [-180, 180], got "
            f"{','.join(f'{v:g}' for v in box)}",
            parameters="bbox",
        )


@dataclass(frozen=True)
class SquareGrid:
    """A public grid: bounding box (degrees) and cell side (metres). Build it with :meth:`covering`."""

    lat_min: float
    lon_min: float
    lat_max: float
    lon_max: float
    cell_metres: float

    def __post_init__(self) -> None:
        if not (self.cell_metres > 0 and math.isfinite(self.cell_metres)):
            raise ValueError(f"cell side must be > 0 metres, got {self.cell_metres}")
        if not (self.lat_max >= self.lat_min and self.lon_max >= self.lon_min):
            raise ValueError("bounding box must have lat_max >= lat_min and lon_max >= lon_min")
        check_on_globe((self.lat_min, self.lon_min, self.lat_max, self.lon_max))
        self._check_reach()

    def _check_reach(self) -> None:
        """Every cell of the grid maps back to finite degrees on the globe: the corners of the whole grid (the box
        extended east and north to whole cells) are checked, so a cell side far larger than the box (1e9 m) is
        refused before any cell centre, inf, is computed or written."""
        z = self.cell_metres
        w, h = self.n_cols * z, self.n_rows * z
        lat, lon = self.to_degrees(np.array([[0.0, 0.0], [w, 0.0], [w, h], [0.0, h], [w / 2, h / 2]]))
        if not (np.isfinite(lat).all() and np.isfinite(lon).all() and (np.abs(lat) <= 90).all()):
            raise InvalidParameterError(
                f"cell_metres {z:g}: the grid's cells over the box reach off the globe (a cell is at most "
                "the size of the area mapped); use a smaller cell_metres",
                parameters="cell_metres",
            )

    @classmethod
    def for_release(
        cls,
        bbox: tuple[float, float, float, float] | None,
        lat: np.ndarray,
        lon: np.ndarray,
        cell_metres: float,
    ) -> SquareGrid:
        """The grid over the public ``bbox`` when given, else :meth:`covering` the readings; refused (naming
        ``cell_metres``) above :data:`MAX_CELLS` cells."""
        grid = cls(*bbox, cell_metres) if bbox is not None else cls.covering(lat, lon, cell_metres)
        if grid.n_cells > MAX_CELLS:
            raise InvalidParameterError(
                f"grid of {grid.n_cells} cells is too large; use a larger cell_metres",
                parameters="cell_metres",
            )
        return grid

    @classmethod
    def covering(
        cls, lat: np.ndarray, lon: np.ndarray, cell_metres: float, margin_cells: float = 0.5
    ) -> SquareGrid:
        """Smallest box around the points, padded by ``margin_cells`` cell sides on each side.

        The pads are geodesics on the ellipsoid (:func:`urbandp._geodesy.shift`): north and south from the extreme
        latitudes, east and west from the extreme longitudes at the points' mean latitude. The box is computed
        from the readings (like the paper's Appendix B); pass an explicit public box with ``--bbox`` when the grid
        itself must not depend on where the vehicles drove.
        """
        lat = np.asarray(lat, dtype=float)
        lon = np.asarray(lon, dtype=float)
        pad = margin_cells * cell_metres
        mid_lat, mid_lon = float(np.mean(lat)), float(np.mean(lon))
        edge_lat, _ = shift(
            np.array([lat.min(), lat.max()]), np.full(2, mid_lon), np.zeros(2), np.array([-pad, pad])
        )
        _, edge_lon = shift(
            np.full(2, mid_lat), np.array([lon.min(), lon.max()]), np.array([-pad, pad]), np.zeros(2)
        )
        box = (float(edge_lat[0]), float(edge_lon[0]), float(edge_lat[1]), float(edge_lon[1]))
        ordered = box[0] <= box[2] and box[1] <= box[3]
        if not (ordered and box[0] >= -90 and box[2] <= 90 and box[1] >= -180 and box[3] <= 180):
            raise InvalidParameterError(
                f"cell_metres {cell_metres:g}: the readings' box padded by {margin_cells:g} cell reaches off the "
                "globe; use a smaller cell_metres (or give a public bbox)",
                parameters="cell_metres",
            )
        return cls(*box, float(cell_metres))

    @cached_property
    def _projection(self) -> PlanarProjection:
        """The grid's plane, built once per grid (its two pyproj transformers are reused by every call)."""
        return box_projection(self.lat_min, self.lon_min, self.lat_max, self.lon_max)

    @cached_property
    def _envelope(self) -> np.ndarray:
        """``[[x_0, y_0], [x_max, y_max]]``: the envelope, in the projection's metres, of the box's outline."""
        t = np.linspace(0.0, 1.0, EDGE_SAMPLES)
        lat_edge = self.lat_min + (self.lat_max - self.lat_min) * t
        lon_edge = self.lon_min + (self.lon_max - self.lon_min) * t
        lat = np.concatenate(
            [np.full_like(t, self.lat_min), np.full_like(t, self.lat_max), lat_edge, lat_edge]
        )
        lon = np.concatenate(
            [lon_edge, lon_edge, np.full_like(t, self.lon_min), np.full_like(t, self.lon_max)]
        )
        xy = self._projection.to_metres(lat, lon)
        return np.array([xy.min(axis=0), xy.max(axis=0)])

    def to_metres(self, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        """Local planar coordinates (x east, y north) in metres from ``(x_0, y_0)``, the south-west corner of the
        grid (n x 2)."""
        return self._projection.to_metres(lat, lon) - self._envelope[0]

    def to_degrees(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lat, lon) of an (n, 2) array of :meth:`to_metres` coordinates (the inverse, to 1e-9 m)."""
        return self._projection.to_degrees(np.asarray(xy, dtype=float).reshape(-1, 2) + self._envelope[0])

    @property
    def width_m(self) -> float:
        """``l`` of the paper: east-west extent in metres."""
        return float(self._envelope[1, 0] - self._envelope[0, 0])

    @property
    def height_m(self) -> float:
        """``b`` of the paper: north-south extent in metres."""
        return float(self._envelope[1, 1] - self._envelope[0, 1])

    @property
    def n_cols(self) -> int:
        return max(1, math.ceil(self.width_m / self.cell_metres - 1e-9))

    @property
    def n_rows(self) -> int:
        return max(1, math.ceil(self.height_m / self.cell_metres - 1e-9))

    @property
    def n_cells(self) -> int:
        return self.n_cols * self.n_rows

    def _inside(self, xy: np.ndarray) -> np.ndarray:
        """Inside the grid: the box extended east and north to whole cells (``n_cols z`` by ``n_rows z``)."""
        return (
            (xy[:, 0] >= 0)
            & (xy[:, 1] >= 0)
            & (xy[:, 0] <= self.n_cols * self.cell_metres)
            & (xy[:, 1] <= self.n_rows * self.cell_metres)
        )

    def cell_id(self, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        """Paper section IV: ``floor((x - x_0)/z) + floor((y - y_0)/z) * n_cols``; -1 outside the box."""
        xy = self.to_metres(lat, lon)
        inside = self._inside(xy)
        xy = np.where(inside[:, None], xy, 0.0)  # no cast of NaN or of the inf of points off the projection
        col = np.minimum(np.floor(xy[:, 0] / self.cell_metres), self.n_cols - 1).astype(np.int64)
        row = np.minimum(np.floor(xy[:, 1] / self.cell_metres), self.n_rows - 1).astype(np.int64)
        return np.where(inside, col + row * self.n_cols, -1)

    def centroids_metres(self) -> np.ndarray:
        """Cell centroids (x, y) in metres, in cell-id order (n_cells x 2)."""
        ids = np.arange(self.n_cells)
        col = ids % self.n_cols
        row = ids // self.n_cols
        return np.column_stack([(col + 0.5) * self.cell_metres, (row + 0.5) * self.cell_metres])

    def centroids(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cell_id, lat, lon) of every cell centroid (finite: checked here, before any table holds them)."""
        lat, lon = self.to_degrees(self.centroids_metres())
        if not (np.isfinite(lat).all() and np.isfinite(lon).all()):
            raise InvalidParameterError(
                f"cell_metres {self.cell_metres:g}: a cell centre of the grid is off the globe; use a smaller "
                "cell_metres",
                parameters="cell_metres",
            )
        return np.arange(self.n_cells), lat, lon

    def cell_corners(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lat, lon), each (n x 4), of the corners of each cell: the square ``[col z, (col+1) z] x [row z,
        (row+1) z]`` of section IV mapped back to the ellipsoid, south-west, south-east, north-east, north-west
        (counter-clockwise in lon/lat)."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        col, row = ids % self.n_cols, ids // self.n_cols
        z = self.cell_metres
        dx = np.array([0.0, 1.0, 1.0, 0.0])
        dy = np.array([0.0, 0.0, 1.0, 1.0])
        x = (col[:, None] + dx) * z
        y = (row[:, None] + dy) * z
        lat, lon = self.to_degrees(np.column_stack([x.ravel(), y.ravel()]))
        return lat.reshape(-1, 4), lon.reshape(-1, 4)

    def cell_polygons(self, ids: np.ndarray) -> np.ndarray:
        """Each cell as a shapely Polygon in (lon, lat), exterior ring counter-clockwise (RFC 7946, GeoParquet):
        its four :meth:`cell_corners`; the sides, straight in the grid's plane, are straight in lon/lat to well
        under a millimetre for city cells."""
        import shapely

        lat, lon = self.cell_corners(ids)
        ring = np.stack([lon, lat], axis=-1)
        return np.asarray(shapely.polygons(np.concatenate([ring, ring[:, :1]], axis=1)), dtype=object)


GRID_FORMATS = ("parquet", "csv")


def write_grid_table(
    grid: SquareGrid,
    windows: list[str],
    values: dict[str, list[np.ndarray]],
    path: Path,
    fmt: str = "parquet",
) -> Path:
    """Write one row per (window, cell): ``cell_id, lat, lon, window`` then the ``values`` columns, window-major.

    Parquet (default) stores one row group per window with min/max statistics, so a reader that filters on
    ``window`` (``sensing query``) decodes only that window's row group; it is also about 5x smaller than CSV.
    ``values[name][i]`` is the array of window ``i`` (one value per cell, in cell-id order).
    """
    import polars as pl

    ids, lat, lon = grid.centroids()
    n, k = grid.n_cells, len(windows)
    frame = pl.DataFrame(
        {
            "cell_id": np.tile(ids, k),
            "lat": np.tile(np.round(lat, 6), k),
            "lon": np.tile(np.round(lon, 6), k),
            "window": pl.Series(windows, dtype=pl.String).gather(np.repeat(np.arange(k), n)),
            **{name: np.concatenate(arrs) if arrs else np.empty(0) for name, arrs in values.items()},
        }
    )
    if fmt == "csv":
        frame.write_csv(path)
    else:
        frame.write_parquet(path, row_group_size=max(n, 1), statistics=True, compression="zstd")
    return path
