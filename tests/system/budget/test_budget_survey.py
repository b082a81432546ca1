"""``urbandp survey ... --dataset NAME --survey-date DAY``: survey releases charge the budget store.

A respondent (or a trip) is in every release of its survey, so its dataset declares ``--epsilon-total``; the
charge is booked on the survey's date. Each release reserves before its noise (the samplers are spied on), a
refused one draws none and writes nothing, and a release that is not DP cannot be charged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import urbandp.survey._locations
import urbandp.survey._randomized_response
import urbandp.survey._trips
from urbandp._privacy.budget_store import STATUS_COMMITTED, STATUS_RESERVED, BudgetStore
from urbandp.cli import app
from urbandp.survey._synth import write_survey

runner = CliRunner()
DAY = "2021-10-05"


@pytest.fixture(scope="module")
def survey(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("survey") / "data"
    write_survey(out, households=600, seed=4)
    return out


def _init(url: str, name: str, unit: str, total: str) -> None:
    r = runner.invoke(
        app, ["budget", "init", name, "--unit", unit, "--epsilon-total", total, "--budget-store", url]
    )
    assert r.exit_code == 0, r.output


def _history(url: str, name: str) -> list[dict[str, Any]]:
    s = BudgetStore(url)
    try:
        return s.history(name)
    finally:
        s.close()


def _spy(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, url: str, ds: str) -> list[list[str]]:
    seen: list[list[str]] = []
    original = getattr(module, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append([h["status"] for h in _history(url, ds)])
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return seen


def _randomize(survey: Path, out: Path, url: str, *extra: str) -> Any:
    args = ["survey", "randomize", str(survey / "vehicles.csv"), "--column", "model", "--categories-file"]
    args += [str(survey / "models.csv"), "--within", "fuel", "--aliases", str(survey / "aliases.csv")]
    return runner.invoke(app, [*args, "--out", str(out), "--budget-store", url, *extra])


def test_randomize_reserves_before_noise_and_stops_at_the_total(
    tmp_path: Path, survey: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = str(tmp_path / "budget.sqlite")
    _init(url, "nhts", "respondent", "3")
    seen = _spy(monkeypatch, urbandp.survey._randomized_response, "randomize_within", url, "nhts")
    charged = ["--dataset", "nhts", "--survey-date", DAY, "--epsilon", "1.5"]
    for i in (1, 2):
        r = _randomize(survey, tmp_path / f"rr{i}", url, *charged)
        assert r.exit_code == 0, r.output
    assert seen == [[STATUS_RESERVED], [STATUS_COMMITTED, STATUS_RESERVED]]
    r = _randomize(survey, tmp_path / "rr3", url, *charged)
    assert r.exit_code == 4
    assert "total privacy budget of 'nhts' exceeded: asked epsilon=1.5 over 1 day, left 0 of 3" in r.output
    assert len(seen) == 2  # the refused release drew no noise
    assert not (tmp_path / "rr3").exists()
    hist = _history(url, "nhts")
    assert [(h["status"], h["first_day"], h["epsilon_sum"], h["mechanism"]) for h in hist] == [
        (STATUS_COMMITTED, DAY, 1.5, "survey-krr")
    ] * 2
    priv = json.loads((tmp_path / "rr1" / "privacy.json").read_text())
    assert priv["epsilon"] == pytest.approx(1.5)  # what the release says it spent is what was charged
    # bad or missing date: one line, exit 2, nothing charged
    r = _randomize(survey, tmp_path / "rr4", url, "--dataset", "nhts", "--epsilon", "1")
    assert r.exit_code == 2 and "--dataset needs --survey-date" in r.output
    r = _randomize(
        survey, tmp_path / "rr4", url, "--dataset", "nhts", "--survey-date", "5/10/21", "--epsilon", "1"
    )
    assert r.exit_code == 2 and "--survey-date must be a date YYYY-MM-DD, got '5/10/21'" in r.output
    assert len(_history(url, "nhts")) == 2


def test_points_are_geo_indistinguishable_not_dp_and_never_booked(
    tmp_path: Path, survey: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """perturb-points was labelled DP and booked epsilon per metre x 1000 m against a respondent dataset's
    epsilon total, although a respondent whose location is replaced anywhere has an unbounded loss. It is now
    refused with a dataset (nothing drawn, nothing booked) and states geo-indistinguishability in its own unit."""
    url = str(tmp_path / "budget.sqlite")
    _init(url, "homes", "respondent", "2.5")
    seen = _spy(monkeypatch, urbandp.survey._locations, "planar_laplace_offsets", url, "homes")
    args = ["survey", "perturb-points", str(survey / "homes.csv"), "--lat", "lat", "--lon", "lon"]
    args += ["--epsilon-per-metre", "0.002"]
    charged = ["--dataset", "homes", "--survey-date", DAY, "--budget-store", url]
    r = runner.invoke(app, [*args, *charged, "--out", str(tmp_path / "p1")])
    assert r.exit_code == 2
    assert "--dataset: this release is NOT differentially private (geo-indistinguishability" in r.output
    assert seen == [] and _history(url, "homes") == [] and not (tmp_path / "p1").exists()
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "p2")])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "p2" / "privacy.json").read_text())
    assert doc["differentially_private"] is False and doc["epsilon"] is None
    assert doc["guarantee"].startswith("geo-indistinguishability")
    assert (doc["epsilon_per_metre"], doc["epsilon_at_budget_metres"], doc["budget_metres"]) == (
        0.002,
        2.0,
        1000.0,
    )
    entry = doc["ledger"]["entries"][0]
    assert (entry["unit"], entry["epsilon"]) == ("metre (geo-indistinguishability)", 0.002)


def test_od_trips_charge_a_trip_dataset(
    tmp_path: Path, survey: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urbandp.survey._trips import od_epsilon

    url = str(tmp_path / "budget.sqlite")
    _init(url, "nhts", "respondent", "10")
    _init(url, "nhts-trips", "trip", "10")
    seen = _spy(monkeypatch, urbandp.survey._trips, "od_randomize", url, "nhts-trips")
    args = ["survey", "od-randomize", str(survey / "trips.csv"), "--from", "from_county", "--to", "to_county"]
    args += ["--blocks", "19", "--keep-probability", "0.5", "--survey-date", DAY, "--budget-store", url]
    r = runner.invoke(app, [*args, "--dataset", "nhts", "--out", str(tmp_path / "od0")])
    assert r.exit_code == 2
    assert "dataset 'nhts' is declared in unit respondent; this release charges trip" in r.output
    assert seen == [] and not (tmp_path / "od0").exists()
    r = runner.invoke(app, [*args, "--dataset", "nhts-trips", "--out", str(tmp_path / "od1")])
    assert r.exit_code == 0, r.output
    assert seen == [[STATUS_RESERVED]]
    eps = json.loads((tmp_path / "od1" / "privacy.json").read_text())["epsilon"]
    assert eps == od_epsilon(19, 0.5)
    (h,) = _history(url, "nhts-trips")
    assert h["status"] == STATUS_COMMITTED and h["epsilon_sum"] == eps and h["content_hash"]


def test_releases_that_are_not_dp_cannot_be_charged(tmp_path: Path, survey: Path) -> None:
    url = str(tmp_path / "budget.sqlite")
    _init(url, "nhts", "respondent", "100")
    _init(url, "nhts-trips", "trip", "100")
    charged = ["--survey-date", DAY, "--budget-store", url]
    runs = {
        "report-replacement builds its replacements from the true answers": _randomize(
            survey, tmp_path / "a", url, "--dataset", "nhts", "--survey-date", DAY, "--method", "report-replacement",
            "--p", "0.5"),
        "--method histogram draws replacements from the true histogram": runner.invoke(app, [
            "survey", "od-randomize", str(survey / "trips.csv"), "--from", "from_county", "--to", "to_county",
            "--blocks", "19", "--keep-probability", "0.5", "--method", "histogram", "--dataset", "nhts-trips",
            *charged, "--out", str(tmp_path / "b")]),
        "perturb-trajectories publishes every trip's start and end point unchanged": runner.invoke(app, [
            "survey", "perturb-trajectories", str(survey / "trajectories.csv"), "--lat", "lat", "--lon", "lon",
            "--trip", "trip", "--order", "seq", "--epsilon", "50", "--max-step-metres", "150",
            "--dataset", "nhts-trips", *charged, "--out", str(tmp_path / "c")]),
    }  # fmt: skip
    for why, r in runs.items():
        assert r.exit_code == 2, r.output
        assert (
            f"--dataset: this release is NOT differentially private ({why}); it cannot be charged" in r.output
        )
    assert not any((tmp_path / x).exists() for x in "abc")
    assert _history(url, "nhts") == [] and _history(url, "nhts-trips") == []


def test_a_respondent_dataset_needs_a_total_cap(tmp_path: Path) -> None:
    url = str(tmp_path / "budget.sqlite")
    r = runner.invoke(
        app,
        ["budget", "init", "nhts", "--unit", "respondent", "--epsilon-per-day", "1", "--budget-store", url],
    )
    assert r.exit_code == 2
    assert "a respondent is in every release of the survey" in r.output and "--epsilon-total" in r.output
