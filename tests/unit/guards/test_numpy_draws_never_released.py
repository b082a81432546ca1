"""NumPy's generators serve simulations only (the planner's synthetic fleets, the advice's prediction, synthetic
data): a release's noise comes from its session's noise source (OpenDP), so no published value may depend on a NumPy
draw. The release below runs with no noise, so its tables are a function of the data alone, while every NumPy
generator (``default_rng`` whatever its seed, and the legacy global one) is seeded 1 in one run and 2 in the other:
a NumPy draw anywhere on the path to a published value would move it.

The second case makes the release useless on purpose (a route domain of cells, at epsilon 0.05:
every interval is wider than U/2), so the advice runs the planner's simulation, whose NumPy draws redraw the noise
of published counts (fleet/_predict.py). The tables still may not move, and the fleet that simulation starts from
is the release's own noisy counts: its advice is post-processing of what is published."""

from __future__ import annotations

from pathlib import Path
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


def _release_with_numpy_seeded(
    seed: int, monkeypatch: pytest.MonkeyPatch, draws: list[int] | None = None, **options: Any
) -> Any:
    real = np.random.default_rng

    def reseeded(*_args: object, **_kwargs: object) -> np.random.Generator:
        if draws is not None:
            draws.append(seed)
        return real(seed)

    monkeypatch.setattr(np.random, "default_rng", reseeded)
    np.random.seed(seed)  # the legacy global generator too
    session = ud.Session(noise=ExactNoiseForTesting(acknowledge_not_private=True))
    rel = ud.fleet.release(
        RECORDS,
        session=session,
        start="2021-11-15",
        end="2021-11-15",
        with_map=False,
        **(options or {"epsilon_per_day": 1, "domain_bbox": (21.09, 72.75, 21.25, 72.91)}),
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


@pytest.mark.filterwarnings("ignore")
def test_the_advice_simulates_from_published_counts_and_moves_no_published_value(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import h3

    import urbandp.fleet._predict as predict

    cells = sorted(
        {h3.latlng_to_cell(a, b, 8) for a, b in zip(RECORDS["latitude"], RECORDS["longitude"], strict=True)}
    )
    (tmp_path / "cells.txt").write_text("\n".join(cells) + "\n")
    profiles: list[Any] = []
    simulate = predict.simulate

    def recording(cfg: Any, days: int, profile: Any, *rest: Any) -> Any:
        profiles.append(profile)
        return simulate(cfg, days, profile, *rest)

    monkeypatch.setattr(predict, "simulate", recording)
    draws: list[int] = []
    useless = {"epsilon_per_day": 0.05, "domain_cells": tmp_path / "cells.txt"}
    first = _release_with_numpy_seeded(1, monkeypatch, draws, **useless)
    second = _release_with_numpy_seeded(2, monkeypatch, draws, **useless)
    assert profiles and 1 in draws and 2 in draws  # the advice's simulation ran, and drew from NumPy
    for name, table in first.tables.items():
        assert table.equals(second.tables[name]), f"the published {name} depends on NumPy's draws"
    published = first.tables["hat_speed"]
    assert published.height > 0 and not published["useful"].any()  # released, none useful: the advice runs
    hats, _ = profiles[0].sample(np.random.default_rng(0))  # the profile ignores its generator: no draw
    assert sorted(hats["per_day"].to_list()) == sorted(
        published["noisy_vehicle_days"].fill_null(0.0).to_list()
    )
