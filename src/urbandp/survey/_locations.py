"""Perturbation of point locations (travel-survey report sections 2.2 and 5; Andres et al. 2013).

* Per-axis Laplace (report eq. 14): independent Laplace noise with scales b_x, b_y (metres) on the two axes. For
  two locations that differ by (dx, dy) metres the privacy loss is |dx| / b_x + |dy| / b_y, i.e. epsilon per metre
  of L1 distance 1 / b when b_x = b_y = b (geo-indistinguishability in the L1 metric).
* Planar Laplace (geo-indistinguishability, Andres, Bordenabe, Chatzikokolakis, Palamidessi 2013): density
  proportional to exp(-epsilon * d(z, x)) in the plane; its radius is Gamma(2, 1/epsilon) and its direction
  uniform. Privacy loss epsilon * d for two locations d metres apart (Euclidean).

Draws (docs/survey.md, section "Randomness"): the radius is |L1| + |L2| with L1, L2 OpenDP continuous
Laplace(1/epsilon) draws (Gamma(2, 1/epsilon)); the direction is 2 pi (U + 1/2) / 2^32 with U an exact uniform
32-bit integer from :class:`urbandp.survey._sampling.OpenDPBits`, a grid (1.5e-9 rad) that does not depend on the
true location. Per-axis noise is OpenDP Laplace directly. Outputs are rounded to 1e-6 degrees (about 0.1 m;
docs/design.md rule 6). Metres become degrees along the geodesic on the WGS 84 ellipsoid
(:mod:`urbandp._geodesy`, pyproj): a displacement of d metres lands d metres away.

Privacy unit: the respondent's (household's) location; one point per respondent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import urbandp._geodesy as geodesy
import urbandp._privacy.dp_prelude as dp
from urbandp._privacy.noise import NoiseSource, OpenDPNoise
from urbandp.survey._sampling import BitSource, OpenDPBits

dp.enable_features("contrib")

ROUND_DEGREES = 6


def _laplace_vector(n: int, scale: float, noise: NoiseSource | None) -> np.ndarray:
    """``n`` Laplace draws around 0 from ``noise`` (default OpenDP; one OpenDP call per core for long vectors)."""
    if n == 0:
        return np.zeros(0)
    return (noise or OpenDPNoise()).laplace(np.zeros(n), scale)


def planar_laplace_offsets(
    n: int, epsilon_per_metre: float, noise: NoiseSource | None = None, bits: BitSource | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` planar Laplace displacements (east, north) in metres (see module docstring for the draws); ``noise``
    and ``bits`` default to OpenDP's (a release passes its charge's, so that no draw precedes the reservation)."""
    if epsilon_per_metre <= 0 or not math.isfinite(epsilon_per_metre):
        raise ValueError("epsilon per metre must be finite and > 0")
    b = 1.0 / epsilon_per_metre
    radius = np.abs(_laplace_vector(n, b, noise)) + np.abs(_laplace_vector(n, b, noise))
    u = (bits or OpenDPBits()).uniform_int(n, 1 << 32).astype(float)
    angle = 2.0 * math.pi * (u + 0.5) / 2.0**32
    return radius * np.cos(angle), radius * np.sin(angle)


def axis_laplace_offsets(
    n: int, b_x: float, b_y: float, noise: NoiseSource | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` per-axis Laplace displacements (east, north) in metres with scales b_x, b_y (report eq. 14)."""
    return _laplace_vector(n, b_x, noise), _laplace_vector(n, b_y, noise)


def shift_degrees(
    lat: np.ndarray, lon: np.ndarray, east_m: np.ndarray, north_m: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Apply metre displacements to latitude/longitude along the geodesic (:func:`urbandp._geodesy.shift`),
    rounded to 1e-6 degrees."""
    new_lat, new_lon = geodesy.shift(lat, lon, east_m, north_m)
    return np.round(new_lat, ROUND_DEGREES), np.round(new_lon, ROUND_DEGREES)


@dataclass(frozen=True)
class BoundingBox:
    """Geographic bounding box for outlier removal (report section 2.2: N44.1-N46.1, W91-W94.3 for the Twin Cities)."""

    min_lat: float
    min_lon: float
    max_lat: float
    max_lon: float

    def __post_init__(self) -> None:
        if not (-90 <= self.min_lat < self.max_lat <= 90 and -180 <= self.min_lon < self.max_lon <= 180):
            raise ValueError("bounding box must be min_lat,min_lon,max_lat,max_lon with min < max")

    @classmethod
    def parse(cls, text: str) -> BoundingBox:
        parts = [float(x) for x in text.split(",")]
        if len(parts) != 4:
            raise ValueError("bounding box needs four numbers: min_lat,min_lon,max_lat,max_lon")
        return cls(*parts)

    def clamp(self, lat: np.ndarray, lon: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each coordinate clamped to its range. This is 1-Lipschitz in degrees, NOT in metres: a degree of
        longitude is cos(latitude) times as long, so moving two points towards the equator can lengthen their
        distance. A mechanism with loss epsilon * d on the clamped points has loss
        epsilon * d(clamp(x), clamp(y)) on the true ones."""
        return np.clip(lat, self.min_lat, self.max_lat), np.clip(lon, self.min_lon, self.max_lon)


def perturbation_epsilon(epsilon_per_metre: float | None, scale_metres: float | None) -> dict[str, object]:
    """What a point perturbation costs: epsilon per metre and the metric it is measured in."""
    if epsilon_per_metre is not None:
        eps, mechanism = epsilon_per_metre, "planar Laplace (geo-indistinguishability, Andres et al. 2013)"
        extra: dict[str, object] = {"metric": "euclidean metres"}
    else:
        assert scale_metres is not None
        laplace = dp.m.make_laplace(
            dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale_metres
        )
        eps, mechanism = float(laplace.map(1.0)), "per-axis Laplace (report section 5, eq. 14), b_x = b_y"
        extra = {"scale_metres": scale_metres, "metric": "L1 metres (|dx| + |dy|)"}
    return {"mechanism": mechanism, "epsilon_per_metre": eps, **extra, "epsilon_at_1km": eps * 1000.0}
