"""`urbandp experiment mean` and `urbandp experiment busiest-hat`, driven like a user would."""

from __future__ import annotations

import subprocess
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner
from warm_process import run_warm

from urbandp._experiments.cli import app

REPO = Path(__file__).resolve().parents[3]
AUSTIN = REPO.parent / "shared" / "data" / "austin-avl"
runner = CliRunner()


def _urbandp(*args: str) -> subprocess.CompletedProcess[str]:
    return run_warm(list(args))


def test_synthetic_run_writes_table_csv_and_png(tmp_path: Path) -> None:
    proc = _urbandp(
        "experiment",
        "mean",
        "--synthetic",
        "user-scaling",
        "--runs",
        "300",
        "--epsilons",
        "0.5,2",
        "--out",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    assert "FIXEDQUANTILE" in proc.stdout and "EPS-DEPENDENTQUANTILE" in proc.stdout
    mae = pl.read_csv(tmp_path / "mae.csv")
    assert mae.columns == ["algorithm", "epsilon", "mae", "runs"]
    assert mae.height == 7 * 2 and set(mae["runs"].to_list()) == {300}
    assert set(mae["algorithm"].to_list()) == {
        "BASELINE",
        "ARRAY-AVERAGING",
        "ARRAY-AVERAGING-WRAPAROUND",
        "LEVY",
        "FIXEDQUANTILE",
        "EPS-DEPENDENTQUANTILE",
        "CLIPPED-MEAN",
    }
    assert (tmp_path / "mae.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_input_file_with_bad_rows_is_quarantined(tmp_path: Path) -> None:
    rows = (
        ["bus,speed"]
        + [f"b{i % 12},{10 + (i % 7)}" for i in range(240)]
        + [",12", "b1,abc", "b2,-3", "b3,99"]
    )
    path = tmp_path / "hat.csv"
    path.write_text("\n".join(rows) + "\n")
    res = runner.invoke(
        app,
        [
            "mean",
            "--input",
            str(path),
            "--vehicle-col",
            "bus",
            "--value-col",
            "speed",
            "--runs",
            "200",
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert res.exit_code == 0, res.output
    # the release's reading: a negative value is clipped to 0 (as the estimators clip), not quarantined
    assert "2 quarantined" in res.output and "2 values clipped" in res.output
    q = pl.read_csv(
        tmp_path / "owner_only" / "out" / "quarantine.csv"
    )  # raw rows: owner only, beside the output
    assert q.columns == ["bus", "speed", "reason"]
    assert sorted(q["reason"].to_list()) == ["missing or non-numeric value", "missing unit"]
    mae = pl.read_csv(tmp_path / "out" / "mae.csv")
    base = mae.filter((pl.col("algorithm") == "BASELINE") & (pl.col("epsilon") == 1.0))["mae"][0]
    # 12 vehicles, 242 usable values, m* = 21 (b2 and b3 have 20 + 1): Delta_f = 65 * 21 / 242; 200 runs -> 4 SE = 28 %
    assert base == pytest.approx(65 * 21 / 242, rel=0.3)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--input", "/nonexistent/hat.csv"], "--input /nonexistent/hat.csv: not found"),
        (["--synthetic", "city"], "--synthetic must be one of"),
        (["--epsilons", "1,zero"], "--epsilons must be"),
        (["--runs", "0"], "--runs must be"),
    ],
)
def test_unusable_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], needle: str) -> None:
    proc = _urbandp("experiment", "mean", *args, "--out", str(tmp_path))
    assert proc.returncode == 2
    assert (
        proc.stderr.count("\n") == 1 and proc.stderr.startswith("urbandp: error:") and needle in proc.stderr
    )


def test_missing_column_and_both_sources(tmp_path: Path) -> None:
    path = tmp_path / "hat.csv"
    path.write_text("bus,speed\nb1,10\n")
    res = runner.invoke(app, ["mean", "--input", str(path), "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and "no column vehicle_id (--vehicle-col;" in res.output
    res = runner.invoke(
        app, ["mean", "--input", str(path), "--synthetic", "itms-like", "--out", str(tmp_path / "out")]
    )
    assert res.exit_code == 2 and "not both" in res.output


@pytest.mark.real_data
@pytest.mark.skipif(not AUSTIN.exists(), reason="../shared/data/austin-avl not beside the checkout")
def test_busiest_austin_hat_end_to_end(tmp_path: Path) -> None:
    files = sorted(str(p) for p in AUSTIN.glob("2015-*.csv"))
    hat = tmp_path / "hat.csv"
    proc = _urbandp("experiment", "busiest-hat", *files, "--out", str(hat))
    assert proc.returncode == 0, proc.stderr
    records = pl.read_csv(hat)
    assert records["h3_cell"].unique().to_list() == ["87489e346ffffff"]
    assert records["slot"].unique().to_list() == ["14:00-15:00"]
    assert records.height == 1615 and records["vehicle_id"].n_unique() == 209
    m_star = int(records.group_by("vehicle_id").len()["len"].max())
    assert m_star == 25
    res = runner.invoke(app, ["mean", "--input", str(hat), "--runs", "2000", "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    mae = pl.read_csv(tmp_path / "out" / "mae.csv")
    for eps in (0.5, 1.0, 1.5, 2.0):
        b = 65.0 * m_star / 1615 / eps
        got = mae.filter((pl.col("algorithm") == "BASELINE") & (pl.col("epsilon") == eps))["mae"][0]
        assert abs(got - b) <= 4 * b / 2000**0.5
        aa = mae.filter((pl.col("algorithm") == "ARRAY-AVERAGING") & (pl.col("epsilon") == eps))["mae"][0]
        assert aa * 1.8 <= got  # clipping the counts pays off on real data too
