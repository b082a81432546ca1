"""privacy.json's ``spec_sha256`` of the survey releases (issue 32): the same spec gives the same hash wherever the
input and its declared files lie and whichever entry point ran it; another epsilon, another hash.

Real ``urbandp survey ...`` processes on a copy of the same files in two folders; the Python API on the copy.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from urbandp_process import run_urbandp

import urbandp as ud
from urbandp._privacy.noise import ExactNoiseForTesting

pytestmark = pytest.mark.system
BOX = (44.9, -93.4, 45.1, -93.1)


def _session() -> ud.Session:
    return ud.Session(noise=ExactNoiseForTesting(acknowledge_not_private=True))


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Answers, homes, trips and the declared category and block files, in two folders."""
    first = tmp_path_factory.mktemp("first")
    n = 30
    pl.DataFrame(
        {
            "household": [str(i) for i in range(n)],
            "model": [["Camry", "Civic", "Leaf"][i % 3] for i in range(n)],
        }
    ).write_csv(first / "vehicles.csv")
    (first / "models.txt").write_text("Camry\nCivic\nLeaf\n")
    pl.DataFrame(
        {"lat": [44.95 + 0.001 * i for i in range(n)], "lon": [-93.25 - 0.001 * i for i in range(n)]}
    ).write_csv(first / "homes.csv")
    pl.DataFrame(
        {"o": [str(1 + i % 4) for i in range(n)], "d": [str(1 + (i * 3) % 4) for i in range(n)]}
    ).write_csv(first / "trips.csv")
    (first / "blocks.txt").write_text("1\n2\n3\n4\n")
    second = tmp_path_factory.mktemp("elsewhere") / "copy"
    shutil.copytree(first, second)
    return first, second


RUNS = itertools.count()


def _cli(folder: Path, *args: str) -> str:
    out = folder / f"rel-{next(RUNS)}"
    res = run_urbandp("survey", *[a.replace("{dir}", str(folder)) for a in args], "--out", str(out))
    assert res.returncode == 0, res.stderr
    return str(json.loads((out / "privacy.json").read_text())["spec_sha256"])


RANDOMIZE = ("randomize", "{dir}/vehicles.csv", "--column", "model", "--categories-file", "{dir}/models.txt")


def test_randomize_same_spec_in_two_folders_same_hash_through_the_cli_and_the_api(
    folders: tuple[Path, Path],
) -> None:
    first, second = folders
    here = _cli(first, *RANDOMIZE, "--epsilon", "1")
    assert here.startswith("sha256:") and here == _cli(second, *RANDOMIZE, "--epsilon", "1")
    rel = ud.survey.randomize(
        second / "vehicles.csv",
        column="model",
        categories_file=second / "models.txt",
        epsilon=1,
        session=_session(),
    )
    assert rel.privacy.spec_sha256 == here


def test_randomize_another_epsilon_or_category_list_another_hash(folders: tuple[Path, Path]) -> None:
    first, _ = folders
    options = {"column": "model", "categories_file": first / "models.txt", "session": _session()}
    base = ud.survey.randomize(first / "vehicles.csv", epsilon=1.0, **options).privacy.spec_sha256
    assert ud.survey.randomize(first / "vehicles.csv", epsilon=2.0, **options).privacy.spec_sha256 != base
    (first / "more.txt").write_text("Camry\nCivic\nLeaf\nPrius\n")
    more = {**options, "categories_file": first / "more.txt"}
    assert ud.survey.randomize(first / "vehicles.csv", epsilon=1.0, **more).privacy.spec_sha256 != base


def test_perturb_points_bbox_as_text_or_numbers_same_hash(folders: tuple[Path, Path]) -> None:
    first, second = folders
    args = (
        "perturb-points",
        "{dir}/homes.csv",
        "--lat",
        "lat",
        "--lon",
        "lon",
        "--bbox",
        "44.90,-93.4,45.1,-93.10",
    )
    here = _cli(first, *args, "--epsilon-per-metre", "0.01")
    assert here == _cli(second, *args, "--epsilon-per-metre", "0.01")
    options = {"lat": "lat", "lon": "lon", "bbox": BOX, "session": _session()}
    api = ud.survey.perturb_points(
        second / "homes.csv", epsilon_per_metre=0.01, **options
    ).privacy.spec_sha256
    assert api == here
    other = ud.survey.perturb_points(
        second / "homes.csv", epsilon_per_metre=0.02, **options
    ).privacy.spec_sha256
    assert other != here


def test_od_randomize_same_spec_in_two_folders_same_hash(folders: tuple[Path, Path]) -> None:
    first, second = folders
    args = (
        "od-randomize",
        "{dir}/trips.csv",
        "--from",
        "o",
        "--to",
        "d",
        "--blocks-file",
        "{dir}/blocks.txt",
    )
    here = _cli(first, *args, "--epsilon", "1")
    assert here == _cli(second, *args, "--epsilon", "1")
    options = {"origin": "o", "dest": "d", "blocks_file": second / "blocks.txt", "session": _session()}
    assert ud.survey.od_randomize(second / "trips.csv", epsilon=1, **options).privacy.spec_sha256 == here
    assert ud.survey.od_randomize(second / "trips.csv", epsilon=3, **options).privacy.spec_sha256 != here
