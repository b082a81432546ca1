"""privacy.json's ``spec_sha256`` of the sensing releases (issue 32): the same spec gives the same hash wherever
the readings lie and whichever entry point ran it; another epsilon, another hash.

Real ``urbandp sensing pm-map`` / ``dp-map`` processes on a copy of the same readings in two folders; the Python
API on the copy.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest
from urbandp_process import run_urbandp

import urbandp as ud
from urbandp._privacy.noise import ExactNoiseForTesting
from urbandp.sensing._synth import synth_readings

pytestmark = pytest.mark.system
BBOX = (22.49, 88.32, 22.60, 88.44)
BOX_TEXT = "22.49,88.32,22.6,88.44"
START, END = "2024-01-15T08:00", "2024-01-15T10:00"
RUNS = itertools.count()


def _session() -> ud.Session:
    return ud.Session(noise=ExactNoiseForTesting(acknowledge_not_private=True))


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same readings.csv in two folders."""
    first = tmp_path_factory.mktemp("first")
    synth_readings(300, vehicles=4, hours=2, seed=3).write_csv(first / "readings.csv")
    second = tmp_path_factory.mktemp("elsewhere") / "copy"
    shutil.copytree(first, second)
    return first, second


def _cli(folder: Path, command: str, *args: str) -> str:
    out = folder / f"rel-{next(RUNS)}"
    res = run_urbandp(
        "sensing",
        command,
        str(folder / "readings.csv"),
        "--out",
        str(out),
        "--bbox",
        BOX_TEXT,
        "--start",
        START,
        "--end",
        END,
        *args,
    )
    assert res.returncode == 0, res.stderr
    return str(json.loads((out / "privacy.json").read_text())["spec_sha256"])


def test_pm_map_same_spec_in_two_folders_same_hash_through_the_cli_and_the_api(
    folders: tuple[Path, Path],
) -> None:
    first, second = folders
    args = ("--smoother", "none", "--epsilon", "2")
    here = _cli(first, "pm-map", *args)
    assert here.startswith("sha256:") and here == _cli(second, "pm-map", *args)
    options = {"bbox": BBOX, "start": START, "end": END, "smoother": "none", "session": _session()}
    assert ud.sensing.pm_map(second / "readings.csv", epsilon=2, **options).privacy.spec_sha256 == here
    assert ud.sensing.pm_map(second / "readings.csv", epsilon=3, **options).privacy.spec_sha256 != here


def test_dp_map_same_spec_in_two_folders_same_hash_through_the_cli_and_the_api(
    folders: tuple[Path, Path],
) -> None:
    first, second = folders
    args = ("--cell-metres", "2000", "--utility-epsilons", "", "--epsilon", "0.3")
    here = _cli(first, "dp-map", *args)
    assert here.startswith("sha256:") and here == _cli(second, "dp-map", *args)
    options = {
        "bbox": BBOX,
        "start": START,
        "end": END,
        "cell_metres": 2000,
        "utility_epsilons": (),
        "session": _session(),
    }
    assert ud.sensing.dp_map(second / "readings.csv", epsilon=0.3, **options).privacy.spec_sha256 == here
    assert ud.sensing.dp_map(second / "readings.csv", epsilon=0.4, **options).privacy.spec_sha256 != here
