"""The review's bad values, run as real processes: one ``urbandp: error:`` line, exit 2, no traceback (issue 9 item 16).

Each case is one of the classes the review listed (non-finite or out-of-domain numbers, negative seeds, unbounded
work, unreadable inputs, bad choices) on an otherwise valid command, so the only reason to fail is the bad value.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.system

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
KOLKATA = DATA / "kolkata-pm25" / "Mobile_Autumn.csv"
AUSTIN = DATA / "austin-avl" / "2015-03-07.csv"
WINDOW = ["--start", "2021-11-15", "--end", "2021-11-16"]
BOX = ["--bbox", "22.45,88.30,22.65,88.47"]

CASES: dict[str, list[str]] = {
    "noise-scale inf": ["release", "{fleet}", *WINDOW, "--noise-scale", "inf"],
    "speed-max inf": ["release", "{fleet}", *WINDOW, "--epsilon-per-day", "10", "--speed-max", "inf"],
    "selection-epsilon inf": [
        "release",
        "{fleet}",
        *WINDOW,
        "--noise-scale",
        "1",
        "--selection-epsilon",
        "inf",
    ],
    "bbox inf": [
        "release",
        "{fleet}",
        *WINDOW,
        "--epsilon-per-day",
        "10",
        "--domain-bbox",
        "21.0,72.7,21.3,inf",
    ],
    "epsilon-per-day inf": ["release", "{fleet}", *WINDOW, "--epsilon-per-day", "inf"],
    "delta -1": ["release", "{fleet}", *WINDOW, "--epsilon-per-day", "10", "--delta", "-1"],
    "min-vehicles nan": [
        "release",
        "{fleet}",
        *WINDOW,
        "--epsilon-per-day",
        "10",
        "--min-vehicles-per-day",
        "nan",
    ],
    "speed-reject-above 0": [
        "release",
        "{fleet}",
        *WINDOW,
        "--epsilon-per-day",
        "10",
        "--speed-reject-above",
        "0",
    ],
    "coarsen unknown": ["release", "{fleet}", *WINDOW, "--epsilon-per-day", "10", "--coarsen", "parent9"],
    "engine unknown": ["release", "{fleet}", *WINDOW, "--epsilon-per-day", "10", "--engine", "flink"],
    "timestamp format matches nothing": [
        "release",
        "{fleet}",
        *WINDOW,
        "--epsilon-per-day",
        "10",
        "--timestamp-format",
        "%Q",
    ],
    "input is a device": ["release", "/dev/null", *WINDOW, "--epsilon-per-day", "10"],
    "plan epsilon -3": ["plan", "{fleet}", *WINDOW, "--epsilon-per-day", "-3"],
    "explore hours 25-2": ["explore", "{fleet}", "--hours", "25-2"],
    "experiment upper inf": ["experiment", "mean", "--synthetic", "itms-like", "--upper", "inf"],
    "experiment epsilons 1e-300": ["experiment", "mean", "--synthetic", "itms-like", "--epsilons", "1e-300"],
    "experiment seed -1": ["experiment", "mean", "--synthetic", "itms-like", "--seed", "-1"],
    "counts synth seed -1": ["counts", "synth", "--seed", "-1"],
    "counts synth days 100000": ["counts", "synth", "--days", "100000"],
    "counts threshold nan": [
        "counts",
        "release",
        "{taps}/events.csv",
        "--domain",
        "{taps}/domain.json",
        "--unit",
        "card-day",
        "--max-events",
        "4",
        "--epsilon",
        "1",
        "--threshold",
        "nan",
    ],
    "counts marginal-scale 0": [
        "counts",
        "release",
        "{taps}/events.csv",
        "--domain",
        "{taps}/domain.json",
        "--unit",
        "card-day",
        "--max-events",
        "4",
        "--epsilon",
        "1",
        "--marginals",
        "charged",
        "--marginal-scale",
        "0",
    ],
    "survey epsilon-per-metre inf": [
        "survey",
        "perturb-points",
        "{taps}/events.csv",
        "--lat",
        "x",
        "--lon",
        "y",
        "--epsilon-per-metre",
        "inf",
    ],
}
REAL_CASES: dict[str, list[str]] = {
    "busiest-hat resolution 16": ["experiment", "busiest-hat", str(AUSTIN), "--resolution", "16"],
    "dp-map epsilon 1e-300": ["sensing", "dp-map", str(KOLKATA), *BOX, "--epsilon", "1e-300"],
    "dp-map utility-epsilons a": ["sensing", "dp-map", str(KOLKATA), *BOX, "--utility-epsilons", "a"],
    "interpolate cell-metres -5": ["sensing", "interpolate", str(KOLKATA), "--cell-metres", "-5"],
}


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "urbandp", *args], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("bad-values")
    fleet, taps = root / "fleet.parquet", root / "taps"
    assert _run(["synth", "fleet", "--vehicles", "6", "--days", "2", "--out", str(fleet)]).returncode == 0
    assert (
        _run(["counts", "synth", "--days", "1", "--trips-per-day", "50", "--out", str(taps)]).returncode == 0
    )
    return {"fleet": str(fleet), "taps": str(taps), "out": str(root / "out")}


def _assert_one_line_exit_2(args: list[str]) -> None:
    res = _run(args)
    assert res.returncode == 2, (args, res.returncode, res.stderr[-1500:])
    assert "Traceback" not in res.stderr, res.stderr[-1500:]
    assert len([x for x in res.stderr.splitlines() if x.startswith("urbandp: error:")]) == 1, res.stderr


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_value_is_one_line_and_exit_2(case: str, inputs: dict[str, str]) -> None:
    args = [a.format(**inputs) for a in CASES[case]]
    _assert_one_line_exit_2([*args, "--out", f"{inputs['out']}/{len(case)}"])


@pytest.mark.real_data
@pytest.mark.parametrize("case", sorted(REAL_CASES))
def test_bad_value_on_real_data_is_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    if not (KOLKATA.exists() and AUSTIN.exists()):
        pytest.skip("../shared/data is not beside the checkout")
    _assert_one_line_exit_2([*REAL_CASES[case], "--out", str(tmp_path / "out")])
