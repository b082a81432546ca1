"""Issue 30 items 5 and 6 in `sensing pm-map` and `dp-map`: the vehicle-window unit, the per-vehicle figures, one
guard on the loss per vehicle-day, and a public privacy.json that does not move when only the true data do."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from urbandp_process import assert_refused, owner_report, run_urbandp

BBOX = "22.49,88.32,22.60,88.44"
WINDOW = ("--start", "2024-01-15T08:00", "--end", "2024-01-15T12:00")  # 4 hourly windows


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10 vehicles, 1400 readings over 4 hours: 35 readings per vehicle-window."""
    out = tmp_path_factory.mktemp("fleet") / "fleet.csv"
    res = run_urbandp("sensing", "synth", str(out), "--readings", "1400", "--vehicles", "10", "--hours", "4")
    assert res.returncode == 0, res.stderr
    return out


def _pm(data: Path, out: Path, *extra: str) -> tuple[int, str, dict | None]:
    res = run_urbandp("sensing", "pm-map", str(data), "--bbox", BBOX, *WINDOW, "--smoother", "none",
                      "--out", str(out), *extra)  # fmt: skip
    p = out / "privacy.json"
    return res.returncode, res.stderr, json.loads(p.read_text()) if res.returncode == 0 else None


def test_vehicle_column_makes_the_vehicle_window_the_default_unit(fleet: Path, tmp_path: Path) -> None:
    rc, err, p = _pm(fleet, tmp_path / "v", "--epsilon", "2")
    assert rc == 0 and p is not None, err
    assert p["privacy_unit"] == "one vehicle-window" and p["differentially_private"] is True
    # M = 3 (default): L1 sensitivities 3 and 3 x 125; each at epsilon 1 -> scales 3 and 375
    assert p["count"] == {"sensitivity": 3.0, "scale": 3.0, "epsilon": 1.0}
    assert p["centred_sum"]["sensitivity"] == 375.0 and p["centred_sum"]["scale"] == 375.0
    v = p["per_vehicle"]
    assert v["bounded"] is True and v["max_readings_per_vehicle_window"] == 3
    assert v["epsilon_per_vehicle_window"] == 2.0 and v["windows_per_day_max"] == 4
    # one reading: removing it swaps at most two kept readings, L1 distances 2 and 250: 2 x 2 / 3
    assert p["epsilon_per_reading"] == pytest.approx(4.0 / 3.0, rel=1e-9)
    assert v["epsilon_per_vehicle_day"] == 8.0 and v["epsilon_per_vehicle_release"] == 8.0
    assert p["budget_booked"] == {"unit": "vehicle-day", "epsilon_per_day": 8.0}
    # the truncation is reported to the owner only: 35 readings per vehicle-window, 3 kept
    report = owner_report(tmp_path / "v")
    assert report["readings_used"] == 120 and report["vehicle_windows_truncated"] == 40
    assert report["readings_per_vehicle_window_max"] == 35
    assert "40 of 40 vehicle-windows hold more than 3 readings" in err
    assert "readings_used" not in json.dumps(p) and "35" not in json.dumps(p["per_vehicle"])


def test_reading_unit_states_that_a_vehicle_is_unbounded(fleet: Path, tmp_path: Path) -> None:
    rc, err, p = _pm(fleet, tmp_path / "r", "--unit", "reading", "--epsilon", "1")
    assert rc == 0 and p is not None, err
    assert p["privacy_unit"] == "one reading" and p["count"]["scale"] == 2.0
    assert p["per_vehicle"]["bounded"] is False and p["per_vehicle"]["epsilon_per_vehicle_window"] is None
    assert "m x 1 " in p["per_vehicle"]["rule"]
    # the figure read off the data (35 readings of a vehicle in one window) goes to the owner and stderr only
    report = owner_report(tmp_path / "r")
    assert report["epsilon_per_vehicle_window_observed_max"] == 35.0
    assert "protected only at 35 x 1 = 35 there" in err


