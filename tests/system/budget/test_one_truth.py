"""One truth per release: the budget store books exactly the loss the release's privacy.json states.

The release's loss is one object (:class:`urbandp.privacy.loss.ReleaseLoss`), made by the code that calibrates the
noise (the fleet's plan) and read by privacy.json, the store's booking and caps, ``budget show`` and ``budget
history``. Measured before: a Gaussian fleet release at epsilon 4 a day over 3 days was booked as 12 (3 x 4) while
its privacy.json stated 14.33 over the window (one vehicle on all 3 days costs 9 rho, Bun and Steinke 2016, Prop.
1.9): under-booked 1.19x at D = 3, 3.43x at D = 31; and the store's delta per day left out the selection
threshold's delta (5e-7 booked, 8.67e-7 stated).

Each case releases in-process through ``ud.fleet.release`` with a store and compares the booked figures with
privacy.json's, exactly (they are the same floats), on 1, 3 and 31 days.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

import urbandp as ud
from urbandp.errors import BudgetExceededError
from urbandp.privacy.budget_store import BudgetStore, DatasetCaps
from urbandp.synth.fleet import generate_fleet

pytestmark = [pytest.mark.system, pytest.mark.filterwarnings("ignore::UserWarning")]
START = dt.date(2024, 3, 4)
BBOX = (21.09, 72.75, 21.25, 72.91)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fleet") / "fleet.parquet"
    generate_fleet(4, 31, 3, start=START, records_per_vehicle_day=15, routes=3).write_parquet(path)
    return path


def _release(fleet: Path, tmp_path: Path, days: int, **options: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """One release charged to a fresh store: (privacy.json, the store's history row of it)."""
    store = str(tmp_path / "b.sqlite")
    s = BudgetStore(store)
    s.init_dataset(DatasetCaps("bus", "vehicle-day", 1000.0, delta_total=1.0))
    s.close()
    out = tmp_path / "rel"
    window = {"start": START, "end": START + dt.timedelta(days=days - 1)}
    with ud.Session(store=store, dataset="bus") as session:
        ud.fleet.release(fleet, **window, **options, session=session, out=out, with_map=False)
    stated = json.loads((out / "privacy.json").read_text())
    (booked,) = BudgetStore(store).history("bus")
    return stated, booked | {"per_day": BudgetStore(store).spend_per_day("bus")}


def _same(stated: dict[str, Any], booked: dict[str, Any], days: int) -> None:
    assert booked["days"] == stated["days"] == days
    assert booked["window_epsilon"] == stated["epsilon_per_window"]
    assert booked["window_delta"] == stated["delta_per_window"]
    assert (booked["delta_per_day"] or 0.0) == stated["delta_per_day"]  # a pure-DP day books no delta (NULL)
    assert {eps for eps, _ in booked["per_day"].values()} == {stated["cumulative_epsilon_per_day"]}
    loss = stated["loss"]
    assert loss["per_window"]["epsilon"] == stated["epsilon_per_window"] and loss["days"] == days
    if stated["mechanism"] == "gaussian":
        assert booked["window_rho"] == stated["rho_per_window"] == loss["per_window"]["rho"]
        assert {rho for _, rho in booked["per_day"].values()} == {loss["per_day"]["rho"]}


CASES = {
    "laplace": {"mechanism": "laplace", "domain_bbox": BBOX, "max_hats_per_vehicle_day": 4},
    "gaussian": {"domain_bbox": BBOX, "max_hats_per_vehicle_day": 4},
    "l2": {"domain_bbox": BBOX, "contribution_bounding": "l2"},
    "laplace-threshold": {"mechanism": "laplace", "max_hats_per_vehicle_day": 4},
}


@pytest.mark.parametrize("days", [1, 3, 31])
@pytest.mark.parametrize("case", list(CASES))
def test_the_store_books_what_privacy_json_states(fleet: Path, tmp_path: Path, case: str, days: int) -> None:
    stated, booked = _release(fleet, tmp_path, days, epsilon_per_day=4, **CASES[case])
    _same(stated, booked, days)


def test_a_gaussian_window_is_capped_as_stated_not_as_d_times_the_day(fleet: Path, tmp_path: Path) -> None:
    """The issue's case: --epsilon-total 12, then epsilon 4 a day over 3 days with Gaussian noise. A vehicle on all
    3 days costs 9 rho, epsilon 14.33 (not 3 x 4 = 12): the store refuses it before any noise, naming that figure."""
    store = str(tmp_path / "b.sqlite")
    s = BudgetStore(store)
    s.init_dataset(DatasetCaps("bus", "vehicle-day", None, epsilon_total=12.0))
    s.close()
    window = {"start": START, "end": START + dt.timedelta(days=2)}
    with (
        pytest.raises(BudgetExceededError, match=r"asked epsilon=14\.3282 over 3 days, left 12 of 12"),
        ud.Session(store=store, dataset="bus") as session,
    ):
        ud.fleet.release(fleet, **window, **CASES["l2"], epsilon_per_day=4, session=session, with_map=False)
    assert BudgetStore(store).history("bus") == []
