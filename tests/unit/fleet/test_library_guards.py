"""The fleet release's guards live in the library path (issue 30): ``release_fleet`` called from Python, without
the CLI, passes the same delta, meaningless-loss and budget-dataset guards as ``urbandp release``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from urbandp._privacy.guards import ALLOW_PARAMETER
from urbandp._privacy.noise import OpenDPNoise
from urbandp._privacy.session import ReleaseCharge
from urbandp._synth.fleet import generate_fleet
from urbandp.errors import InputError, InvalidParameterError
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._pipeline import release_fleet

START = dt.date(2024, 3, 4)
WINDOW = {"start": START, "end": START + dt.timedelta(days=2)}


class LoggedNoise(OpenDPNoise):
    """OpenDP noise that logs each draw: a refused release must log none."""

    def __init__(self) -> None:
        super().__init__()
        self.draws = 0

    def laplace(self, values: np.ndarray, scale: Any) -> np.ndarray:
        self.draws += 1
        return super().laplace(values, scale)

    def gaussian(self, values: np.ndarray, scale: Any) -> np.ndarray:
        self.draws += 1
        return super().gaussian(values, scale)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fleet") / "fleet.parquet"
    generate_fleet(20, 3, 5, start=START, records_per_vehicle_day=60).write_parquet(path)
    return path


@pytest.mark.parametrize("delta", [0.99, 0.5, 1e-4, 1.0000001e-5])
def test_the_spec_refuses_a_delta_above_1e_5_naming_the_option(delta: float) -> None:
    with pytest.raises(InvalidParameterError, match=r"^delta \(--delta\) .* is above 1e-05"):
        HatReleaseConfig(epsilon_per_day=4, mechanism="laplace", delta=delta)
    with pytest.raises(InvalidParameterError, match="is above 1e-05"):
        HatReleaseConfig(**{"delta": delta, "noise_scale": 1.0})
    assert HatReleaseConfig(epsilon_per_day=4, delta=1e-5).delta == 1e-5


@pytest.mark.parametrize(
    "params",
    [{"epsilon_per_day": 1e300}, {"noise_scale": 1e-300}, {"noise_scale": 1e-300, "mechanism": "laplace"}],
    ids=["epsilon", "gaussian-scale", "laplace-scale"],
)
def test_a_meaningless_loss_is_refused_from_python_before_any_draw(
    fleet: Path, params: dict[str, Any]
) -> None:
    noise = LoggedNoise()
    cfg = HatReleaseConfig(**params, **WINDOW)
    with pytest.raises(InvalidParameterError, match=f"is above 100.*{ALLOW_PARAMETER}"):
        release_fleet([fleet], cfg, noise=noise)
    assert noise.draws == 0


def test_a_noise_scale_over_an_empty_day_set_is_refused_naming_the_day_options(tmp_path: Path) -> None:
    # the meaningless-loss guard divides by D before reading: an empty public day set is refused there, not a
    # division by zero
    cfg = HatReleaseConfig(noise_scale=1.0, weekdays="sat", start=START, end=START + dt.timedelta(days=1))
    noise = LoggedNoise()
    with pytest.raises(InputError, match="public day set is empty") as err:
        release_fleet([tmp_path / "never-read.parquet"], cfg, noise=noise)
    assert err.value.parameters == ("dates", "weekdays", "holidays") and noise.draws == 0


def test_allowed_a_meaningless_loss_is_labelled_not_dp(fleet: Path) -> None:
    cfg = HatReleaseConfig(epsilon_per_day=1e300, mechanism="laplace", **WINDOW)
    release, _ = release_fleet([fleet], cfg, allow_meaningless_epsilon=True)
    p = release.privacy
    assert p["differentially_private"] is False and p["dp_label"] == "NOT differentially private"
    assert any("epsilon 1e+300 per vehicle-day is above 100" in r for r in p["not_dp_reasons"])  # type: ignore[attr-defined]


def test_a_budget_dataset_refuses_a_not_dp_release_before_reading(tmp_path: Path) -> None:
    cfg = HatReleaseConfig(epsilon_per_day=1.0)  # no --start/--end: the window would be read from the data
    missing = tmp_path / "never-read.parquet"
    session = ReleaseCharge("fleet", str(tmp_path / "b.sqlite"), unit="vehicle-day")
    with session, pytest.raises(InvalidParameterError, match=r"NOT differentially private.*date window"):
        release_fleet([missing], cfg, session=session)  # refused before the missing file is looked at
    assert not session.reserved


def test_the_release_reserves_through_its_session(fleet: Path) -> None:
    cfg = HatReleaseConfig(epsilon_per_day=2.0, mechanism="laplace", **WINDOW)
    with ReleaseCharge(None, None, unit="vehicle-day", noise=LoggedNoise()) as session:
        release, _ = release_fleet([fleet], cfg, session=session)
    assert session.reserved and session.noise_drawn and len(session.days) == 3
    assert release.privacy["differentially_private"] is True
    with pytest.raises(ValueError, match="give noise and allow_meaningless_epsilon to the ReleaseCharge"):
        release_fleet([fleet], cfg, session=session, noise=OpenDPNoise())
