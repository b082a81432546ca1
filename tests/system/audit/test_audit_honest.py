"""The auditor claims no more than it shows (issue 9 item 7), writes strict JSON (item 8), refuses bad input (16)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from urbandp.audit._noise_scale_attack import difference_axis_label
from urbandp.audit._zero_skipping_attack import detection_curves, paper_detection_figure
from urbandp.cli import app

pytestmark = pytest.mark.system
REPO = Path(__file__).resolve().parents[3]
OPAL = REPO.parent / "shared" / "data" / "opal-2016"
DAILY = OPAL / "location_20160808-14.csv"
MANLY = ["ferry:Manly Wharf>Circular Quay No. 3 Wharf", "ferry:Circular Quay No. 3 Wharf>Manly Wharf"]
real = pytest.mark.skipif(not DAILY.is_file(), reason="../shared/data/opal-2016 not present")
RUN = CliRunner()


def _strict(text: str) -> Any:
    def refuse(token: str) -> None:
        raise AssertionError(f"non-strict JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def cli(*args: str) -> dict[str, Any]:
    res = RUN.invoke(app, ["audit", *args])
    assert res.exit_code == 0, res.output
    assert '"inf"' not in res.stdout and "Infinity" not in res.stdout and "NaN" not in res.stdout
    return _strict(res.stdout)


@real
def test_noise_scale_says_no_epsilon_when_pairs_are_not_equal(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.csv"
    cli("pairs", "--table", str(DAILY), "--route", MANLY[0], "--route", MANLY[1], "--out", str(pairs))
    res = cli("noise-scale", "--pairs", str(pairs), "--report", str(tmp_path / "r"))
    assert res["raw_equality_plausible"] is False
    assert res["implied_epsilon_per_event"] is None and "not equal" in res["implied_epsilon_per_event_reason"]
    assert "NOT equal" in difference_axis_label(res)
    md = (tmp_path / "r" / "noise-scale.md").read_text()
    assert '"implied_epsilon_per_event": null' in md


def test_noise_scale_keeps_epsilon_for_plausible_pairs(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    a, b = 50 + rng.laplace(0, 2, 400), 50 + rng.laplace(0, 2, 400)
    pairs = tmp_path / "p.csv"
    pairs.write_text("a,b\n" + "".join(f"{x:.3f},{y:.3f}\n" for x, y in zip(a, b, strict=True)))
    res = cli("noise-scale", "--pairs", str(pairs))
    assert res["raw_equality_plausible"] is True
    assert res["implied_epsilon_per_event"] == pytest.approx(1 / res["scale"])
    assert "assumed equal" in difference_axis_label(res)


def test_noise_scale_counts_nan_and_inf_pairs_as_dropped(tmp_path: Path) -> None:
    pairs = tmp_path / "p.csv"
    pairs.write_text("a,b\n10,12\n11,9\nnan,3\n4,inf\n-inf,1\n13,13.5\nx,1\n")
    res = cli("noise-scale", "--pairs", str(pairs))
    assert res["rows_dropped_non_numeric"] == 4 and res["n_pairs"] == 3


@pytest.mark.parametrize(("t", "p"), [(18.0, 0.3), (18.0, 1.4), (3.0, 0.2), (1.0, 0.45)])
def test_detection_plot_stays_a_probability(t: float, p: float) -> None:
    curves = detection_curves(t, p, int(t) + 3)
    for gs, ys in curves.values():
        assert all(0.0 <= y <= 1.0 for y in ys), (t, p, gs, ys)
    assert any(paper_detection_figure(g, t, p) > 1 for g in range(1, int(t) + 4))  # the raw formula would


@real
def test_undeclared_method_is_cannot_be_ruled_out(tmp_path: Path) -> None:
    res = cli(
        "zero-skipping",
        "--table",
        str(DAILY),
        "--method",
        "unknown",
        "--scale",
        "1.4",
        "--report",
        str(tmp_path / "audit"),
    )
    assert res["vulnerable"] is None and res["verdict"].startswith("cannot be ruled out")
    assert res["finding"].startswith("skipped zeros cannot be ruled out")
    assert (
        res["max_likelihood_ratio_per_unit"] is None
        and "infinite" in res["max_likelihood_ratio_per_unit_reason"]
    )
    declared = cli("zero-skipping", "--table", str(DAILY), "--method", "data61-2016", "--scale", "1.4")
    assert declared["vulnerable"] is True and declared["finding"].startswith("not epsilon-DP")
    md = (tmp_path / "audit" / "zero-skipping.md").read_text()
    assert "Infinity" not in md and '"inf"' not in md


@real
def test_differencing_mismatched_weeks_claims_no_gain() -> None:
    res = cli(
        "differencing",
        "--joint",
        str(OPAL / "derived_test_data_time-loc_20160725-31_subset.csv"),
        "--marginal",
        str(DAILY),
        "--scale",
        "1.4",
    )
    assert res["groups_differenced"] == 0
    assert res["gain_beyond_noise"] is None and "covers none" in res["gain_beyond_noise_reason"]


def test_report_dir_keeps_other_reports_and_replaces_its_own(tmp_path: Path) -> None:
    pairs = tmp_path / "p.csv"
    pairs.write_text("a,b\n10,12\n11,9\n13,13.5\n")
    rep = tmp_path / "r"
    rep.mkdir()
    (rep / "differencing.md").write_text("earlier report")
    cli("noise-scale", "--pairs", str(pairs), "--report", str(rep))
    assert (rep / "differencing.md").read_text() == "earlier report"
    assert (rep / "noise-scale.md").is_file() and (rep / "noise-scale.png").is_file()
    assert not [p for p in tmp_path.iterdir() if ".stage-" in p.name]
    cli("noise-scale", "--pairs", str(pairs), "--report", str(rep))  # its own report is replaced


def test_report_dir_never_replaces_a_file_urbandp_did_not_write(tmp_path: Path) -> None:
    """Issue 19: a report folder is shared, but a user's file that happens to share a report's name is kept."""
    pairs = tmp_path / "p.csv"
    pairs.write_text("a,b\n10,12\n11,9\n13,13.5\n")
    rep = tmp_path / "r"
    rep.mkdir()
    (rep / "noise-scale.md").write_text("the user's own notes")
    res = RUN.invoke(app, ["audit", "noise-scale", "--pairs", str(pairs), "--report", str(rep)])
    assert res.exit_code == 2 and "did not write" in res.stderr, res.output
    assert sorted(p.name for p in rep.iterdir()) == ["noise-scale.md"]
    assert (rep / "noise-scale.md").read_text() == "the user's own notes"
    res = RUN.invoke(app, ["audit", "noise-scale", "--pairs", str(pairs), "--report", str(tmp_path)])
    assert res.exit_code == 2 and "contains the input" in res.stderr, res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["differencing", "--joint", "JOINT", "--marginal", "MARG", "--scale", "inf"], "--scale"),
        (["differencing", "--joint", "JOINT", "--marginal", "MARG", "--scale", "nan"], "--scale"),
        (
            [
                "differencing",
                "--joint",
                "JOINT",
                "--marginal",
                "MARG",
                "--scale",
                "1",
                "--marginal-scale",
                "0",
            ],
            "--marginal-scale",
        ),
        (
            ["differencing", "--joint", "JOINT", "--marginal", "MARG", "--scale", "1", "--alpha", "2"],
            "--alpha",
        ),
        (
            ["differencing", "--joint", "JOINT", "--marginal", "MARG", "--scale", "1", "--report", "FILE"],
            "existing file",
        ),
        (["zero-skipping", "--table", "JOINT", "--privacy", "BINARY"], "not UTF-8"),
        (["zero-skipping", "--table", "BINARY"], "binary"),
        (["zero-skipping", "--table", "JOINT", "--threshold", "nan"], "--threshold"),
        (["zero-skipping", "--table", "JOINT", "--scale", "inf", "--method", "data61-2016"], "--scale"),
        (["zero-skipping", "--table", "JOINT", "--report", "FILE/sub"], "is a file"),
        (["noise-scale", "--pairs", "PAIRS", "--report", "FILE"], "existing file"),
        (["noise-scale", "--pairs", "PAIRS", "--alpha", "0"], "--alpha"),
        (["noise-scale", "--pairs", "BINARY"], "cannot read"),
        (
            ["pairs", "--table", "JOINT", "--route", "bus:A>B", "--out", "FILE/sub.csv"],
            "is a file, not a directory",
        ),
        (["pairs", "--table", "JOINT", "--route", "bus:A>B", "--out", "DIR"], "is a directory"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    files = {
        "JOINT": "mode,day,tap,location,bin,count\nbus,1,on,A,08:00,40\nbus,1,on,B,08:30,\n",
        "MARG": "mode,day,tap,location,count\nbus,1,on,A,41\n",
        "PAIRS": "a,b\n1,2\n3,1\n",
        "FILE": "x",
    }
    (tmp_path / "DIR").mkdir()  # an existing folder (not the one holding the inputs: that is refused earlier)
    subst = {"DIR": str(tmp_path / "DIR")}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        subst[name] = str(tmp_path / name)
    (tmp_path / "BINARY").write_bytes(bytes(range(256)) * 4)
    subst["BINARY"] = str(tmp_path / "BINARY")
    subst["FILE/sub"] = str(tmp_path / "FILE" / "sub")
    subst["FILE/sub.csv"] = str(tmp_path / "FILE" / "sub.csv")
    res = RUN.invoke(app, ["audit", *[subst.get(a, a) for a in args]])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("urbandp: error: ") and message in lines[0], res.stderr
