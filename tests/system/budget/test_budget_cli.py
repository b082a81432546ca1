"""``urbandp budget`` and ``urbandp release --dataset`` driven as a user would."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner
from warm_process import run_warm

from urbandp._privacy.budget_store import BudgetStore, DatasetCaps
from urbandp.cli import app

runner = CliRunner()


def test_corrupted_store_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "b.sqlite"
    bad.write_bytes(b"garbage" * 500)
    r = runner.invoke(app, ["budget", "show", "x", "--budget-store", str(bad)])
    assert r.exit_code == 2
    assert "not a usable database" in r.output
    assert bad.read_bytes() == b"garbage" * 500


def test_counts_release_charges_card_days(tmp_path: Path) -> None:
    store = str(tmp_path / "budget.sqlite")
    taps = tmp_path / "taps"
    r = runner.invoke(
        app, ["counts", "synth", "--out", str(taps), "--days", "2", "--trips-per-day", "300", "--seed", "3"]
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app,
        ["budget", "init", "opal", "--unit", "card-day", "--epsilon-per-day", "1.5", "--budget-store", store],
    )
    assert r.exit_code == 0, r.output
    args = ["counts", "release", str(taps / "events.csv"), "--domain", str(taps / "domain.json")]
    args += [
        "--unit",
        "card-day",
        "--max-events",
        "4",
        "--epsilon",
        "1",
        "--dataset",
        "opal",
        "--budget-store",
        store,
    ]
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "rel1")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "rel2")])
    assert r.exit_code == 4
    assert "asked epsilon=1 per card-day, left 0.5 of 1.5" in r.output
    assert not (tmp_path / "rel2").exists()
    unit_at = args.index("card-day")
    r = runner.invoke(app, [*args[:unit_at], "event", *args[unit_at + 1 :], "--out", str(tmp_path / "rel3")])
    assert r.exit_code == 2
    assert "declared in unit card-day; this release charges event" in r.output


def test_sensing_dp_map_charges_readings(tmp_path: Path) -> None:
    store = str(tmp_path / "budget.sqlite")
    readings = tmp_path / "readings.csv"
    r = runner.invoke(
        app,
        [
            "sensing",
            "synth",
            str(readings),
            "--readings",
            "300",
            "--vehicles",
            "4",
            "--hours",
            "2",
            "--seed",
            "3",
        ],
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app,
        [
            "budget",
            "init",
            "pm25",
            "--unit",
            "vehicle-day",
            "--epsilon-per-day",
            "20",
            "--budget-store",
            store,
        ],
    )
    assert r.exit_code == 0, r.output
    args = ["sensing", "dp-map", str(readings), "--bbox", "22.49,88.32,22.60,88.44", "--cell-metres", "1000"]
    args += ["--epsilon", "0.02", "--utility-epsilons", "", "--dataset", "pm25", "--budget-store", store]
    no_window = runner.invoke(app, [*args, "--out", str(tmp_path / "map0")])
    assert no_window.exit_code == 2 and "NOT differentially private" in no_window.stderr  # never booked as DP
    args += ["--start", "2024-01-15", "--end", "2024-01-15"]  # the public window makes it DP and chargeable
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "map1")])
    assert r.exit_code == 0, r.output
    priv = json.loads((tmp_path / "map1" / "privacy.json").read_text())
    per_reading = priv["epsilon_per_reading"]
    per_day = priv["epsilon_per_vehicle_day"]  # booked: the day's 24 windows x 169 cells, composed (issue 30)
    s = runner.invoke(app, ["budget", "show", "pm25", "--budget-store", store])
    assert (
        s.output.splitlines()[2].split()
        == [
            "2024-01-15",
            f"{per_day:.6g}",
            f"{20 - per_day:.6g}",
            "0",
            "1e-06",  # the day's delta (issue 30): the release lies in one day, so the window's delta is 1e-6 as well
        ]
    )
    assert "delta per day at most 1e-06; delta over all releases 1e-06 (left 9e-06 of 1e-05)" in s.output
    # the window's cells composed optimally at delta 1e-6 (issue 20): below the basic cells x epsilon
    assert priv["delta_per_reading"] == 1e-6
    assert 0 < per_reading < priv["basic_composition"]["epsilon_per_window_map"]
    fits = int(20 // per_day)
    for i in range(fits - 1):  # the first is booked already
        assert runner.invoke(app, [*args, "--out", str(tmp_path / f"more{i}")]).exit_code == 0
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "map2")])
    assert r.exit_code == 4  # budget exceeded (errors.py)
    assert "exceeded on 2024-01-15" in r.output


def _urbandp(*args: str) -> subprocess.CompletedProcess[str]:
    return run_warm(list(args), timeout=120)


def _snapshot(url: str) -> tuple[object, ...]:
    s = BudgetStore(url)
    try:
        return s.caps("bus"), s.spend_per_day("bus"), s.history("bus")
    finally:
        s.close()


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from urbandp.survey._synth import write_survey

    out = tmp_path_factory.mktemp("survey") / "data"
    write_survey(out, households=200, seed=1)
    return out / "homes.csv"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["budget", "show", "tram"], "unknown dataset 'tram' in budget store"),
        (["budget", "history", "tram"], "(known: bus); declare it with `urbandp budget init`"),
        (["budget", "init", "bus", "--unit", "card-day", "--epsilon-per-day", "2"],
         "dataset 'bus' is declared in unit vehicle-day, not card-day; a unit cannot change"),
        (["budget", "init", "bus", "--unit", "vehicle-day", "--epsilon-per-day", "0.5"],
         "cannot lower epsilon per day of 'bus' to 0.5: 0.8 already spent on 2024-03-04"),
        (["budget", "init", "bus", "--unit", "vehicle-day", "--epsilon-per-day", "1", "--epsilon-total", "1"],
         "cannot lower epsilon total of 'bus' to 1: 1.6 already spent"),
        (["survey", "randomize", "HOMES", "--column", "household", "--categories", "1,2,3", "--epsilon", "1",
          "--dataset", "tram", "--survey-date", "2024-03-04", "--out", "OUT"], "unknown dataset 'tram'"),
        (["survey", "randomize", "HOMES", "--column", "household", "--categories", "1,2,3", "--epsilon", "1",
          "--dataset", "bus", "--survey-date", "2024-03-04", "--out", "OUT"],
         "dataset 'bus' is declared in unit vehicle-day; this release charges respondent"),
    ],
)  # fmt: skip
def test_bad_input_to_the_store_is_one_line_exit_2_and_loses_nothing(
    tmp_path: Path, homes: Path, args: list[str], message: str
) -> None:
    url = str(tmp_path / "b.sqlite")
    s = BudgetStore(url)
    s.init_dataset(DatasetCaps("bus", "vehicle-day", 1.0, 10.0))
    for day in ("2024-03-04", "2024-03-05"):
        s.reserve(
            "bus",
            "vehicle-day",
            {dt.date.fromisoformat(day): 0.8},
            "laplace",
            {},
            "earlier release",
            window_delta=0.0,
            window_epsilon=0.8,
            window_rho=0.32,
        )
    s.close()
    before = _snapshot(url)
    out = tmp_path / "rel"
    args = [str(homes) if a == "HOMES" else str(out) if a == "OUT" else a for a in args]
    p = _urbandp(*args, "--budget-store", url)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("urbandp: error: "), p.stderr
    assert message in p.stderr
    assert _snapshot(url) == before  # nothing lost, nothing added
    assert not out.exists()


def test_corrupted_store_refuses_a_release_and_is_left_as_it_was(tmp_path: Path, homes: Path) -> None:
    bad = tmp_path / "b.sqlite"
    bad.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)  # a torn header: looks like SQLite, is not
    out = tmp_path / "rel"
    p = _urbandp(
        "survey", "randomize", str(homes), "--column", "household", "--categories", "1,2,3", "--epsilon", "1",
        "--dataset", "nhts", "--survey-date", "2024-03-04", "--budget-store", str(bad), "--out", str(out),
    )  # fmt: skip
    assert p.returncode == 2
    assert (
        p.stderr.count("\n") == 1
        and "is not a usable database" in p.stderr
        and "nothing was changed" in p.stderr
    )
    assert bad.read_bytes() == b"SQLite format 3\x00" + b"\xff" * 4000
    assert not out.exists()
