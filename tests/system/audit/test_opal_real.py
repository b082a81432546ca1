"""The auditor on the published Opal 2016 counts (../shared/data/opal-2016): what daily data can and cannot show."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from urbandp.cli import app

REPO = Path(__file__).resolve().parents[3]
DATA = REPO.parent / "shared" / "data"
OPAL = DATA / "opal-2016"
DAILY = OPAL / "location_20160808-14.csv"

pytestmark = [
    pytest.mark.system,
    pytest.mark.real_data,
    pytest.mark.skipif(not DAILY.is_file(), reason="../shared/data/opal-2016 not present"),
]
RUN = CliRunner()
MANLY_ROUTES = ["ferry:Manly Wharf>Circular Quay No. 3 Wharf", "ferry:Circular Quay No. 3 Wharf>Manly Wharf"]


def cli(*args: str) -> dict[str, object]:
    res = RUN.invoke(app, list(args))
    assert res.exit_code == 0, res.output
    assert res.stdout.count("\n") == 1
    return json.loads(res.stdout)


def test_junk_xml_lines_are_quarantined_not_fatal(tmp_path: Path) -> None:
    res = cli(
        "audit",
        "zero-skipping",
        "--table",
        str(DAILY),
        "--threshold",
        "18",
        "--method",
        "data61-2016",
        "--scale",
        "1.4",
        "--report",
        str(tmp_path / "audit"),
    )
    assert res["quarantined_rows"] == 2 and res["cells_published"] == 8605
    q = pl.read_csv(tmp_path / "audit" / "quarantine.csv")
    assert q["line"].to_list() == [8607, 8608] and q["raw"][0].startswith("<?xml")


def test_zero_skipping_on_daily_data(tmp_path: Path) -> None:
    """No published daily count is below 18 (the smallest is 34): consistent with skipping zeros. The scale
    cannot be read off daily data (see the pairs test), so p = 1.4 is the report's 15-minute estimate."""
    res = cli(
        "audit",
        "zero-skipping",
        "--table",
        str(DAILY),
        "--threshold",
        "18",
        "--method",
        "data61-2016",
        "--scale",
        "1.4",
        "--report",
        str(tmp_path / "audit"),
    )
    assert res["consistent_with_second_algorithm"] is True and res["vulnerable"] is True
    assert res["delta_lower_bound_theorem1"] == math.exp(-17 / 1.4) / 2.8
    probs = {d["group_size"]: d for d in res["certain_detection_probability"]}
    assert round(probs[12]["paper_convention"], 3) == 0.005
    undeclared = cli(
        "audit", "zero-skipping", "--table", str(DAILY), "--threshold", "18", "--method", "unknown"
    )
    assert undeclared["zeros_may_be_skipped"] is True and undeclared["delta_lower_bound_theorem1"] is None
    assert (tmp_path / "audit" / "zero-skipping.md").is_file() and (
        tmp_path / "audit" / "zero-skipping.png"
    ).is_file()


def test_noise_scale_cannot_be_estimated_from_daily_data(tmp_path: Path) -> None:
    """Daily Manly-on vs Circular-Quay-3-off totals differ by tens to hundreds with a consistent sign per
    direction: the daily raw counts are not equal, so the fitted 'scale' (~80) measures real differences, not
    the ~1.4 noise the report found in 15-minute data. The auditor must say so."""
    pairs = tmp_path / "pairs.csv"
    out = cli(
        "audit",
        "pairs",
        "--table",
        str(DAILY),
        "--route",
        MANLY_ROUTES[0],
        "--route",
        MANLY_ROUTES[1],
        "--out",
        str(pairs),
    )
    assert out["pairs"] == 14 and out["quarantined_rows"] == 2
    res = cli("audit", "noise-scale", "--pairs", str(pairs), "--report", str(tmp_path / "audit"))
    assert res["raw_equality_plausible"] is False and "not an estimate of the noise scale" in res["warning"]
    assert float(res["scale"]) > 20 and res["n_pairs"] == 14
    sym = res["symmetry"][MANLY_ROUTES[1]]
    assert sym["positive"] == 7 and sym["negative"] == 0


def test_differencing_needs_tables_of_the_same_week(tmp_path: Path) -> None:
    """The 15-minute extract is from 25-31 July, the daily table from 8-14 August: no group can be differenced."""
    res = cli(
        "audit",
        "differencing",
        "--joint",
        str(OPAL / "derived_test_data_time-loc_20160725-31_subset.csv"),
        "--marginal",
        str(DAILY),
        "--scale",
        "1.4",
    )
    assert res["groups_without_joint_rows"] == res["groups_checked"] == 8605
    assert res["cells"] == [] and "covers none" in res["finding"]
