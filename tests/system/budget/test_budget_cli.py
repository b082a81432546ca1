"""``urbandp budget`` and ``urbandp release --dataset`` driven as a user would."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

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
    assert r.exit_code == 2
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
        ["budget", "init", "pm25", "--unit", "reading", "--epsilon-per-day", "20", "--budget-store", store],
    )
    assert r.exit_code == 0, r.output
    args = ["sensing", "dp-map", str(readings), "--bbox", "22.49,88.32,22.60,88.44", "--cell-metres", "1000"]
    args += ["--epsilon", "0.1", "--utility-epsilons", "", "--dataset", "pm25", "--budget-store", store]
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "map1")])
    assert r.exit_code == 0, r.output
    priv = json.loads((tmp_path / "map1" / "privacy.json").read_text())
    per_reading = priv["epsilon_per_reading"]
    s = runner.invoke(app, ["budget", "show", "pm25", "--budget-store", store])
    assert s.output.splitlines()[2].split() == [
        "2024-01-15",
        f"{per_reading:.6g}",
        f"{20 - per_reading:.6g}",
        "0",
    ]
    assert per_reading > 10  # the map costs cells x epsilon per cell; a second one does not fit under 20
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "map2")])
    assert r.exit_code == 2
    assert "exceeded on 2024-01-15" in r.output
