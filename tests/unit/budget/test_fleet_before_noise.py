"""The Python API of the fleet release: ``release_fleet(before_noise=...)`` is called once with the planned charge,
after loading and before the first noise draw, and an exception from it stops the release before any draw."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from urbandp._privacy.noise import OpenDPNoise, rho_for_epsilon
from urbandp._synth.fleet import generate_fleet
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._pipeline import PlannedCharge, release_fleet


class CountingNoise(OpenDPNoise):
    """OpenDP noise that records, at each draw, how many times the hook had been called."""

    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    def laplace(self, values: np.ndarray, scale: Any) -> np.ndarray:
        self.log.append("noise")
        return super().laplace(values, scale)

    def discrete_laplace(self, values: np.ndarray, scale: Any) -> np.ndarray:
        self.log.append("noise")
        return super().discrete_laplace(values, scale)

    def gaussian(self, values: np.ndarray, scale: Any) -> np.ndarray:
        self.log.append("noise")
        return super().gaussian(values, scale)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fleet") / "fleet.parquet"
    generate_fleet(20, 3, 5, start=dt.date(2024, 3, 4), records_per_vehicle_day=60).write_parquet(path)
    return path


# A public domain: the selection draws with this NoiseSource (the unknown-domain threshold calls OpenDP directly).
BBOX = (21.09, 72.75, 21.25, 72.91)


def test_hook_gets_the_planned_charge_before_the_first_draw(fleet: Path) -> None:
    log: list[str] = []
    charges: list[PlannedCharge] = []

    def hook(c: PlannedCharge) -> None:
        log.append("hook")
        charges.append(c)

    cfg = HatReleaseConfig(**{"epsilon_per_day": 2.0, "domain_bbox": BBOX})
    release, _ = release_fleet([fleet], cfg, noise=CountingNoise(log), before_noise=hook)
    assert log[0] == "hook" and log.count("hook") == 1 and "noise" in log
    (c,) = charges
    assert (c.first_day, c.last_day, c.derived_window) == (dt.date(2024, 3, 4), dt.date(2024, 3, 6), True)
    assert c.mechanism == "gaussian" and c.epsilon_per_day == 2.0
    assert c.conversion_delta == release.privacy["conversion_delta"] == cfg.delta  # public domain: no halving
    assert c.rho_per_day == rho_for_epsilon(2.0, cfg.delta)
    assert release.privacy["cumulative_epsilon_per_day"] <= 2.0 + 1e-9


def test_a_refusing_hook_stops_the_release_before_any_draw(fleet: Path) -> None:
    log: list[str] = []

    def refuse(c: PlannedCharge) -> None:
        raise RuntimeError("refused")

    cfg = HatReleaseConfig(**{"epsilon_per_day": 2.0, "domain_bbox": BBOX, "mechanism": "laplace"})
    with pytest.raises(RuntimeError, match="refused"):
        release_fleet([fleet], cfg, noise=CountingNoise(log), before_noise=refuse)
    assert log == []
    laplace = release_fleet(
        [fleet], cfg, noise=CountingNoise(log), before_noise=lambda c: log.append(str(c.rho_per_day))
    )
    assert log[0] == "None" and "noise" in log  # Laplace charges no rho
    assert laplace[0].privacy["mechanism"] == "laplace"
