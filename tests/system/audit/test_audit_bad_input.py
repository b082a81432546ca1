"""Unusable input to `urbandp audit ...`: one line on stderr, exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner
from urbandp_process import assert_refused, run_urbandp

from urbandp.cli import app

pytestmark = pytest.mark.system


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["audit", "noise-scale", "--pairs", "/nonexistent.csv"], "--pairs /nonexistent.csv: not found"),
        (["audit", "noise-scale", "--pairs", "NOCOLS"], "needs columns a,b"),
        (["audit", "noise-scale", "--pairs", "PAIRS", "--model", "gamma"], "--model must be"),
        (["audit", "zero-skipping", "--table", "/nonexistent.csv"], "--table /nonexistent.csv: not found"),
        (["audit", "zero-skipping", "--table", "TABLE", "--group-sizes", "a,b"], "--group-sizes"),
        (["audit", "zero-skipping", "--table", "NOCOUNT"], "no 'count' column"),
        (
            ["audit", "differencing", "--joint", "TABLE", "--marginal", "TABLE"],
            "no --scale given and no noise_scale in privacy.json",
        ),
        (
            ["audit", "differencing", "--joint", "TABLE", "--marginal", "WIDER", "--scale", "1"],
            "not in the joint table",
        ),
        (
            ["audit", "pairs", "--table", "TABLE", "--route", "nonsense", "--out", "OUT"],
            "route must look like",
        ),
    ],
)
def test_bad_input(tmp_path: Path, args: list[str], message: str) -> None:
    files = {
        "NOCOLS": "x,y\n1,2\n",
        "PAIRS": "a,b\n1,2\n3,1\n",
        "TABLE": "mode,day,tap,location,count\nbus,1,on,A,40\n",
        "NOCOUNT": "mode,day\nbus,1\n",
        "WIDER": "mode,day,tap,location,bin,count\nbus,1,on,A,08:00,40\n",
    }
    subst = {"OUT": str(tmp_path / "o.csv")}
    for name, text in files.items():
        (tmp_path / f"{name}.csv").write_text(text)
        subst[name] = str(tmp_path / f"{name}.csv")
    res = CliRunner().invoke(app, [subst.get(a, a) for a in args])
    assert res.exit_code == 2
    assert res.output.count("\n") == 1 and res.output.startswith("urbandp: error:") and message in res.output


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["noise-scale", "--pairs", "PAIRS", "--alpha", "1.5"],
            "--alpha must be a finite number > 0 and < 1, got 1.5",
        ),
        (
            ["zero-skipping", "--table", "TABLE", "--group-sizes", "1,x"],
            "--group-sizes must be integers like 1,5,12, got '1,x'",
        ),
        (
            ["differencing", "--joint", "TABLE", "--marginal", "TABLE", "--marginal-scale", "-1"],
            "--marginal-scale must be a finite number > 0, got -1.0",
        ),
        (
            ["differencing", "--joint", "TABLE", "--marginal", "TABLE"],
            "no --scale given and no noise_scale in privacy.json (estimate it with `urbandp audit noise-scale`)",
        ),
    ],
)
def test_the_cli_names_the_flag_the_library_the_parameter(tmp_path: Path, args: list[str], line: str) -> None:
    """Issue 31: the library's message names the parameter (``marginal_scale``); the command line, run as a real
    process, prints the flag in its place (the line it always printed, but for the rephrased missing scale)."""
    files = {"PAIRS": "a,b\n1,2\n3,1\n", "TABLE": "mode,day,tap,location,count\nbus,1,on,A,40\n"}
    for name, text in files.items():
        (tmp_path / f"{name}.csv").write_text(text)
    res = run_urbandp("audit", *[str(tmp_path / f"{a}.csv") if a in files else a for a in args])
    assert_refused(res, line, others="none")
    assert res.stderr.strip() == f"urbandp: error: {line}"
