"""Unusable output paths give one line and exit 2 in every wing, never a traceback (issue 9 item 16).

The classes from the review: ``--out`` naming an existing file, a path under a file, and a directory that cannot
be created (under ``/proc``, which refuses it even for root, so the test also holds in CI containers).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.system


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "urbandp", *args], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def fleet_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fleet") / "fleet.csv"
    res = _run("synth", "fleet", "--vehicles", "4", "--days", "1", "--out", str(path))
    assert res.returncode == 0, res.stderr
    return path


def _bad_outs(tmp_path: Path) -> dict[str, Path]:
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory\n")
    return {"existing file": a_file, "under a file": a_file / "sub", "uncreatable": Path("/proc/urbandp/out")}


def _assert_one_line_exit_2(res: subprocess.CompletedProcess[str], case: str) -> None:
    assert res.returncode == 2, (case, res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr, (case, res.stderr[-2000:])
    lines = [line for line in res.stderr.splitlines() if line.startswith("urbandp: error:")]
    assert len(lines) == 1, (case, res.stderr)


def test_release_and_explore_refuse_unusable_out(fleet_csv: Path, tmp_path: Path) -> None:
    for case, out in _bad_outs(tmp_path).items():
        res = _run("release", str(fleet_csv), "--out", str(out), "--epsilon-per-day", "10")
        _assert_one_line_exit_2(res, f"release: {case}")
        res = _run("explore", str(fleet_csv), "--out", str(out))
        _assert_one_line_exit_2(res, f"explore: {case}")


def test_synth_commands_refuse_unusable_out(tmp_path: Path) -> None:
    outs = _bad_outs(tmp_path)
    res = _run(
        "synth", "fleet", "--vehicles", "2", "--days", "1", "--out", str(outs["under a file"] / "x.csv")
    )
    _assert_one_line_exit_2(res, "synth fleet under a file")
    res = _run("counts", "synth", "--days", "1", "--trips-per-day", "10", "--out", str(outs["existing file"]))
    _assert_one_line_exit_2(res, "counts synth existing file")
    res = _run("synth", "survey", "--households", "20", "--out", str(outs["uncreatable"]))
    _assert_one_line_exit_2(res, "synth survey uncreatable")
