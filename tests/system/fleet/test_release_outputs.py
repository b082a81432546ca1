"""Issue 8/9 for the fleet release: honest labels, owner-only material, strict JSON, guardrails, bad values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from urbandp._synth.fleet import generate_fleet, write_fleet
from urbandp.cli import app

runner = CliRunner()
BBOX = "21.09,72.75,21.25,72.91"


@pytest.fixture(scope="module")
def fleet_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    df = generate_fleet(vehicles=40, days=2, seed=5, records_per_vehicle_day=200)
    return write_fleet(df, tmp_path_factory.mktemp("fleet") / "fleet.parquet")


def _release(fleet_file: Path, out: Path, *extra: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["release", str(fleet_file), "--out", str(out), *extra])


def _strict_json(path: Path) -> dict:  # type: ignore[type-arg]
    def refuse(token: str) -> None:
        raise AssertionError(f"non-strict JSON token {token}")

    return json.loads(path.read_text(), parse_constant=refuse)  # type: ignore[arg-type]


def test_derived_window_is_not_dp_and_a_given_one_is(fleet_file: Path, tmp_path: Path) -> None:
    res = _release(fleet_file, tmp_path / "a", "--epsilon-per-day", "10", "--domain-bbox", BBOX, "--no-map")
    assert res.exit_code == 0, res.output
    p = _strict_json(tmp_path / "a" / "privacy.json")
    assert p["differentially_private"] is False
    assert any("derived from the data" in why for why in p["not_dp_reasons"])
    res = _release(
        fleet_file, tmp_path / "b", "--epsilon-per-day", "10", "--domain-bbox", BBOX, "--no-map",
        "--start", "2021-11-15", "--end", "2021-11-16",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    p = _strict_json(tmp_path / "b" / "privacy.json")
    assert p["not_dp_reasons"] == [] and p["differentially_private"] is True
    assert p["dp_label"] == "DP (add/remove a vehicle-day)"
    assert p["mechanism"] == "gaussian"
    assert p["command_line"].startswith("urbandp")
    assert p["input"]["speed_unit"] == "km/h" and "column_mapping" in p["input"]


def test_empty_release_warns_with_the_threshold_and_strict_exits_3(fleet_file: Path, tmp_path: Path) -> None:
    args = ("--epsilon-per-day", "1", "--start", "2021-11-15", "--end", "2021-11-16", "--no-map")
    res = _release(fleet_file, tmp_path / "a", *args)
    assert res.exit_code == 0, res.output
    assert "urbandp: warning: the release holds no HAT" in res.output
    assert "selection threshold" in res.output and "options that change it most" in res.output
    p = _strict_json(tmp_path / "a" / "privacy.json")  # strict JSON although the query scales are infinite
    assert p["hats_released"] == 0 and p["useless_release"] is True
    assert p["noise_scale"]["speed"] is None and p["noise_scale_reason"]
    assert any("holds no HAT" in w for w in p["warnings"])
    res = _release(fleet_file, tmp_path / "b", *args, "--strict")
    assert res.exit_code == 3
    assert (tmp_path / "b" / "privacy.json").is_file()  # written as usual


def test_presence_public_is_labelled_as_such(fleet_file: Path, tmp_path: Path) -> None:
    res = _release(
        fleet_file, tmp_path / "a", "--epsilon-per-day", "5", "--neighbouring", "presence-public",
        "--selection", "public-threshold", "--min-vehicles-per-day", "1",
        "--start", "2021-11-15", "--end", "2021-11-16",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "DP for speeds; presence public" in res.output
    p = _strict_json(tmp_path / "a" / "privacy.json")
    assert p["dp_label"] == "DP for speeds; presence public"
    assert "DP for speeds; presence public" in (tmp_path / "a" / "map.html").read_text()


def test_no_map_leaves_no_stale_map_and_quarantine_is_owner_only(fleet_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel"
    args = ("--noise-scale", "100", "--neighbouring", "replace-one", "--selection", "public-threshold")
    assert _release(fleet_file, out, *args).exit_code == 0
    assert (out / "map.html").is_file()
    assert _release(fleet_file, out, *args, "--no-map", "--overwrite").exit_code == 0
    assert not (out / "map.html").exists()
    assert sorted(f.name for f in out.iterdir()) == [
        ".urbandp-output.json",
        "hat_speed.csv",
        "hat_speed.geojson",
        "hat_speed.parquet",
        "privacy.json",
    ]  # hat_speeding.csv only with --queries speed,speeding
    owner = tmp_path / "owner_only" / "rel"
    assert (owner / "quarantine.csv").is_file() and (owner / "owner_notes.json").is_file()
    assert (owner / "input_report.json").is_file()
    p = _strict_json(out / "privacy.json")
    assert set(p["not_dp_outputs"]) == {
        f"../owner_only/rel/{name}" for name in ("quarantine.csv", "owner_notes.json", "input_report.json")
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--epsilon-per-day", "inf"], "epsilon_per_day"),
        (["--epsilon-per-day", "0"], "epsilon_per_day"),
        (["--noise-scale", "inf"], "noise_scale"),
        (["--noise-scale", "-2"], "noise_scale"),
        (["--epsilon-per-day", "1", "--delta", "-1"], "delta"),
        (["--epsilon-per-day", "1", "--min-vehicles-per-day", "nan"], "min_vehicles_per_day"),
        (["--epsilon-per-day", "1", "--speed-max", "inf"], "speed_max"),
        (["--epsilon-per-day", "1", "--domain-bbox", "21.0,72.7,21.3,inf"], "--domain-bbox"),
        (["--epsilon-per-day", "1", "--speed-reject-above", "0"], "--speed-reject-above"),
        (["--epsilon-per-day", "1", "--mechanism", "uniform"], "mechanism"),
    ],
)
def test_bad_values_exit_2_with_one_line(
    fleet_file: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    res = _release(fleet_file, tmp_path / "o", *args)
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    option = "--" + message.strip("-").replace("_", "-")  # the CLI's finite-number rule names the option
    assert len(lines) == 1 and lines[0].startswith("urbandp: error:"), res.output
    assert message in lines[0] or option in lines[0], res.output
    assert not (tmp_path / "o").exists()


def test_toml_takes_the_cli_strings_and_names_bad_keys(fleet_file: Path, tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text(
        f'[release]\nepsilon_per_day = 10\nhours = "10-16"\ndomain_bbox = "{BBOX}"\n'
        'start = 2021-11-15\nend = 2021-11-16\nneighbouring = "replace-one"\n'
    )
    res = _release(fleet_file, tmp_path / "a", "--config", str(good), "--no-map")
    assert res.exit_code == 0, res.output
    p = _strict_json(tmp_path / "a" / "privacy.json")
    assert p["window"]["hours"] == [10, 16] and p["neighbouring"] == "presence-public"
    cases = {
        '[release]\nepsilon_per_day = 1\nhours = "ten"\n': "hours",
        "[release]\nepsilon_per_day = 1\nmin_vehicle_per_day = 3\n": "did you mean 'min_vehicles_per_day'",
        "[relase]\nepsilon_per_day = 1\n": "did you mean [release]",
        "[release]\nepsilon_per_day = 1\n[input]\nspeed_unit = 1\n": f"speed_unit in {tmp_path / 'bad.toml'} [input] = 1",
        '[release]\nepsilon_per_day = "a lot"\n': "epsilon_per_day",
        "[release]\nepsilon_per_day = inf\n": "epsilon_per_day",
        '[release]\nepsilon_per_day = 1\ndomain_bbox = "1,2,3"\n': "domain_bbox",
    }
    for text, message in cases.items():
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        res = _release(fleet_file, tmp_path / "b", "--config", str(bad))
        assert res.exit_code == 2, (text, res.output)
        lines = [ln for ln in res.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and message in lines[0], (text, res.output)


def test_released_means_and_intervals_stay_in_the_physical_range(fleet_file: Path, tmp_path: Path) -> None:
    import polars as pl

    res = _release(
        fleet_file, tmp_path / "a", "--noise-scale", "30", "--neighbouring", "replace-one",
        "--selection", "public-threshold", "--min-vehicles-per-day", "1", "--no-map",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    speed = pl.read_csv(tmp_path / "a" / "hat_speed.csv")
    assert speed.height > 0
    for col in ("mean_speed", "ci95_low", "ci95_high"):
        assert speed[col].min() >= 0 and speed[col].max() <= 65  # type: ignore[operator]
    assert set(speed["resolution"].to_list()) == {7}
    assert math.isclose(speed["noise_scale"][0], 30.0)


def test_plan_spends_nothing_by_default_and_charges_its_histogram(fleet_file: Path, tmp_path: Path) -> None:
    args = ["plan", str(fleet_file), "--epsilon-per-day", "10", "--domain-bbox", BBOX,
            "--start", "2021-11-15", "--end", "2021-11-16", "--target-error", "2"]  # fmt: skip
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    plan = _strict_json(tmp_path / "p" / "plan.json")
    assert plan["spends"]["epsilon"] == 0.0 and plan["reads_data"] is False
    assert plan["noise_sd"]["noisy_sum"] > 0 and plan["target_error"]["km_h"] == 2.0
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "q"), "--histogram-epsilon", "1"])
    assert res.exit_code == 0, res.output
    plan = _strict_json(tmp_path / "q" / "plan.json")
    assert plan["spends"]["epsilon"] == pytest.approx(1.0) and plan["reads_data"] is True
    assert plan["expected_hats_passing"] is not None


def test_days_without_records_are_warned_and_listed_owner_only(fleet_file: Path, tmp_path: Path) -> None:
    res = _release(
        fleet_file, tmp_path / "a", "--noise-scale", "1", "--neighbouring", "presence-public",
        "--selection", "public-threshold", "--start", "2021-11-15", "--end", "2021-11-17", "--no-map",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "1 day(s) of the window hold no record" in res.output
    notes = _strict_json(tmp_path / "owner_only" / "a" / "owner_notes.json")
    assert notes["days_without_records"] == ["2021-11-17"]
    assert "2021-11-17" not in (tmp_path / "a" / "privacy.json").read_text().replace(
        '"end": "2021-11-17"', ""
    )


def test_presence_public_gaussian_with_dp_selection_runs_and_stays_in_budget(
    fleet_file: Path, tmp_path: Path
) -> None:
    res = _release(
        fleet_file, tmp_path / "a", "--epsilon-per-day", "10", "--neighbouring", "presence-public",
        "--domain-bbox", BBOX, "--start", "2021-11-15", "--end", "2021-11-16", "--no-map",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    p = _strict_json(tmp_path / "a" / "privacy.json")
    assert p["mechanism"] == "gaussian" and p["cumulative_epsilon_per_day"] <= 10 + 1e-9
    assert p["dp_label"] == "DP for speeds; presence public"
