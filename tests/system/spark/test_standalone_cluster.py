"""A real Spark standalone cluster (issue 32): a master and two workers on 127.0.0.1, started with PySpark's own
daemon script, run a fleet release and a count release with ``--spark-master spark://127.0.0.1:PORT``; the results
equal the in-process Polars engine's.

What is measured: (1) through the Python API with the test-only no-noise source, in a driver process of its own,
every published table (hat_speed; the joint, time and location count tables) equals the Polars engine's exactly,
and so do the exact input counts (records in, quarantined per reason, outside the window, truncated); the same
under ``spark-submit`` with a driver JVM outside UTC (docs/scale-out.md's recipe); (2) the CLI
(``urbandp release`` / ``urbandp counts release`` as real processes, with OpenDP's noise) gives the same owner
counts and the same noise-free parts of privacy.json as ``--engine polars``; (3) the work ran on the cluster: after
each Spark run the master lists one more application, FINISHED, and each of the two workers launched an executor
for it (its stderr under SPARK_WORKER_DIR). The cluster is stopped whatever happens.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from urbandp_process import owner_report, run_urbandp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the helpers beside this file (pytest runs with --import-mode=importlib)

from cluster_driver import COUNT_OPTIONS, FLEET_OPTIONS, release_tables  # noqa: E402
from standalone import StandaloneCluster  # noqa: E402

pytestmark = [pytest.mark.system, pytest.mark.filterwarnings("ignore::FutureWarning")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """Two workers of 1 core and 1 GB each; skipped (failed under CI) without PySpark or Java."""
    pytest.importorskip(
        "pyspark", reason="PySpark not installed (pip install 'urbandp[spark]'): Spark tests skip"
    )
    from urbandp._contributions.spark_session import spark_missing_reason

    reason = spark_missing_reason()
    if reason is not None:
        pytest.skip(f"Spark cannot run here: {reason}")
    running = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2, cores=1, memory="1g")
    try:
        running.start(timeout=90)
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A synthetic 6-bus 2-day fleet (with injected bad rows) and a day of taps with its public domain."""
    root = tmp_path_factory.mktemp("inputs")
    fleet, taps = root / "fleet.parquet", root / "taps"
    made = run_urbandp("synth", "fleet", "--vehicles", "6", "--days", "2", "--out", str(fleet))
    assert made.returncode == 0, made.stderr
    made = run_urbandp("counts", "synth", "--days", "1", "--trips-per-day", "400", "--ferry-trips-per-day", "50",
                       "--out", str(taps))  # fmt: skip
    assert made.returncode == 0, made.stderr
    typed = root / "typed.parquet"  # the same fleet with typed timestamps (UTC instants), as agencies export
    stamps = pl.col("observationDateTime").str.to_datetime(time_zone="UTC", strict=False)
    pl.read_parquet(fleet).with_columns(stamps).write_parquet(typed)
    return {"fleet": fleet, "typed": typed, "events": taps / "events.csv", "domain": taps / "domain.json"}


def _app_ids(cluster: StandaloneCluster) -> set[str]:
    return {str(app["id"]) for app in cluster.applications()}


def _assert_ran_on_the_cluster(cluster: StandaloneCluster, before: set[str]) -> None:
    """One new application at the master, FINISHED, and an executor on each of the two workers ran its tasks."""
    new = [app for app in cluster.applications() if app["id"] not in before]
    assert [(app["name"], app["state"]) for app in new] == [("urbandp", "FINISHED")], new
    executors = [p for p in cluster.executor_logs() if p.parent.parent.name == new[0]["id"]]
    assert len(executors) == 2, cluster.executor_logs()
    assert cluster.alive_workers() == 2


def _without_input_formats(report: dict[str, Any]) -> dict[str, Any]:
    """An owner report without ``input`` (the Polars reader also notes the timestamp layouts it recognised)."""
    return {k: v for k, v in report.items() if k != "input"}


def _assert_same_as_polars(ours: tuple[dict[str, pl.DataFrame], dict[str, Any]], out: Path) -> None:
    """The tables and owner counts ``cluster_driver.py`` wrote to ``out`` equal ``ours`` (the Polars engine's)."""
    tables, owner = ours
    assert sorted(tables) == sorted(p.stem for p in out.glob("*.parquet"))
    assert {"fleet-hat_speed", "counts-joint", "counts-time", "counts-location"} <= set(tables)
    for name, table in tables.items():
        assert_frame_equal(
            table, pl.read_parquet(out / f"{name}.parquet"), check_exact=False, rel_tol=0, abs_tol=2e-9
        )
    theirs = json.loads((out / "owner.json").read_text())
    assert theirs["counts"] == json.loads(json.dumps(owner["counts"], default=str))
    fleet_p, fleet_s = _without_input_formats(owner["fleet"]), _without_input_formats(theirs["fleet"])
    assert fleet_s == json.loads(json.dumps(fleet_p, default=str))
    assert fleet_p["records_in_window"] > 0 and owner["counts"]["truncated_events"] > 0


