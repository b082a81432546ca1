"""`urbandp survey` driven as a user would, on the synthetic survey and on the GeoLife sample."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner
from urbandp_process import assert_refused, run_urbandp

from urbandp.cli import app
from urbandp.survey._synth import write_survey

pytestmark = pytest.mark.system
runner = CliRunner()


@pytest.fixture(scope="module")
def survey_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("survey") / "data"
    write_survey(out, households=1500, seed=4)
    return out


def _run(*args: str) -> object:
    return runner.invoke(app, ["survey", *args])


def test_randomize_within_fuel_quarantines_and_preserves_fuel(survey_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "rr"
    res = _run(
        "randomize",
        str(survey_dir / "vehicles.csv"),
        "--column",
        "model",
        "--categories-file",
        str(survey_dir / "models.csv"),
        "--within",
        "fuel",
        "--aliases",
        str(survey_dir / "aliases.csv"),
        "--epsilon",
        "1.5",
        "--out",
        str(out),
    )
    assert res.exit_code == 0, res.output
    priv = json.loads((out / "privacy.json").read_text())
    assert priv["unit"] == "respondent" and priv["epsilon"] <= 1.5 and priv["epsilon"] == pytest.approx(1.5)
    raw = pl.read_csv(survey_dir / "vehicles.csv")
    rel = pl.read_csv(out / "randomized.csv")
    quarantine = pl.read_csv(tmp_path / "owner_only" / "rr" / "quarantine.csv")
    # issue 20: an off-list answer is released as a uniform draw over its declared list (dropping the row would
    # reveal it); the owner's quarantine still lists it with that reason
    assert rel.height == raw.height  # no row dropped for its answer
    assert set(quarantine["reason"]) == {
        "not_in_declared_list: released as a uniform draw over the declared list"
    }
    assert set(quarantine["model"]) == {"Delorean DMC-12"}
    assert "Delorean DMC-12" not in set(rel["model"])
    assert rel["fuel"].value_counts().sort("fuel").equals(raw["fuel"].value_counts().sort("fuel"))
    assert "Chevy Malibu" not in set(rel["model"])  # aliases applied, reported to the owner
    alias = pl.read_csv(tmp_path / "owner_only" / "rr" / "alias_report.csv")
    assert alias.filter(pl.col("original") == "Chevy Malibu")["rows"][0] > 0
    assert not (out / "quarantine.csv").exists()

    est = tmp_path / "est.csv"
    res = _run(
        "estimate",
        str(out / "randomized.csv"),
        "--column",
        "model",
        "--categories-file",
        str(survey_dir / "models.csv"),
        "--within",
        "fuel",
        "--epsilon",
        "1.5",
        "--out",
        str(est),
    )
    assert res.exit_code == 0, res.output
    table = pl.read_csv(est)
    assert table.columns == ["group", "category", "estimate", "ci_low", "ci_high"]
    assert table["estimate"].sum() == pytest.approx(1.0, abs=1e-9)  # de-biased shares still sum to one


def test_binary_theta_and_report_replacement(survey_dir: Path, tmp_path: Path) -> None:
    csv = tmp_path / "peanuts.csv"
    pl.DataFrame({"eats_peanuts": ["yes"] * 300 + ["no"] * 700 + ["maybe"]}).write_csv(csv)
    res = _run(
        "randomize",
        str(csv),
        "--column",
        "eats_peanuts",
        "--categories",
        "yes,no",
        "--theta",
        "0.5",
        "--out",
        str(tmp_path / "b"),
    )
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "b" / "privacy.json").read_text())["epsilon"] == pytest.approx(math.log(3))
    res = _run(
        "randomize",
        str(survey_dir / "vehicles.csv"),
        "--column",
        "model",
        "--categories-file",
        str(survey_dir / "models.csv"),
        "--within",
        "fuel",
        "--aliases",
        str(survey_dir / "aliases.csv"),
        "--method",
        "report-replacement",
        "--p",
        "0.5",
        "--out",
        str(tmp_path / "rep"),
    )
    assert res.exit_code == 0, res.output
    priv = json.loads((tmp_path / "rep" / "privacy.json").read_text())
    assert priv["epsilon_is_dp"] is False and any(
        "NOT differentially private" in r for r in priv["not_dp_reasons"]
    )


def test_bad_input_and_budget_exit_2(survey_dir: Path, tmp_path: Path) -> None:
    res = _run(
        "randomize",
        str(survey_dir / "vehicles.csv"),
        "--column",
        "nope",
        "--categories",
        "a,b",
        "--epsilon",
        "1",
        "--out",
        str(tmp_path / "x"),
    )
    assert res.exit_code == 2 and "missing column" in res.output
    res = _run(
        "od-randomize",
        str(survey_dir / "trips.csv"),
        "--from",
        "from_county",
        "--to",
        "to_county",
        "--blocks",
        "19",
        "--keep-probability",
        "0.5",
        "--budget-epsilon",
        "5",
        "--out",
        str(tmp_path / "y"),
    )
    assert res.exit_code == 4 and "budget exceeded" in res.output
    assert not (tmp_path / "y").exists()


def test_points_od_escape(survey_dir: Path, tmp_path: Path) -> None:
    res = _run(
        "perturb-points",
        str(survey_dir / "homes.csv"),
        "--lat",
        "lat",
        "--lon",
        "lon",
        "--epsilon-per-metre",
        "0.01",
        "--bbox",
        "44.1,-94.3,46.1,-91.0",
        "--out",
        str(tmp_path / "p"),
    )
    assert res.exit_code == 0, res.output
    pts = pl.read_csv(tmp_path / "p" / "points.csv")
    report = json.loads((tmp_path / "owner_only" / "p" / "input_report.json").read_text())
    # issue 30: a home outside --bbox is moved into the box before noise, never dropped (dropping reveals it)
    assert pts.height == 1500 and pts.columns == ["lat", "lon"] and report["moved_into_bbox"] > 0
    res = _run(
        "od-randomize",
        str(survey_dir / "trips.csv"),
        "--from",
        "from_county",
        "--to",
        "to_county",
        "--blocks",
        "19",
        "--keep-probability",
        "0.5",
        "--out",
        str(tmp_path / "od"),
    )
    assert res.exit_code == 0, res.output
    priv = json.loads((tmp_path / "od" / "privacy.json").read_text())
    assert priv["unit"] == "trip" and round(priv["epsilon"]) == 6
    res = _run(
        "escape",
        str(survey_dir / "homes.csv"),
        "--lat",
        "lat",
        "--lon",
        "lon",
        "--grid",
        "10,20",
        "--bn",
        "0.1,1,10",
        "--runs",
        "2",
        "--out",
        str(tmp_path / "e"),
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "owner_only" / "e" / "escape.png").stat().st_size > 10_000


@pytest.mark.real_data
def test_geolife_trajectories_and_points(shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / "geolife-sample" / "geolife_small_movingpandas.csv"
    res = _run(
        "perturb-trajectories",
        str(src),
        "--separator",
        ";",
        "--lat",
        "Y",
        "--lon",
        "X",
        "--trip",
        "trajectory_id",
        "--order",
        "t",
        "--epsilon",
        "50",
        "--max-step-metres",
        "400",
        "--every",
        "10",
        "--max-trips",
        "3",
        "--out",
        str(tmp_path / "g"),
    )
    assert res.exit_code == 0, res.output
    priv = json.loads((tmp_path / "g" / "privacy.json").read_text())
    assert priv["epsilon_per_point"] == pytest.approx(37.5)
    rel = pl.read_csv(tmp_path / "g" / "trajectories.csv")
    assert sorted(rel["trajectory_id"].unique()) == [1, 3]
    q = pl.read_csv(tmp_path / "owner_only" / "g" / "quarantine.csv", separator=",")
    # trajectory 2 has a step longer than 400 m once thinned to every 10th point: quarantined whole, not clipped
    assert (
        set(q["trajectory_id"]) == {2} and q.height == 897 and set(q["reason"]) == {"step_exceeds_max_step"}
    )
    assert (tmp_path / "owner_only" / "g" / "original_vs_perturbed.png").exists()
    res = _run(
        "perturb-points",
        str(src),
        "--separator",
        ";",
        "--lat",
        "Y",
        "--lon",
        "X",
        "--scale-metres",
        "100",
        "--out",
        str(tmp_path / "gp"),
    )
    assert res.exit_code == 0, res.output
    moved = pl.read_csv(tmp_path / "gp" / "points.csv", separator=",")
    assert moved.height == 5908


def test_escape_polygons_geojson(survey_dir: Path, tmp_path: Path) -> None:
    """Arbitrary blocks from GeoJSON (report Fig. 21): four quadrants around the metro centre."""
    lat0, lon0 = 44.97, -93.22
    quads = []
    for dlat in (0, 1):
        for dlon in (0, 1):
            la, lo = lat0 - 1 + dlat, lon0 - 1 + dlon
            ring = [[lo, la], [lo + 1, la], [lo + 1, la + 1], [lo, la + 1], [lo, la]]
            quads.append(
                {"type": "Feature", "properties": {}, "geometry": {"type": "Polygon", "coordinates": [ring]}}
            )
    gj = tmp_path / "blocks.geojson"
    gj.write_text(json.dumps({"type": "FeatureCollection", "features": quads}))
    res = _run(
        "escape",
        str(survey_dir / "homes.csv"),
        "--lat",
        "lat",
        "--lon",
        "lon",
        "--grid",
        "10",
        "--bn",
        "1",
        "--polygons",
        str(gj),
        "--scale-degrees",
        "0.001,0.1",
        "--runs",
        "2",
        "--out",
        str(tmp_path / "e"),
    )
    assert res.exit_code == 0, res.output
    table = pl.read_csv(tmp_path / "owner_only" / "e" / "escape.csv").filter(pl.col("layout") == "polygons")
    small, large = table.sort("scale")["escape_share"].to_list()
    assert small < 0.02 < 0.2 < large
    priv = json.loads((tmp_path / "e" / "privacy.json").read_text())
    assert priv["epsilon"] is None and priv["epsilon_reason"]


def test_errors_name_the_flag_or_the_config_key(survey_dir: Path, tmp_path: Path) -> None:
    """Issue 31: the library names ``keep_probability``, ``budget_metres``, ``id_column``, ``keep_columns``
    (tests/unit/survey/test_error_parameters.py); the command line prints the command's flag (``--keep-probability``
    for ``od-randomize``'s ``p``, ``--id``), or the key of the ``--config`` file the value came from."""
    trips = [str(survey_dir / "trips.csv"), "--from", "from_county", "--to", "to_county", "--blocks", "19"]
    od = ["survey", "od-randomize", *trips, "--out", str(tmp_path / "od")]
    res = run_urbandp(*od, "--keep-probability", "1.5")
    assert_refused(
        res, "urbandp: error: --keep-probability must be a finite number >= 0 and < 1, got 1.5", others="none"
    )
    config = tmp_path / "c.toml"
    config.write_text(
        "[survey.od-randomize]\nkeep_probability = 1.5\n\n[survey.perturb-points]\nbudget_metres = 0\n"
    )
    res = run_urbandp(*od, "--config", str(config))
    needle = f"urbandp: error: keep_probability in {config} [survey.od-randomize] must be a finite number >= 0 and < 1, got 1.5"
    assert_refused(res, needle, others="none")
    homes = [str(survey_dir / "homes.csv"), "--lat", "lat", "--lon", "lon", "--scale-metres", "10"]
    res = run_urbandp(
        "survey", "perturb-points", *homes, "--out", str(tmp_path / "p"), "--config", str(config)
    )
    needle = f"urbandp: error: budget_metres in {config} [survey.perturb-points] must be a finite number > 0, got 0.0"
    assert_refused(res, needle, others="none")
    clash = "a column cannot be both perturbed and copied through unchanged (remove it from "
    res = run_urbandp("survey", "perturb-points", *homes, "--out", str(tmp_path / "p"), "--id", "lat")
    assert_refused(res, f"urbandp: error: lat: {clash}--id/--keep-columns)", others="none")
    # perturb-trajectories has no --id: its advice names only --keep-columns
    points = [str(survey_dir / "trajectories.csv"), "--lat", "lat", "--lon", "lon", "--trip", "trip"]
    ssd = [
        "--epsilon",
        "1",
        "--max-step-metres",
        "500",
        "--keep-columns",
        "lat",
        "--out",
        str(tmp_path / "t"),
    ]
    res = run_urbandp("survey", "perturb-trajectories", *points, *ssd)
    assert_refused(res, f"urbandp: error: lat: {clash}--keep-columns)", others="none")
