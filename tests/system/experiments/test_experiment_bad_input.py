"""Bad input to `urbandp experiment ...` and `urbandp sensing synth`: one line on stderr, exit 2 (issue 9 item 16)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner
from urbandp_process import assert_refused, run_urbandp

from urbandp.cli import app

pytestmark = pytest.mark.system
REPO = Path(__file__).resolve().parents[3]
AUSTIN = REPO.parent / "shared" / "data" / "austin-avl" / "2015-03-07.csv"
RUN = CliRunner()
MEAN = ["experiment", "mean", "--synthetic", "itms-like", "--runs", "5"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*MEAN, "--upper", "inf", "--out", "OUT"], "--upper"),
        ([*MEAN, "--upper", "nan", "--out", "OUT"], "--upper"),
        ([*MEAN, "--epsilons", "1e-300", "--out", "OUT"], "--epsilons"),
        ([*MEAN, "--epsilons", "inf", "--out", "OUT"], "--epsilons"),
        ([*MEAN, "--seed", "-1", "--out", "OUT"], "--seed"),
        ([*MEAN, "--runs", "100000000", "--out", "OUT"], "--runs"),
        ([*MEAN, "--out", "FILE"], "existing file"),
        ([*MEAN, "--out", "FILE/sub"], "is a file"),
        (
            ["experiment", "busiest-hat", "AVL", "--resolution", "16", "--out", "OUT/h.csv"],
            "--resolution must be one of the H3 resolutions 0..15, got 16",  # the library's one check
        ),
        (["experiment", "busiest-hat", "AVL", "--resolution", "-1", "--out", "OUT/h.csv"], "--resolution"),
        (["experiment", "busiest-hat", "AVL", "--out", "FILE/h.csv"], "is a file"),
        (["experiment", "busiest-hat", "AVL", "--out", "DIR"], "is a directory"),
        (["experiment", "mean", "--input", "FIFO", "--out", "OUT"], "not a regular file"),
        (["experiment", "busiest-hat", "FIFO", "--out", "OUT/h.csv"], "not a regular file"),
        (["experiment", "mean", "--input", "DIR", "--out", "OUT"], "not a regular file"),
        (["sensing", "synth", "FILE/r.csv"], "is a file"),
        (["sensing", "synth", "DIR"], "is a directory"),
        (["sensing", "synth", "OUT/r.csv", "--seed", "-1"], "--seed"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "FILE").write_text("x")
    avl = tmp_path / "avl.csv"
    avl.write_text(
        "vehicle_id,timestamp,speed,latitude,longitude\n1,2015-03-07T10:00:00-06:00,30,30.27,-97.74\n"
    )
    os.mkfifo(tmp_path / "fifo")
    subst = {
        "FIFO": str(tmp_path / "fifo"),
        "OUT": str(tmp_path / "o"),
        "FILE": str(tmp_path / "FILE"),
        "DIR": str(tmp_path / "d"),
        "AVL": str(avl),
    }
    (tmp_path / "d").mkdir()
    args = [
        subst.get(a, a.replace("FILE/", f"{tmp_path}/FILE/").replace("OUT/", f"{tmp_path}/o/")) for a in args
    ]
    res = RUN.invoke(app, args)
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("urbandp: error: ") and message in lines[0], res.stderr
    assert not (tmp_path / "o").exists()


def test_mean_output_replaced_whole_and_no_partial_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "o"
    assert RUN.invoke(app, [*MEAN, "--out", str(out)]).exit_code == 0
    again = RUN.invoke(app, [*MEAN, "--out", str(out)])
    assert again.exit_code == 2 and "add --overwrite" in again.stderr  # an earlier output is kept by default
    (out / "stale.txt").write_text("a file the user put there")
    refused = RUN.invoke(app, [*MEAN, "--out", str(out), "--overwrite"])
    assert (
        refused.exit_code == 2 and "stale.txt" in refused.stderr
    )  # never replaced: urbandp did not write it
    assert (out / "stale.txt").read_text() == "a file the user put there"
    (out / "stale.txt").unlink()
    assert RUN.invoke(app, [*MEAN, "--out", str(out), "--overwrite"]).exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == [".urbandp-output.json", "mae.csv", "mae.png"]
    before = (out / "mae.csv").read_bytes()

    def boom(*a: object, **k: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("urbandp._experiments.mean_experiment.plot_mae", boom)
    failed = RUN.invoke(app, [*MEAN, "--seed", "7", "--out", str(out), "--overwrite"], catch_exceptions=False)
    assert failed.exit_code == 2  # cli_guard turns the OSError into one line and exit 2
    assert (out / "mae.csv").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


@pytest.mark.skipif(not AUSTIN.is_file(), reason="../shared/data/austin-avl not present")
def test_busiest_hat_failure_leaves_old_csv(tmp_path: Path) -> None:
    out = tmp_path / "hat.csv"
    assert RUN.invoke(app, ["experiment", "busiest-hat", str(AUSTIN), "--out", str(out)]).exit_code == 0
    before = out.read_bytes()
    res = RUN.invoke(
        app, ["experiment", "busiest-hat", str(AUSTIN), "--hours", "3-2", "--out", str(out), "--overwrite"]
    )
    assert res.exit_code == 2
    assert out.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["hat.csv"]


def test_epsilons_error_names_the_flag(tmp_path: Path) -> None:
    """Issue 31: the library names ``epsilons``; the command, run as a real process, prints its flag."""
    res = run_urbandp(*MEAN, "--epsilons", "1,zero", "--out", str(tmp_path / "o"))
    line = "--epsilons must be comma-separated numbers, got '1,zero'"
    assert_refused(res, line, others="none")
    assert res.stderr.strip() == f"urbandp: error: {line}"
