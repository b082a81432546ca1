"""The synthetic survey's trajectories step 100 m on the WGS 84 ellipsoid (urbandp._geodesy), not by a
metres-per-degree constant (issue 32)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from urbandp._geodesy import WGS84
from urbandp.survey._synth import TRAJECTORY_STEP_M, write_survey

ROUNDING_M = 0.14
"""Both endpoints are rounded to 1e-6 degrees: at most 0.5e-6 deg x (111.2 km north, 78.9 km east per degree near
45 N) = 0.068 m each, 0.136 m for a step. The old 111,320 m/degree constant was off by up to 0.17 m per 100 m there."""


def test_every_step_is_the_declared_length_on_the_ellipsoid(tmp_path: Path) -> None:
    write_survey(tmp_path, households=50, seed=0)
    t = pl.read_csv(tmp_path / "trajectories.csv")
    assert t.height == 300 and t["trip"].n_unique() == 5
    for _, g in t.group_by("trip"):
        g = g.sort("seq")
        lat, lon = g["lat"].to_numpy(), g["lon"].to_numpy()
        _, _, metres = WGS84.inv(lon[:-1], lat[:-1], lon[1:], lat[1:])
        assert np.all(np.abs(metres - TRAJECTORY_STEP_M) <= ROUNDING_M), (metres.min(), metres.max())
        assert np.all(np.abs(lat - 44.97) < 0.5) and np.all(np.abs(lon + 93.22) < 0.5)  # near the centre
