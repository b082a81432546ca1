"""`urbandp release --coarsen ... --clip-bound dp-quantile` as a user runs it: per-level charges in privacy.json,
each cell at its own resolution in the CSV and on the map, no parent over a released child, and the planner's
budget split."""

from __future__ import annotations

import json
import re
from pathlib import Path

import h3
import polars as pl
import pytest
from typer.testing import CliRunner

from urbandp._synth.fleet import generate_fleet, write_fleet
from urbandp.cli import app

runner = CliRunner()
BBOX = "21.09,72.75,21.25,72.91"
WINDOW = ("--start", "2021-11-15", "--end", "2021-11-16", "--hours", "9-13")


@pytest.fixture(scope="module")
def fleet_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    df = generate_fleet(vehicles=60, days=2, seed=11, records_per_vehicle_day=300)
    return write_fleet(df, tmp_path_factory.mktemp("fleet") / "fleet.parquet")


def _strict_json(path: Path) -> dict:  # type: ignore[type-arg]
    def refuse(token: str) -> None:
        raise AssertionError(f"non-strict JSON token {token}")

    return json.loads(path.read_text(), parse_constant=refuse)  # type: ignore[arg-type]


def test_coarsen_and_clip_bound_through_the_cli(fleet_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel"
    res = runner.invoke(
        app,
        [
            "release", str(fleet_file), "--out", str(out), "--epsilon-per-day", "15", "--domain-bbox", BBOX,
            *WINDOW, "--max-hats-per-vehicle-day", "16", "--coarsen", "auto", "--clip-bound", "dp-quantile",
            "--min-vehicles-per-day", "25",  # fine threshold 50 vehicle-days: 4-6 cells pass, 4-8 parents more
            "--coarsen-rule", "exclusive",
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    p = _strict_json(out / "privacy.json")
    names = [e["name"] for e in p["ledger"]["entries"]]
    assert names[0] == "clip bound (dp-quantile)"
    for level in ("finest", "parent1", "parent2"):
        assert f"selection [{level}]" in names and f"speed [{level}]" in names
    assert [lv["resolution"] for lv in p["coarsen"]["levels"]] == [7, 6, 5]
    rho = p["rho_per_day"]
    assert set(rho) == {"speed", "speeding", "selection", "clip_bound"}
    per_level = sum(lv["rho_per_day_total"] for lv in p["coarsen"]["levels"])
    assert sum(rho.values()) == pytest.approx(per_level + rho["clip_bound"], rel=1e-12)
    assert sum(e["rho"] for e in p["ledger"]["entries"]) == pytest.approx(sum(rho.values()), rel=1e-12)
    assert p["cumulative_epsilon_per_day"] <= 15.0
    assert 0 < p["clip_bound"]["bound"] <= p["speed_max"] == 65.0
    speed = pl.read_csv(out / "hat_speed.csv")
    assert {"level", "resolution"} <= set(speed.columns)
    assert p["hats_released"] == speed.height > 0
    assert speed["mean_speed"].drop_nulls().max() <= p["clip_bound"]["bound"]  # type: ignore[operator]
    for row in speed.iter_rows(named=True):
        assert h3.get_resolution(row["h3_cell"]) == row["resolution"]
    # no released HAT lies inside another released HAT of the same slot
    released = {(row["h3_cell"], row["slot"]) for row in speed.iter_rows(named=True)}
    for cell, slot in released:
        for res in range(h3.get_resolution(cell) - 1, 4, -1):
            assert (h3.cell_to_parent(cell, res), slot) not in released
    # OpenDP's noise is unseeded: over 201 releases 4-8 parents were released (6.85 on average, sd 0.87), so none
    # at all is about 1e-7 of runs (at --min-vehicles-per-day 20: 2-7 over 454 releases, none about 1e-4)
    assert speed.filter(pl.col("level") == "parent1").height >= 1
    html = (out / "map.html").read_text()
    for cell in speed["h3_cell"].to_list():
        assert cell in html
    data = json.loads(re.search(r'id="hat-data">(.*?)</script>', html, re.S).group(1))  # type: ignore[union-attr]
    assert {6, 7} <= set(data["resolutions"])  # each cell drawn at its own resolution


def test_coarsen_options_are_validated_and_planned(fleet_file: Path, tmp_path: Path) -> None:
    res = runner.invoke(
        app,
        [
            "release",
            str(fleet_file),
            "--out",
            str(tmp_path / "x"),
            "--noise-scale",
            "1",
            "--coarsen",
            "parent1",
        ],
    )
    assert res.exit_code == 2
    assert "epsilon-per-day" in res.output
    res = runner.invoke(
        app,
        [
            "release",
            str(fleet_file),
            "--out",
            str(tmp_path / "y"),
            "--epsilon-per-day",
            "5",
            "--coarsen",
            "parent9",
        ],
    )
    assert res.exit_code == 2
    res = runner.invoke(
        app,
        [
            "plan", str(fleet_file), "--out", str(tmp_path / "plan"), "--epsilon-per-day", "10", *WINDOW,
            "--coarsen", "parent1", "--clip-bound", "dp-quantile", "--domain-bbox", BBOX,
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    plan = _strict_json(tmp_path / "plan" / "plan.json")
    split = plan["budget_split"]
    assert split["unit"] == "rho"
    assert split["clip_bound"] + sum(split["levels"]) == pytest.approx(split["total"], rel=1e-14)
    assert split["levels"][1] == pytest.approx(0.3 * 0.95 * split["total"], rel=1e-14)


def test_fill_is_the_default_rule_and_each_level_is_listed(fleet_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "fill"
    res = runner.invoke(
        app,
        [
            "release", str(fleet_file), "--out", str(out), "--epsilon-per-day", "15", "--domain-bbox", BBOX,
            *WINDOW, "--max-hats-per-vehicle-day", "16", "--coarsen", "parent1", "--min-vehicles-per-day", "20",
            "--no-map",
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    p = _strict_json(out / "privacy.json")
    assert p["coarsen"]["rule"] == "fill" and "remainder" in p["coarsen"]["rule_explanation"]
    speed = pl.read_csv(out / "hat_speed.csv")
    levels = {lv["level"]: lv["hats_released"] for lv in p["coarsen"]["levels"] if lv["hats_released"]}
    assert speed.group_by("level").len().sort("level").rows() == sorted(levels.items())
    assert p["cumulative_epsilon_per_day"] <= 15.0