def test_vehicle_unit_needs_ids_and_a_valid_bound(fleet: Path, shared_data: Path, tmp_path: Path) -> None:
    kolkata = shared_data / "kolkata-pm25" / "Mobile_Spring.csv"  # no vehicle id: the unit is one reading
    res = run_urbandp("sensing", "pm-map", str(kolkata), "--bbox", "22.45,88.30,22.65,88.47", "--start",
                      "2023-04-25", "--end", "2023-04-26", "--unit", "vehicle-window", "--out", str(tmp_path / "k"))  # fmt: skip
    assert_refused(res, "--unit vehicle-window needs vehicle ids")
    for extra, needle in (
        (("--vehicle-column", "bus"), "--vehicle-column 'bus': no such column"),
        (
            ("--max-readings-per-vehicle-window", "0"),
            "--max-readings-per-vehicle-window must be an integer >= 1",
        ),
        (("--unit", "car"), "--unit must be one of vehicle-window, reading"),
    ):
        res = run_urbandp("sensing", "pm-map", str(fleet), "--bbox", BBOX, *WINDOW, *extra, "--out",
                          str(tmp_path / "x"))  # fmt: skip
        assert_refused(res, needle)


def test_the_guard_sees_the_loss_per_vehicle_day(fleet: Path, tmp_path: Path) -> None:
    """30 per vehicle-window is under 100, but a vehicle in the 4 windows of the day pays 120: refused, or with
    --allow-meaningless-epsilon labelled NOT DP (issue 30 item 6: one SANE_EPSILON, on the loss per unit)."""
    res = run_urbandp("sensing", "pm-map", str(fleet), "--bbox", BBOX, *WINDOW, "--epsilon", "30",
                      "--out", str(tmp_path / "g"))  # fmt: skip
    assert_refused(res, "epsilon 120 per vehicle-day is above 100")
    assert not (tmp_path / "g").exists()
    rc, err, p = _pm(fleet, tmp_path / "g", "--epsilon", "30", "--allow-meaningless-epsilon")
    assert rc == 0 and p is not None, err
    assert p["differentially_private"] is False and p["dp_label"] == "NOT differentially private"
    assert p["not_dp_reasons"] == [
        "epsilon 120 per vehicle-day is above 100 (allow_meaningless_epsilon): no meaningful protection"
    ]
    rc, err, p = _pm(fleet, tmp_path / "ok", "--epsilon", "24")  # 96 per vehicle-day
    assert rc == 0 and p is not None and p["differentially_private"] is True, err


def _without(data: Path, out: Path, drop: pl.Expr) -> Path:
    df = pl.read_csv(data)
    df.filter(~drop).write_csv(out)
    assert pl.read_csv(out).height < df.height
    return out


def test_public_privacy_json_does_not_depend_on_the_true_data(fleet: Path, tmp_path: Path) -> None:
    """Two inputs that differ by one unit, same public parameters: privacy.json is identical (it holds no
    noise-derived field either). pm-map under both units, and dp-map."""
    hour2 = pl.col("time").str.starts_with("2024-01-15T10")
    one_vw = _without(fleet, tmp_path / "no_vw.csv", (pl.col("vehicle") == "v0003") & hour2)
    line = pl.int_range(pl.len()) == 700
    one_reading = _without(fleet, tmp_path / "no_reading.csv", line)
    cases = [
        ("pm-map", one_vw, ("--epsilon", "2", "--smoother", "none")),
        ("pm-map", one_reading, ("--epsilon", "1", "--unit", "reading", "--smoother", "none")),
        ("dp-map", one_reading, ("--epsilon", "0.05", "--cell-metres", "1000", "--utility-epsilons", "")),
    ]
    for i, (command, neighbour, extra) in enumerate(cases):
        docs = []
        for j, data in enumerate((fleet, neighbour)):
            out = tmp_path / f"{command}-{i}-{j}"
            res = run_urbandp(
                "sensing", command, str(data), "--bbox", BBOX, *WINDOW, *extra, "--out", str(out)
            )
            assert res.returncode == 0, res.stderr[-2000:]
            # the input path and the output name are public parameters that differ by construction
            docs.append((out / "privacy.json").read_text().replace(out.name, "OUT"))
        assert docs[0] == docs[1], command
        # and the owner reports do differ: the test inputs really are neighbours
        a = owner_report(tmp_path / f"{command}-{i}-0")
        b = owner_report(tmp_path / f"{command}-{i}-1")
        assert a != b
