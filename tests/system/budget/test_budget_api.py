"""``ud.budget`` from Python: declare a dataset, release twice through a Session, the second refused; ``show``,
``remaining`` and ``history`` state what the releases' privacy.json state, as ``urbandp budget`` does."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import urbandp as ud
from urbandp.cli import app

BOX = "21.09,72.75,21.25,72.91"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    path = tmp_path_factory.mktemp("fleet") / "f.parquet"
    made = CliRunner().invoke(app, ["synth", "fleet", "--vehicles", "8", "--days", "1", "--out", str(path)])
    assert made.exit_code == 0, made.output
    return pl.read_parquet(path)


def _release(store: str, fleet: pl.DataFrame, out: Path) -> ud.Release:
    with ud.Session(store=store, dataset="surat", operator="ana") as s:
        rel = ud.fleet.release(
            fleet, start="2021-11-15", end="2021-11-15", epsilon_per_day=4, domain_bbox=BOX, session=s
        )
        rel.write(out)
    return rel


def test_declare_then_two_releases_the_second_refused(fleet: pl.DataFrame, tmp_path: Path) -> None:
    store = str(tmp_path / "b.sqlite")
    caps = ud.budget.declare(store, "surat", unit="vehicle-day", epsilon_total=6, operator="ana")
    assert (caps.unit, caps.epsilon_total, caps.delta_total) == ("vehicle-day", 6.0, 1e-5)
    _release(store, fleet, tmp_path / "first")
    stated = json.loads((tmp_path / "first" / "privacy.json").read_text())
    status = ud.budget.show(store, "surat")
    assert status.epsilon_spent == stated["epsilon_per_window"]
    assert status.delta_spent == stated["delta_per_window"]
    left = ud.budget.remaining(store, "surat")
    assert left.epsilon_total == pytest.approx(6 - stated["epsilon_per_window"], abs=1e-12)
    assert left.rho_total is None and left.epsilon_per_day is None
    with pytest.raises(ud.BudgetExceededError):
        _release(store, fleet, tmp_path / "second")
    assert not (tmp_path / "second").exists()
    assert ud.budget.show(store, "surat").epsilon_spent == stated["epsilon_per_window"]
    kinds = [(e["kind"], e.get("field"), e.get("status")) for e in ud.budget.history(store, "surat")]
    assert kinds[0][0] == "cap change" and ("release", None, "committed") in kinds
    assert sum(k == "release" for k, _, _ in kinds) == 1  # the refused one reserved nothing


def test_the_cli_prints_what_the_api_returns(fleet: pl.DataFrame, tmp_path: Path) -> None:
    store = str(tmp_path / "b.sqlite")
    ud.budget.declare(store, "surat", unit="vehicle-day", epsilon_total=100)
    _release(store, fleet, tmp_path / "rel")
    status = ud.budget.show(store, "surat")
    shown = CliRunner().invoke(app, ["budget", "show", "surat", "--budget-store", store], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    assert f"epsilon over all releases {status.epsilon_spent:.6g}" in shown.output
    assert status.remaining.epsilon_total is not None
    assert f"(left {status.remaining.epsilon_total:.6g} of 100)" in shown.output


@pytest.mark.parametrize(
    ("keywords", "parameter"),
    [
        ({"unit": "vehicle-day", "epsilon_total": "12"}, "epsilon_total"),
        ({"unit": "vehicle-day", "epsilon_total": True}, "epsilon_total"),
        ({"unit": "vehicle-day", "epsilon_per_day": math.inf}, "epsilon_per_day"),
        ({"unit": "vehicle-day", "epsilon_per_day": 10**400}, "epsilon_per_day"),
        ({"unit": "vehicle-day", "rho_total": 0}, "rho_total"),
        ({"unit": "vehicle-day", "epsilon_total": 1, "delta_total": 2}, "delta_total"),
        ({"unit": "bus", "epsilon_total": 1}, "unit"),
        ({"unit": 3, "epsilon_total": 1}, "unit"),
        ({"unit": "vehicle-day", "epsilon_total": 1, "operator": 5}, "operator"),
    ],
)
def test_a_bad_value_is_refused_naming_its_parameter(
    tmp_path: Path, keywords: dict[str, object], parameter: str
) -> None:
    with pytest.raises(ud.InvalidParameterError) as err:
        ud.budget.declare(str(tmp_path / "b.sqlite"), "surat", **keywords)  # type: ignore[arg-type]
    assert err.value.parameters == (parameter,)
    assert not (tmp_path / "b.sqlite").exists() or ud.budget.history(str(tmp_path / "b.sqlite"), "x") == []


def test_a_store_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ud.InvalidParameterError) as err:
        ud.budget.show(["b.sqlite"], "surat")  # type: ignore[arg-type]
    assert err.value.parameters == ("store",)
