"""Bad values and unusable paths, run as real processes: one ``urbandp: error:`` line, exit 2, no traceback
(issue 9 item 16).

Each case is one of the classes the review listed (non-finite or out-of-domain numbers, negative seeds, unbounded
work, unreadable inputs, bad choices; ``--out`` naming an existing file, a path under a file, or a directory that
cannot be created) on an otherwise valid command, so the only reason to fail is the bad value. The uncreatable
directory is under ``/proc``, which refuses it even for root, so the test also holds in CI containers.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from warm_process import run_warm

pytestmark = pytest.mark.system

W = "--start 2021-11-15 --end 2021-11-16"
COUNTS = (
    "counts release {taps}/events.csv --domain {taps}/domain.json --unit card-day --max-events 4 --epsilon 1"
)
CASES: dict[str, str] = {
    "noise-scale inf": f"release {{fleet}} {W} --noise-scale inf",
    "speed-max inf": f"release {{fleet}} {W} --epsilon-per-day 10 --speed-max inf",
    "selection-epsilon inf": f"release {{fleet}} {W} --noise-scale 1 --selection-epsilon inf",
    "bbox inf": f"release {{fleet}} {W} --epsilon-per-day 10 --domain-bbox 21.0,72.7,21.3,inf",
    "epsilon-per-day inf": f"release {{fleet}} {W} --epsilon-per-day inf",
    "delta -1": f"release {{fleet}} {W} --epsilon-per-day 10 --delta -1",
    "min-vehicles nan": f"release {{fleet}} {W} --epsilon-per-day 10 --min-vehicles-per-day nan",
    "speed-reject-above 0": f"release {{fleet}} {W} --epsilon-per-day 10 --speed-reject-above 0",
    "coarsen unknown": f"release {{fleet}} {W} --epsilon-per-day 10 --coarsen parent9",
    "engine unknown": f"release {{fleet}} {W} --epsilon-per-day 10 --engine flink",
    "timestamp format matches nothing": f"release {{fleet}} {W} --epsilon-per-day 10 --timestamp-format %Q",
    "input is a device": f"release /dev/null {W} --epsilon-per-day 10",
    "plan epsilon -3": f"plan {{fleet}} {W} --epsilon-per-day -3",
    "explore hours 25-2": "explore {fleet} --hours 25-2",
    "experiment upper inf": "experiment mean --synthetic itms-like --upper inf",
    "experiment epsilons 1e-300": "experiment mean --synthetic itms-like --epsilons 1e-300",
    "experiment seed -1": "experiment mean --synthetic itms-like --seed -1",
    "counts synth seed -1": "counts synth --seed -1",
    "counts synth days 100000": "counts synth --days 100000",
    "counts threshold nan": f"{COUNTS} --threshold nan",
    "counts marginal-scale 0": f"{COUNTS} --marginals charged --marginal-scale 0",
    "survey epsilon-per-metre inf": "survey perturb-points {taps}/events.csv --lat x --lon y --epsilon-per-metre inf",
}
KOLKATA = "{data}/kolkata-pm25/Mobile_Autumn.csv --bbox 22.45,88.30,22.65,88.47"
REAL_CASES: dict[str, str] = {
    "busiest-hat resolution 16": "experiment busiest-hat {data}/austin-avl/2015-03-07.csv --resolution 16",
    "dp-map epsilon 1e-300": f"sensing dp-map {KOLKATA} --epsilon 1e-300",
    "dp-map utility-epsilons a": f"sensing dp-map {KOLKATA} --utility-epsilons a",
    "interpolate cell-metres -5": "sensing interpolate {data}/kolkata-pm25/Mobile_Autumn.csv --cell-metres -5",
}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_warm(list(args), timeout=300)


def _assert_one_line_exit_2(*args: str) -> None:
    res = _run(*args)
    assert res.returncode == 2, (args, res.returncode, res.stderr[-1500:])
    assert "Traceback" not in res.stderr, (args, res.stderr[-1500:])
    assert len([x for x in res.stderr.splitlines() if x.startswith("urbandp: error:")]) == 1, (
        args,
        res.stderr,
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("bad-values")
    fleet, taps = root / "fleet.parquet", root / "taps"
    assert _run("synth", "fleet", "--vehicles", "6", "--days", "2", "--out", str(fleet)).returncode == 0
    assert _run("counts", "synth", "--days", "1", "--trips-per-day", "50", "--out", str(taps)).returncode == 0
    return {"fleet": str(fleet), "taps": str(taps), "out": str(root / "out")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_value_is_one_line_and_exit_2(case: str, inputs: dict[str, str]) -> None:
    args = CASES[case].format(**inputs).split()
    _assert_one_line_exit_2(*args, "--out", f"{inputs['out']}/{len(case)}")


@pytest.mark.real_data
@pytest.mark.parametrize("case", sorted(REAL_CASES))
def test_bad_value_on_real_data_is_one_line_and_exit_2(case: str, shared_data: Path, tmp_path: Path) -> None:
    args = REAL_CASES[case].format(data=shared_data).split()
    _assert_one_line_exit_2(*args, "--out", str(tmp_path / "out"))


def _bad_outs(tmp_path: Path) -> dict[str, Path]:
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory\n")
    return {"existing file": a_file, "under a file": a_file / "sub", "uncreatable": Path("/proc/urbandp/out")}


def test_release_and_explore_refuse_unusable_out(inputs: dict[str, str], tmp_path: Path) -> None:
    for out in _bad_outs(tmp_path).values():
        _assert_one_line_exit_2("release", inputs["fleet"], "--out", str(out), "--epsilon-per-day", "10")
        _assert_one_line_exit_2("explore", inputs["fleet"], "--out", str(out))


def test_synth_commands_refuse_unusable_out(tmp_path: Path) -> None:
    outs = _bad_outs(tmp_path)
    under = str(outs["under a file"] / "x.csv")
    _assert_one_line_exit_2("synth", "fleet", "--vehicles", "2", "--days", "1", "--out", under)
    existing = str(outs["existing file"])
    _assert_one_line_exit_2("counts", "synth", "--days", "1", "--trips-per-day", "10", "--out", existing)
    _assert_one_line_exit_2("synth", "survey", "--households", "20", "--out", str(outs["uncreatable"]))
