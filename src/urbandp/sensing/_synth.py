"""Synthetic fleet sensor readings: vehicles on a street lattice measuring a smooth pollution field.

For tests, examples and the benchmark (the real Kolkata files have ~17 readings per hour). The field is a sum of
Gaussian plumes that drifts slowly over the hours; readings add N(0, noise_sd^2) measurement noise. This is data
generation, not a release, so numpy's generator is fine here (docs/design.md privacy rule 1 concerns release noise).
Positions are drawn in km east and north of ``(lat0, lon0)`` and placed on the WGS 84 ellipsoid by
:meth:`urbandp._geodesy.PlanarProjection.transverse_mercator` (pyproj) with its origin there.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

from urbandp._geodesy import PlanarProjection
from urbandp.errors import InvalidParameterError


def pollution_field(
    x_km: np.ndarray, y_km: np.ndarray, hour: float | np.ndarray, seed: int = 0
) -> np.ndarray:
    """A smooth PM2.5-like field (ug/m3) over a 10 km square, drifting east by 0.2 km per hour."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 10, (5, 2))
    widths = rng.uniform(1.0, 3.0, 5)
    heights = rng.uniform(20, 60, 5)
    z = np.full(np.shape(x_km), 40.0)
    for (cx, cy), w, h in zip(centres, widths, heights, strict=True):
        z = z + h * np.exp(-((x_km - cx - 0.2 * hour) ** 2 + (y_km - cy) ** 2) / (2 * w * w))
    return z


def synth_readings(
    n_readings: int,
    vehicles: int = 10,
    hours: int = 1,
    seed: int = 0,
    noise_sd: float = 3.0,
    lat0: float = 22.50,
    lon0: float = 88.33,
    block_km: float = 0.5,
) -> pl.DataFrame:
    """``n_readings`` readings spread over ``hours`` one-hour windows; columns lat, lon, time, value, vehicle
    (the id of the vehicle that took it: ``pm-map`` then protects vehicle-windows)."""
    rng = np.random.default_rng(seed)
    per_vehicle = math.ceil(n_readings / vehicles)
    xs, ys, ts, ids = [], [], [], []
    start = datetime(2024, 1, 15, 8, 0)
    for v in range(vehicles):
        pos = rng.uniform(0, 10, 2)
        pos = np.round(pos / block_km) * block_km
        heading = rng.integers(0, 4)
        step = 10.0 * hours * 60 / per_vehicle / 60  # ~10 km/h average, km per reading
        for j in range(per_vehicle):
            if rng.random() < 0.15:
                heading = rng.integers(0, 4)
            d = np.array([(1, 0), (0, 1), (-1, 0), (0, -1)][heading], dtype=float)
            nxt = pos + d * step
            if not (0 <= nxt[0] <= 10 and 0 <= nxt[1] <= 10):
                heading = (heading + 2) % 4
                nxt = pos - d * step
            pos = nxt
            xs.append(pos[0])
            ys.append(pos[1])
            ts.append(start + timedelta(seconds=hours * 3600.0 * j / per_vehicle))
            ids.append(f"v{v:04d}")
    x = np.array(xs)[:n_readings] + rng.normal(0, 0.01, n_readings)
    y = np.array(ys)[:n_readings] + rng.normal(0, 0.01, n_readings)
    t = ts[:n_readings]
    hour = np.array([(tt - start).total_seconds() / 3600.0 for tt in t])
    value = pollution_field(x, y, hour, seed) + rng.normal(0, noise_sd, n_readings)
    lat, lon = PlanarProjection.transverse_mercator(lat0, lon0).to_degrees(np.column_stack([x, y]) * 1000.0)
    return pl.DataFrame(
        {
            "lat": np.round(lat, 6),
            "lon": np.round(lon, 6),
            "time": [tt.strftime("%Y-%m-%dT%H:%M:%S") for tt in t],
            "value": np.round(value, 3),
            "vehicle": ids[:n_readings],
        }
    )


MAX_SYNTH_READINGS = 10_000_000
MAX_SYNTH_HOURS = 24 * 366


def write_synth_readings(out: Path, readings: int, vehicles: int = 10, hours: int = 1, seed: int = 0) -> Path:
    """Write :func:`synth_readings` to the CSV ``out`` (`urbandp sensing synth`), refusing out-of-range sizes.

    At most :data:`MAX_SYNTH_READINGS` readings over :data:`MAX_SYNTH_HOURS` hours (one year). The CSV is
    written atomically (:func:`urbandp._outputs.atomic_output_file`): a failure leaves no partial file.
    """
    from urbandp._outputs import atomic_output_file

    if readings < 2 or vehicles < 1 or hours < 1:
        raise InvalidParameterError(
            "need readings >= 2, vehicles >= 1 and hours >= 1", parameters=("readings", "vehicles", "hours")
        )
    if readings > MAX_SYNTH_READINGS or hours > MAX_SYNTH_HOURS:
        raise InvalidParameterError(
            "need readings <= 10000000 and hours <= 8784 (one year)", parameters=("readings", "hours")
        )
    if seed < 0:
        raise InvalidParameterError(f"seed must be >= 0, got {seed}", parameters="seed")
    with atomic_output_file(out, "OUT") as tmp:
        synth_readings(readings, vehicles, hours, seed).write_csv(tmp)
    return out
