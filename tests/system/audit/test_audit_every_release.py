"""Every audit command runs on a Data61-style release and on urbandp's own, daily ones included (no exit 70).

The table is shaped like Opal's daily file: one bin a day and 160 bus locations, so a time-marginal group of
the Data61 release has more than 135 visible joint rows (the exact Laplace-sum interval's factorials overflowed a
float from 136 noise terms on: ``OverflowError``, exit 70) and urbandp's daily release has the single bin ``00:00`` (``audit
pairs`` looked 30 minutes later and found "no pairs").
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner
from urbandp_process import run_urbandp

import urbandp as ud
from urbandp.cli import app

runner = CliRunner()
MANLY, CQ3 = "Manly Wharf", "Circular Quay No. 3 Wharf"
DAYS = ["2016-08-08", "2016-08-09", "2016-08-10"]
BUSES = [str(2000 + i) for i in range(160)]


def _daily_counts(root: Path) -> tuple[Path, dict[str, object]]:
    """Opal-like daily counts (``date``, ``loc`` as Opal names them) and their domain (bin_minutes 1440)."""
    rng = np.random.default_rng(7)
    rows = []
    for day in DAYS:
        ferry = int(rng.integers(200, 900))
        rows += [("ferry", day.replace("-", ""), "on", MANLY, ferry)]
        rows += [("ferry", day.replace("-", ""), "off", CQ3, ferry)]  # equal in the raw data
        for tap in ("on", "off"):
            rows += [("bus", day.replace("-", ""), tap, b, int(rng.integers(30, 3000))) for b in BUSES]
    path = root / "daily.csv"
    pl.DataFrame(rows, schema=["mode", "date", "tap", "loc", "count"], orient="row").write_csv(path)
    domain = {
        "days": DAYS,
        "taps": ["on", "off"],
        "bin_minutes": 1440,
        "places": {"ferry": [MANLY, CQ3], "bus": BUSES},
    }
    return path, domain


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("every")
    data, domain = _daily_counts(root)
    common = {"domain": domain, "input_kind": "counts", "column": ["day=date", "location=loc"]}
    ud.counts.release(data, **common, method="data61-2016", noise_scale=1.4, out=root / "rel_d61")  # type: ignore[arg-type]
    ud.counts.release(data, **common, epsilon=1.0, suppress_below=18, out=root / "rel")  # type: ignore[arg-type]
    return {"data61": root / "rel_d61", "urbandp": root / "rel"}


def _run(*args: str) -> dict[str, object]:
    r = runner.invoke(app, ["audit", *args])
    assert r.exit_code == 0, (args, r.exit_code, r.output[-2000:])
    return dict(json.loads(r.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("kind", ["data61", "urbandp"])
def test_every_audit_command_runs_on_the_release(
    releases: dict[str, Path], kind: str, tmp_path: Path
) -> None:
    rel = releases[kind]
    joint, time = rel / "joint.csv", rel / "time.csv"
    biggest = pl.read_csv(joint).drop_nulls("count").group_by("mode", "day", "tap").len()["len"].max()
    assert isinstance(biggest, int) and biggest >= 136  # enough terms to overflow the factorials
    pairs = _run(
        "pairs", "--table", str(joint), "--route", f"ferry:{MANLY}>{CQ3}", "--out", str(tmp_path / "p.csv")
    )
    assert pairs["pairs"] == len(DAYS)  # the daily table pairs each day, the lag ignored
    fit = _run("noise-scale", "--pairs", str(tmp_path / "p.csv"), "--model", "discrete")
    assert fit["n_pairs"] == len(DAYS)
    zs = _run("zero-skipping", "--table", str(joint), "--threshold", "18")
    assert zs["vulnerable"] is (kind == "data61")
    diff = _run("differencing", "--joint", str(joint), "--marginal", str(time))
    assert diff["groups_checked"] == len(DAYS) * 2 * 2  # mode x day x tap
    assert diff["gain_beyond_noise"] is False or kind == "data61"


def test_differencing_a_data61_release_with_many_terms_exits_0(releases: dict[str, Path]) -> None:
    """The command the issue ran, as a real process: it was ``OverflowError``, exit 70."""
    rel = releases["data61"]
    joint, time = str(rel / "joint.csv"), str(rel / "time.csv")
    res = run_urbandp("audit", "differencing", "--joint", joint, "--marginal", time)
    assert res.returncode == 0, res.stderr[-2000:]
    result = json.loads(res.stdout.strip().splitlines()[-1])
    assert result["groups_differenced"] == 12  # every mode x day x tap group, bus groups of 161 noise terms
    assert all(c["low"] < c["estimate"] < c["high"] for c in result["cells"])
