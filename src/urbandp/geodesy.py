"""Metric positions on the WGS 84 ellipsoid, in one place (pyproj): no metres-per-degree constant elsewhere.

* :func:`shift`: move points by (east, north) metres along the geodesic (``Geod.fwd``): the displacement a
  location mechanism draws in metres lands exactly that far away on the ellipsoid.
* :class:`LocalProjection`: an azimuthal equidistant projection centred on a point (metres east and north; true
  distances from the centre), for algorithms that work in a plane (trajectory perturbation).
"""

from __future__ import annotations

import numpy as np
from pyproj import Geod, Transformer

WGS84 = Geod(ellps="WGS84")


def shift(
    lat: np.ndarray, lon: np.ndarray, east_m: np.ndarray, north_m: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(lat, lon) moved by ``east_m`` and ``north_m`` metres: a geodesic of length hypot(east, north) at azimuth
    atan2(east, north) from each point."""
    lat, lon = np.asarray(lat, dtype=float), np.asarray(lon, dtype=float)
    east, north = np.asarray(east_m, dtype=float), np.asarray(north_m, dtype=float)
    azimuth = np.degrees(np.arctan2(east, north))
    distance = np.hypot(east, north)
    new_lon, new_lat, _ = WGS84.fwd(lon, lat, azimuth, distance)
    return np.asarray(new_lat, dtype=float), np.asarray(new_lon, dtype=float)


class LocalProjection:
    """Azimuthal equidistant projection centred on (lat0, lon0): metres east (x) and north (y) of the centre."""

    def __init__(self, lat0: float, lon0: float) -> None:
        crs = f"+proj=aeqd +lat_0={lat0!r} +lon_0={lon0!r} +datum=WGS84 +units=m +no_defs"
        self._forward = Transformer.from_crs("EPSG:4326", crs, always_xy=True)
        self._inverse = Transformer.from_crs(crs, "EPSG:4326", always_xy=True)

    def to_metres(self, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        """An (n, 2) array of (x east, y north) metres."""
        x, y = self._forward.transform(np.asarray(lon, dtype=float), np.asarray(lat, dtype=float))
        return np.column_stack([np.asarray(x, dtype=float), np.asarray(y, dtype=float)])

    def to_degrees(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lat, lon) of an (n, 2) array of metres."""
        lon, lat = self._inverse.transform(xy[:, 0], xy[:, 1])
        return np.asarray(lat, dtype=float), np.asarray(lon, dtype=float)