def test_api_releases_on_the_cluster_equal_the_polars_engine(
    cluster: StandaloneCluster, inputs: dict[str, Path], tmp_path: Path
) -> None:
    ours = release_tables("polars", None, inputs["fleet"], inputs["events"], inputs["domain"])
    out = tmp_path / "spark"
    args = [sys.executable, str(HERE / "cluster_driver.py"), "spark", cluster.url,
            str(inputs["fleet"]), str(inputs["events"]), str(inputs["domain"]), str(out)]  # fmt: skip
    before = _app_ids(cluster)
    res = subprocess.run(args, env=cluster.env(), capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    _assert_ran_on_the_cluster(cluster, before)
    _assert_same_as_polars(ours, out)
    tables, owner = ours
    assert tables["fleet-hat_speed"].height > 0 and tables["counts-joint"]["count"].sum() > 0
    assert tables["fleet-hat_speed"]["mean_speed"].null_count() == 0  # the means are compared, not nulls
    assert owner["fleet"]["records_quarantined"] > 0 and owner["fleet"]["records_outside_window"] > 0
    assert FLEET_OPTIONS["selection"] == "public-threshold" and COUNT_OPTIONS["unit"] == "card-day"


def test_spark_submit_on_the_cluster_with_a_non_utc_driver_equals_the_polars_engine(
    cluster: StandaloneCluster, inputs: dict[str, Path], tmp_path: Path
) -> None:
    """docs/scale-out.md's recipe: the driver script under ``spark-submit --master spark://...`` (client mode),
    whose session urbandp reuses. The driver JVM runs in America/Chicago and the fleet has typed UTC timestamps:
    the engine still sets the SQL session zone to UTC (before the fix: 2,780 records in the window, Polars 6,892)."""
    ours = release_tables("polars", None, inputs["typed"], inputs["events"], inputs["domain"])
    out = tmp_path / "submitted"
    env = {**cluster.env(), "PYSPARK_PYTHON": sys.executable}
    args = [str(cluster.home / "bin" / "spark-submit"), "--master", cluster.url, "--deploy-mode", "client",
            "--driver-java-options", "-Duser.timezone=America/Chicago", str(HERE / "cluster_driver.py"), "spark",
            "-", str(inputs["typed"]), str(inputs["events"]), str(inputs["domain"]), str(out)]  # fmt: skip
    before = _app_ids(cluster)
    res = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    _assert_ran_on_the_cluster(cluster, before)
    _assert_same_as_polars(ours, out)


def _noise_free(privacy: dict[str, Any]) -> dict[str, Any]:
    """privacy.json without the command line, the owner-only paths (quarantine.csv or .parquet) and the outcomes of
    the noise (which HATs passed the noisy selection and what that implies)."""
    drop = {"command_line", "not_dp_outputs", "hats_passing_selection", "hats_released", "useless_release",
            "hats_covered_by_finer_level", "means_withheld_small_noisy_count", "warnings"}  # fmt: skip
    return {k: v for k, v in privacy.items() if k not in drop}


def _cli_pair(cluster: StandaloneCluster, tmp_path: Path, *args: str) -> list[Path]:
    """``urbandp ARGS --out <dir> --engine E`` for E = polars and spark on the cluster, as real processes."""
    outs = []
    for engine, extra in (("polars", []), ("spark", ["--spark-master", cluster.url])):
        out = tmp_path / f"rel-{engine}"
        before = _app_ids(cluster)
        cmd = [sys.executable, "-m", "urbandp", *args, "--out", str(out), "--engine", engine, *extra]
        res = subprocess.run(cmd, env=cluster.env(), capture_output=True, text=True, timeout=300, check=False)
        assert res.returncode == 0, res.stderr[-3000:]
        assert "Traceback" not in res.stderr
        if engine == "spark":
            _assert_ran_on_the_cluster(cluster, before)
        outs.append(out)
    return outs


def test_cli_fleet_release_on_the_cluster_reports_what_polars_reports(
    cluster: StandaloneCluster, inputs: dict[str, Path], tmp_path: Path
) -> None:
    # as tests/system/spark/test_spark_cli.py: 6 buses are too few for the noisy selection to keep a HAT, so the
    # published table may be empty; the exact counts of the Spark stage and the accounting are compared
    polars_out, spark_out = _cli_pair(
        cluster, tmp_path, "release", str(inputs["fleet"]), "--noise-scale", "2", "--no-map"
    )
    assert _without_input_formats(owner_report(spark_out)) == _without_input_formats(owner_report(polars_out))
    ours = json.loads((polars_out / "privacy.json").read_text())
    theirs = json.loads((spark_out / "privacy.json").read_text())
    assert _noise_free(theirs) == _noise_free(ours)
    assert (
        pl.read_csv(spark_out / "hat_speed.csv").columns == pl.read_csv(polars_out / "hat_speed.csv").columns
    )
    assert owner_report(spark_out)["records_quarantined"] > 0
    assert (tmp_path / "owner_only" / spark_out.name / "quarantine.parquet").is_dir()


def test_cli_counts_release_on_the_cluster_reports_what_polars_reports(
    cluster: StandaloneCluster, inputs: dict[str, Path], tmp_path: Path
) -> None:
    polars_out, spark_out = _cli_pair(
        cluster, tmp_path, "counts", "release", str(inputs["events"]), "--domain", str(inputs["domain"]),
        "--unit", "card-day", "--max-events", "2", "--noise-scale", "1",
    )  # fmt: skip
    assert owner_report(spark_out) == owner_report(polars_out)
    ours = json.loads((polars_out / "privacy.json").read_text())
    theirs = json.loads((spark_out / "privacy.json").read_text())
    assert _noise_free(theirs) == _noise_free(ours)
    # the released cells are the public domain's: the same rows, only the noisy counts differ
    key = ["mode", "day", "tap", "bin", "location"]
    ours_t = pl.read_csv(polars_out / "joint.csv", infer_schema=False).select(key)
    theirs_t = pl.read_csv(spark_out / "joint.csv", infer_schema=False).select(key)
    assert ours_t.height > 0
    assert_frame_equal(ours_t.sort(key), theirs_t.sort(key))
