"""``urbandp survey od-randomize --person P --max-trips-per-person K`` and ``urbandp survey od-estimate`` as real
processes: the loss per person stated and booked in a ``person`` dataset, the bound's flags refused alone, and the
de-biased table written from the released trips."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from urbandp_process import assert_refused, run_urbandp

from urbandp._privacy.budget_store import BudgetStore
from urbandp.survey._synth import write_survey
from urbandp.survey._trips import od_epsilon, per_person_epsilon

pytestmark = pytest.mark.system

OD = ["--from", "from_county", "--to", "to_county", "--blocks", "19"]


@pytest.fixture(scope="module")
def trips(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("survey")
    write_survey(out, households=150, seed=2)
    return out / "trips.csv"


def test_od_randomize_books_the_loss_per_person_in_a_person_dataset(trips: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "b.sqlite")
    for name, unit in (("people", "person"), ("journeys", "trip")):
        res = run_urbandp(
            "budget", "init", name, "--unit", unit, "--epsilon-total", "30", "--budget-store", store
        )
        assert res.returncode == 0, res.stderr
    bound = ["--person", "household", "--max-trips-per-person", "4", "--epsilon", "3"]
    charge = ["--budget-store", store, "--survey-date", "2021-10-05"]
    res = run_urbandp(
        "survey", "od-randomize", str(trips), *OD, *bound, "--dataset", "people", *charge, "--out",
        str(tmp_path / "rel"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    priv = json.loads((tmp_path / "rel" / "privacy.json").read_text())
    p = priv["keep_probability"]
    assert priv["unit"] == "person" and priv["differentially_private"] is True
    assert priv["epsilon_per_trip"] == od_epsilon(19, p) and priv["epsilon_per_trip"] <= 3
    assert priv["epsilon"] == priv["epsilon_per_person"] == per_person_epsilon(19, p, 4)
    assert priv["epsilon_per_person"] == pytest.approx(12.0, abs=1e-9)
    released = pl.read_csv(tmp_path / "rel" / "trips.csv")
    per_person = pl.read_csv(trips).group_by("household").len().get_column("len").clip(upper_bound=4).sum()
    assert released.height == per_person  # each household keeps min(trips, 4)
    s = BudgetStore(store)
    try:
        (spent,) = s.spend_per_day("people").values()
    finally:
        s.close()
    assert spent[0] == pytest.approx(12.0, abs=1e-9)
    # a trip dataset books a trip's loss: a per-person release is refused, nothing drawn or written
    res = run_urbandp(
        "survey", "od-randomize", str(trips), *OD, *bound, "--dataset", "journeys", *charge, "--out",
        str(tmp_path / "rel2"),
    )  # fmt: skip
    assert_refused(res, "dataset 'journeys' is declared in unit trip; this release charges person")
    assert not (tmp_path / "rel2").exists()


def test_a_person_column_without_a_bound_is_refused(trips: Path, tmp_path: Path) -> None:
    res = run_urbandp(
        "survey", "od-randomize", str(trips), *OD, "--epsilon", "3", "--person", "household", "--out",
        str(tmp_path / "rel"),
    )  # fmt: skip
    assert_refused(res, "give --person and --max-trips-per-person together")
    assert not (tmp_path / "rel").exists()


def test_od_estimate_writes_the_de_biased_table(trips: Path, tmp_path: Path) -> None:
    rel = tmp_path / "rel"
    made = run_urbandp(
        "survey", "od-randomize", str(trips), *OD, "--keep-probability", "0.5", "--out", str(rel)
    )
    assert made.returncode == 0, made.stderr
    out = tmp_path / "od.csv"
    res = run_urbandp(
        "survey", "od-estimate", str(rel / "trips.csv"), *OD, "--keep-probability", "0.5", "--out", str(out)
    )
    assert res.returncode == 0, res.stderr
    table = pl.read_csv(out, schema_overrides={"from_county": pl.String, "to_county": pl.String})
    assert table.columns == ["from_county", "to_county", "released", "estimate", "sd", "ci_low", "ci_high"]
    n = pl.read_csv(rel / "trips.csv").height
    assert table.height == 19 * 19 and int(table["released"].sum()) == n
    assert table["estimate"].sum() == pytest.approx(n)  # the inverse keeps the total
    b = 0.5 / 361  # (1 - p) / t
    first = table.row(0, named=True)
    assert first["estimate"] == pytest.approx((first["released"] - b * n) / 0.5, rel=1e-12)
    assert (table["ci_low"] <= table["ci_high"]).all() and (table["ci_low"] >= 0).all()
    bad = run_urbandp("survey", "od-estimate", str(rel / "trips.csv"), *OD, "--out", str(tmp_path / "x.csv"))
    assert_refused(bad, "give exactly one of --keep-probability or --epsilon")
