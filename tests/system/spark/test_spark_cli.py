"""The CLI with ``--engine spark``: the same published numbers as the Polars engine, the quarantine as Parquet in
owner_only/, and option errors as one line with exit code 2 (those need no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner
from urbandp_process import owner_report

from urbandp._synth.fleet import generate_fleet, write_fleet
from urbandp.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    df = generate_fleet(vehicles=10, days=2, seed=8, records_per_vehicle_day=120)
    return write_fleet(df, tmp_path_factory.mktemp("cli") / "fleet.jsonl")


def _release(fleet: Path, out: Path, *extra: str) -> dict[str, object]:
    args = ["release", str(fleet), "--out", str(out), "--noise-scale", "2", "--no-map", *extra]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads((out / "privacy.json").read_text())


@pytest.mark.usefixtures("spark")
def test_release_engine_spark_matches_polars_and_writes_parquet_quarantine(
    fleet: Path, tmp_path: Path
) -> None:
    ours = _release(fleet, tmp_path / "polars")
    theirs = _release(fleet, tmp_path / "spark", "--engine", "spark", "--spark-master", "local[2]")
    o_ours, o_theirs = owner_report(tmp_path / "polars"), owner_report(tmp_path / "spark")
    for key in ("records_in", "records_quarantined", "quarantine_reasons", "records_in_window"):
        assert o_theirs[key] == o_ours[key], key
    assert theirs["window"] == ours["window"]
    assert o_theirs["records_quarantined"] > 0
    owner = tmp_path / "owner_only" / "spark"
    quarantine = pl.read_parquet(owner / "quarantine.parquet" / "*.parquet")
    assert quarantine.height == o_theirs["records_quarantined"]
    assert "../owner_only/spark/quarantine.parquet" in theirs["not_dp_outputs"]  # type: ignore[operator]
    assert not (tmp_path / "spark" / "quarantine.parquet").exists()  # never inside the release folder
    polars_q = pl.read_csv(tmp_path / "owner_only" / "polars" / "quarantine.csv", infer_schema=False)
    assert sorted(quarantine["reason"].to_list()) == sorted(polars_q["reason"].to_list())


@pytest.mark.usefixtures("spark")
def test_counts_release_engine_spark_reports_the_same_input(tmp_path: Path) -> None:
    res = runner.invoke(app, ["counts", "synth", "--out", str(tmp_path / "taps"), "--days", "1", "--trips-per-day", "400",
                              "--ferry-trips-per-day", "50"])  # fmt: skip
    assert res.exit_code == 0, res.output
    reports = []
    for engine in ("polars", "spark"):
        out = tmp_path / f"rel-{engine}"
        args = ["counts", "release", str(tmp_path / "taps" / "events.csv"), "--domain", str(tmp_path / "taps" / "domain.json"),
                "--unit", "card-day", "--max-events", "2", "--noise-scale", "1", "--out", str(out), "--engine", engine]  # fmt: skip
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        reports.append(json.loads((tmp_path / "owner_only" / out.name / "input_report.json").read_text()))
    assert reports[0] == reports[1]
    assert reports[0]["truncated_events"] > 0
    assert (tmp_path / "owner_only" / "rel-spark" / "quarantine.parquet").is_dir()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "dask"], "--engine must be polars or spark"),
        (["--spark-master", "local[2]"], "--spark-master needs --engine spark"),
    ],
)
def test_engine_option_errors_are_one_line(
    fleet: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    res = runner.invoke(
        app, ["release", str(fleet), "--out", str(tmp_path / "o"), "--noise-scale", "2", *args]
    )
    assert res.exit_code == 2
    assert message in res.output


def test_without_java_the_spark_engine_says_so(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No Java on PATH (or no PySpark): one clear line and exit 2, not a Java stack trace."""
    from urbandp._contributions import spark_session

    if spark_session.spark_missing_reason() is None:
        monkeypatch.delenv("JAVA_HOME", raising=False)
        monkeypatch.setenv("PATH", str(tmp_path))  # no java here
    reason = spark_session.spark_missing_reason()
    assert reason is not None and ("Java" in reason or "PySpark" in reason)
    res = runner.invoke(
        app, ["release", str(fleet), "--out", str(tmp_path / "o"), "--noise-scale", "2", "--engine", "spark"]
    )
    assert res.exit_code == 2
    assert "urbandp: error: --engine spark:" in res.output
