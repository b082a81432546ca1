"""`urbandp sensing ...` end to end on generated data and on the Kolkata PM2.5 files."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from urbandp.cli import app
from urbandp.sensing._queries import error2_range

REPO = Path(__file__).resolve().parents[3]
DATA = REPO.parent / "shared" / "data"
KOLKATA = DATA / "kolkata-pm25" / "Mobile_Spring.csv"

pytestmark = pytest.mark.system
runner = CliRunner()


def _run(*args: str) -> object:
    return runner.invoke(app, ["sensing", *args])


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "readings.csv"
    res = _run("synth", str(out), "--readings", "300", "--vehicles", "4", "--hours", "2", "--seed", "3")
    assert res.exit_code == 0, res.output
    return out


def test_interpolate_then_query(synthetic: Path, tmp_path: Path) -> None:
    out = tmp_path / "interp"
    res = _run(
        "interpolate", str(synthetic), "--out", str(out), "--cell-metres", "1000", "--cv-folds", "3", "--plot"
    )
    assert res.exit_code == 0, res.output
    grid = pl.read_parquet(out / "grid.parquet")
    assert grid.columns == ["cell_id", "lat", "lon", "window", "mu", "sigma2"]
    assert grid["window"].unique().sort().to_list() == ["2024-01-15T08:00", "2024-01-15T09:00"]
    assert (grid["sigma2"] >= 0).all()
    report = json.loads((out / "report.json").read_text())
    assert report["differentially_private"] is False
    assert report["cross_validation"]["rmse_gp"] < report["cross_validation"]["rmse_idw"]
    assert (out / "map_mu_sigma2.png").stat().st_size > 10_000
    lat0, lon0 = grid["lat"].min(), grid["lon"].min()
    rect = f"{lat0},{lon0},{lat0 + 0.05},{lon0 + 0.05}"
    for qtype, extra in [
        ("average", []),
        ("max", ["--rho", "0.5"]),
        ("min-exact", []),
        ("count", ["--theta", "60"]),
        ("range", ["--theta", "50", "--theta2", "70"]),
    ]:
        js = tmp_path / f"{qtype}.json"
        res = _run(
            "query",
            str(out / "grid.parquet"),
            "--rect",
            rect,
            "--type",
            qtype,
            "--alpha",
            "3",
            "--sigma2-min",
            "0",
            "--sigma2-max",
            "400",
            "--out",
            str(js),
            *extra,
        )
        assert res.exit_code == 0, res.output
        ans = json.loads(js.read_text())
        # The noisy E^2 is clamped to its public per-reading range (queries.error2_range): for COUNT and RANGE
        # that range grows with n and may exceed sigma2_max.
        lo, hi = error2_range(qtype, ans["n_cells"], 0.0, 400.0, ans.get("steepness", 1.0))
        assert ans["answered"] and lo <= ans["noisy_error2"] <= hi and 0 < ans["epsilon"] <= 1.0
    res = _run(
        "query",
        str(out / "grid.parquet"),
        "--rect",
        rect,
        "--alpha",
        "100000",
        "--sigma2-min",
        "0",
        "--sigma2-max",
        "400",
    )
    assert res.exit_code == 0 and "refused" in res.output


def test_dp_map_on_synthetic(synthetic: Path, tmp_path: Path) -> None:
    out = tmp_path / "dp"
    res = _run(
        "dp-map",
        str(synthetic),
        "--out",
        str(out),
        "--bbox",
        "22.49,88.32,22.60,88.44",
        "--cell-metres",
        "1000",
        "--epsilon",
        "0.5",
        "--utility-epsilons",
        "0.5,10",
        "--start",
        "2024-01-15T08:00",
        "--end",
        "2024-01-15T10:00",
    )
    assert res.exit_code == 0, res.output
    owner = tmp_path / "owner_only" / "dp"
    dp = pl.read_csv(out / "dp_grid.csv")
    assert dp.columns == ["cell_id", "lat", "lon", "window", "sigma2_dp"]
    assert dp["sigma2_dp"].min() >= 0 and dp["sigma2_dp"].max() <= 1
    priv = json.loads((out / "privacy.json").read_text())
    cells = priv["cells_per_window"]
    assert priv["differentially_private"] is True
    # per-cell Delta = 1 on [0, 1]: Holohan's factor is 1, epsilon per cell exactly 0.5; the map's cells compose
    # optimally at delta 1e-6 (issue 20), below the basic cells x 0.5
    assert 0.5 - 1e-11 < priv["epsilon_cell_actual_max"] <= 0.5  # the 2^-40 lattice slack is inside epsilon
    basic = priv["basic_composition"]["epsilon_per_window_map"]
    assert cells * 0.5 * (1 - 1e-11) < basic <= cells * 0.5
    assert priv["epsilon_per_window_map"] < basic and priv["delta_per_reading"] == 1e-6
    assert priv["epsilon_per_reading_replace_one"] < 2 * priv["epsilon_per_window_map"]
    assert 2 * cells * 0.5 * (1 - 1e-11) < priv["ledger"]["epsilon_spent"] <= 2 * cells * 0.5
    lk = pl.read_csv(owner / "leakage.csv")
    assert (lk["recall_before"] > lk["recall_after"]).all()
    rm = pl.read_csv(owner / "rmse_vs_epsilon.csv")
    assert rm.height == 4
    assert (
        rm.filter(pl.col("epsilon") == 10)["rmse_std"] < rm.filter(pl.col("epsilon") == 0.5)["rmse_std"]
    ).all()
    assert (owner / "rmse_vs_epsilon.png").exists() and (owner / "dp_sigma2.png").exists()
    # the paper's version runs, and says it is not DP
    res = _run(
        "dp-map",
        str(synthetic),
        "--out",
        str(tmp_path / "paper"),
        "--bbox",
        "22.49,88.32,22.60,88.44",
        "--cell-metres",
        "1000",
        "--calibration",
        "paper",
        "--utility-epsilons",
        "",
    )
    assert res.exit_code == 0, res.output
    assert "NOT differentially private" in res.output
    assert json.loads((tmp_path / "paper" / "privacy.json").read_text())["differentially_private"] is False


def test_budget_refusal(synthetic: Path, tmp_path: Path) -> None:
    res = _run(
        "dp-map",
        str(synthetic),
        "--out",
        str(tmp_path / "b"),
        "--bbox",
        "22.49,88.32,22.60,88.44",
        "--cell-metres",
        "1000",
        "--budget",
        "5",
        "--epsilon",
        "0.5",
        "--utility-epsilons",
        "",
    )
    assert res.exit_code == 4  # budget exceeded
    assert "privacy budget exceeded" in res.output


@pytest.mark.parametrize(
    "args",
    [
        ["interpolate", "/nonexistent.csv", "--out", "OUT"],
        ["interpolate", "BAD", "--out", "OUT"],
        ["interpolate", "SYN", "--out", "OUT", "--kernel", "cubic"],
        ["interpolate", "SYN", "--out", "OUT", "--cell-metres", "-5"],
        ["dp-map", "SYN", "--out", "OUT"],
        ["dp-map", "SYN", "--out", "OUT", "--bbox", "1,2,3"],
        ["dp-map", "SYN", "--out", "OUT", "--bbox", "22.49,88.32,22.60,88.44", "--calibration", "x"],
        ["query", "/nonexistent.csv", "--rect", "1,2,3,4", "--sigma2-min", "0", "--sigma2-max", "1"],
        ["query", "SYN", "--rect", "1,2,3,4", "--sigma2-min", "0", "--sigma2-max", "1"],
        ["query", "SYN", "--rect", "1,2,3,4"],
    ],
)
def test_unusable_input_exits_2_with_one_line(args: list[str], synthetic: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("lat,lon,value\n1,2,3\n")
    args = [
        str(synthetic) if a == "SYN" else str(bad) if a == "BAD" else str(tmp_path / "o") if a == "OUT" else a
        for a in args
    ]
    res = _run(*args)
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("urbandp: error: ")


@pytest.mark.real_data
@pytest.mark.skipif(not KOLKATA.exists(), reason="../shared/data not beside the checkout")
def test_kolkata_spring_end_to_end(tmp_path: Path) -> None:
    src = tmp_path / "mobile.csv"
    # the real file plus three bad rows that must be quarantined, not crash the run
    src.write_text(
        KOLKATA.read_text() + "22.50,88.33,not a time,40\n22.50,,4/25/2023 5:00,40\nx,88.3,4/25/2023 5:00,1\n"
    )
    out = tmp_path / "k"
    res = _run("interpolate", str(src), "--out", str(out), "--cell-metres", "1500", "--cv-max-windows", "5")
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    assert report["rows"]["rows_read"] == 525 and report["rows"]["rows_quarantined"] == 3
    assert report["windows"]["windows_fitted"] == 37  # hours with >= 3 readings in Mobile_Spring.csv
    q = pl.read_csv(out / "quarantine.csv")
    assert sorted(q["reason"].to_list()) == [
        "latitude not a number",
        "longitude not a number",
        "time not parseable",
    ]
    grid = pl.read_parquet(out / "grid.parquet")
    assert grid["window"][0] == "2023-04-25T05:00"
    res = _run(
        "dp-map",
        str(KOLKATA),
        "--out",
        str(tmp_path / "d"),
        "--bbox",
        "22.45,88.30,22.60,88.47",
        "--cell-metres",
        "1500",
        "--epsilon",
        "0.5",
        "--utility-epsilons",
        "1",
        "--allow-meaningless-epsilon",
    )
    assert res.exit_code == 0, res.output
    lk = pl.read_csv(tmp_path / "owner_only" / "d" / "leakage.csv")
    assert lk["recall_before"].mean() > 0.5 > lk["recall_after"].mean()
    priv = json.loads((tmp_path / "d" / "privacy.json").read_text())
    # the window came from the data, and a vehicle-day pays far above 100: both labelled NOT DP (one guard)
    assert priv["differentially_private"] is False and len(priv["not_dp_reasons"]) == 2
    windows, cells = priv["windows_released"], priv["cells_per_window"]
    basic = priv["basic_composition"]["epsilon_vehicle_upper_bound"]
    assert windows * cells * 0.5 * (1 - 1e-11) < basic <= windows * cells * 0.5
    assert priv["epsilon_vehicle_upper_bound"] < basic  # composed optimally at delta 1e-6
    assert (
        f"epsilon {priv['epsilon_per_vehicle_day']:.3g} per vehicle-day is above 100"
        in priv["not_dp_reasons"][1]
    )
    assert priv["warnings"] == [] and "NOT differentially private: epsilon" in res.output
