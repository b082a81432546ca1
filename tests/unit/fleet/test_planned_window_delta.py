"""The window delta booked before noise is the one privacy.json states after accounting (issue 30, item 3).

The budget store composes and caps each release's delta over the window (``ReleaseCharge.reserve(window_delta=...)``);
the fleet computes it from public parameters only (``plan.planned_window_delta``), before any record is read.
These tests pin it against the ``delta_per_window`` that the accounting states, for each selection and level set.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from urbandp._privacy.budget_store import DatasetCaps, open_store
from urbandp._privacy.session import ReleaseCharge
from urbandp._synth.fleet import generate_fleet
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._pipeline import release_fleet
from urbandp.fleet._plan import planned_window_delta

START = dt.date(2024, 3, 4)
DAYS = 3
WINDOW = {"start": START, "end": START + dt.timedelta(days=DAYS - 1)}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fleet") / "fleet.parquet"
    generate_fleet(20, DAYS, 5, start=START, records_per_vehicle_day=60).write_parquet(path)
    return path


def _declare(path: Path, caps: DatasetCaps) -> None:
    store = open_store(str(path))
    try:
        store.init_dataset(caps)
    finally:
        store.close()


CASES: list[dict[str, Any]] = [
    {"epsilon_per_day": 10, "max_hats_per_vehicle_day": 8},  # Gaussian, unknown domain
    {"epsilon_per_day": 4, "max_hats_per_vehicle_day": 8, "mechanism": "laplace"},  # Laplace threshold
    {"epsilon_per_day": 10, "max_hats_per_vehicle_day": 8, "coarsen": "auto"},  # three levels
    {"epsilon_per_day": 4, "domain_bbox": (21.09, 72.75, 21.25, 72.91)},  # public extent: conversion only
    {"epsilon_per_day": 4, "domain_bbox": (21.09, 72.75, 21.25, 72.91), "mechanism": "laplace"},  # pure DP
]


@pytest.mark.parametrize(
    "params", CASES, ids=["gaussian", "laplace", "coarsen-auto", "extent", "extent-laplace"]
)
def test_the_planned_window_delta_is_the_stated_one(fleet: Path, params: dict[str, Any]) -> None:
    cfg = HatReleaseConfig(**WINDOW, **params)
    release, _ = release_fleet([fleet], cfg)
    stated = float(release.privacy["delta_per_window"])  # type: ignore[arg-type]
    assert planned_window_delta(cfg, DAYS) == pytest.approx(stated, rel=1e-12, abs=1e-300)


def test_the_store_books_the_window_delta_and_refuses_it_at_the_cap_before_noise(
    fleet: Path, tmp_path: Path
) -> None:
    """K 8 over 3 days at epsilon 10 without an extent: the selection's delta over the window passes 1e-5."""
    store = tmp_path / "budget.sqlite"
    _declare(store, DatasetCaps("surat", "vehicle-day", 1000.0, delta_total=1.0))
    cfg = HatReleaseConfig(**WINDOW, epsilon_per_day=10, max_hats_per_vehicle_day=8)
    planned = planned_window_delta(cfg, DAYS)
    assert planned > 1e-5
    with ReleaseCharge("surat", str(store), unit="vehicle-day") as session:
        release_fleet([fleet], cfg, session=session)
    with sqlite3.connect(store) as db:
        booked = db.execute("SELECT window_delta FROM releases").fetchall()
    assert booked == [(pytest.approx(planned, rel=1e-12),)]
    tight = tmp_path / "tight.sqlite"
    _declare(tight, DatasetCaps("surat", "vehicle-day", 1000.0))  # the default delta cap, 1e-5
    from urbandp.errors import BudgetExceededError

    with (
        pytest.raises(BudgetExceededError, match="delta"),
        ReleaseCharge("surat", str(tight), unit="vehicle-day") as s2,
    ):
        release_fleet([fleet], cfg, session=s2)
    assert not s2.noise_drawn
