"""The fleet's building blocks refuse what the API refuses, whoever calls them."""

from __future__ import annotations

from pathlib import Path

import pytest

from urbandp._privacy.noise import ExactNoiseForTesting
from urbandp._records.validation import ValidationOptions
from urbandp.errors import InputError
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._pipeline import release_fleet


def test_release_fleet_refuses_an_unknown_engine_before_reading(tmp_path: Path) -> None:
    """An engine other than polars or spark is refused (it ran Polars silently); the path need not exist, since
    nothing is read first."""
    cfg = HatReleaseConfig(epsilon_per_day=1.0)
    with pytest.raises(InputError, match="engine must be polars or spark, got 'dask'") as err:
        release_fleet(
            [tmp_path / "absent.csv"],
            cfg,
            noise=ExactNoiseForTesting(acknowledge_not_private=True),
            engine="dask",
        )
    assert err.value.parameters == ("engine",)


def test_validation_options_refuse_a_cap_that_quarantines_every_row() -> None:
    with pytest.raises(InputError, match="speed_reject_above must be > 0") as err:
        ValidationOptions(speed_reject_above_kmh=0.0)
    assert err.value.parameters == ("speed_reject_above",)
