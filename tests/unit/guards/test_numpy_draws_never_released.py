"""NumPy's generators serve simulations only (the planner's synthetic fleets, the advice's prediction, synthetic
data): a release's noise comes from its session's noise source (OpenDP), so no published value may depend on a NumPy
draw. The release below runs with no noise, so its tables are a function of the data alone, while every NumPy
generator (``default_rng`` whatever its seed, and the legacy global one) is seeded 1 in one run and 2 in the other:
a NumPy draw anywhere on the path to a published value would move it."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

import urbandp as ud
from urbandp._privacy.noise import ExactNoiseForTesting


def _records() -> pl.DataFrame:
    """300 buses over a morning in the Surat extent, crowded into three hexagons."""
    rng = np.random.default_rng(7)
    n = 9000
    return pl.DataFrame(
        {
            "vehicle_id": [f"bus{i % 300}" for i in range(n)],
            "timestamp": [f"2021-11-15 {10 + (i % 3):02d}:{(i * 7) % 60:02d}:00" for i in range(n)],
            "speed": rng.uniform(5, 45, n),
            "latitude": 21.17 + rng.normal(0, 0.002, n),
            "longitude": 72.83 + rng.normal(0, 0.002, n),
        }
    )


RECORDS = _records()


def _release_with_numpy_seeded(seed: int, monkeypatch: pytest.MonkeyPatch) -> Any:
    real = np.random.default_rng

    def reseeded(*_args: object, **_kwargs: object) -> np.random.Generator:
        return real(seed)

    monkeypatch.setattr(np.random, "default_rng", reseeded)
    np.random.seed(seed)  # the legacy global generator too
    session = ud.Session(noise=ExactNoiseForTesting(acknowledge_not_private=True))
    rel = ud.fleet.release(
        RECORDS,
        session=session,
        start="2021-11-15",
        end="2021-11-15",
        epsilon_per_day=1,
        domain_bbox=(21.09, 72.75, 21.25, 72.91),
        with_map=False,
    )
    monkeypatch.setattr(np.random, "default_rng", real)
    return rel


@pytest.mark.filterwarnings("ignore")
def test_a_release_publishes_nothing_drawn_by_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    first = _release_with_numpy_seeded(1, monkeypatch)
    second = _release_with_numpy_seeded(2, monkeypatch)
    assert first.tables["hat_speed"].height == 3  # the three HATs the buses crowd, each released
    assert first.tables.keys() == second.tables.keys()
    for name, table in first.tables.items():
        assert table.equals(second.tables[name]), f"the published {name} depends on NumPy's draws"
