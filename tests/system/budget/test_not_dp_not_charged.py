"""A release labelled NOT DP is never booked as DP spend (issue 20, defect 2), run as real processes.

Measured before: fleet releases with ``--max-hats-per-vehicle-day observed``, ``--selection public-threshold``
(add/remove) or no ``--start/--end`` were labelled NOT DP in privacy.json, yet the store booked them as committed
epsilon; ``survey perturb-points --budget-metres 0 --dataset s`` committed epsilon 0 for what is epsilon 5 at 1 km.
Now each is refused with one line before anything is read or reserved, and the store stays empty.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from urbandp_process import run_urbandp

pytestmark = pytest.mark.system


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("not-dp")
    fleet, survey = root / "fleet.parquet", root / "survey"
    assert (
        run_urbandp("synth", "fleet", "--vehicles", "6", "--days", "2", "--out", str(fleet)).returncode == 0
    )
    assert run_urbandp("synth", "survey", "--households", "30", "--out", str(survey)).returncode == 0
    return {"fleet": fleet, "survey": survey}


WINDOW = ["--start", "2021-11-15", "--end", "2021-11-16"]


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ([], "date window would be read from the data"),
        ([*WINDOW, "--max-hats-per-vehicle-day", "observed"], "K read from the data"),
        ([*WINDOW, "--selection", "public-threshold"], "not DP under add/remove"),
    ],
)
def test_fleet_release_labelled_not_dp_is_refused_with_dataset(
    made: dict[str, Path], tmp_path: Path, extra: list[str], why: str
) -> None:
    store = str(tmp_path / "b.sqlite")
    init = run_urbandp(
        "budget", "init", "surat", "--unit", "vehicle-day", "--epsilon-per-day", "50", "--budget-store", store
    )
    assert init.returncode == 0, init.stderr
    res = run_urbandp(
        *("release", str(made["fleet"]), "--out", str(tmp_path / "rel"), "--epsilon-per-day", "10", *extra),
        *("--dataset", "surat", "--budget-store", store),
    )
    assert res.returncode == 2, res.stderr
    assert "NOT differentially private" in res.stderr and why in res.stderr, res.stderr
    history = run_urbandp("budget", "history", "surat", "--budget-store", store)
    assert history.returncode == 0 and "fleet-hat" not in history.stdout  # nothing was booked
    assert not (tmp_path / "rel").exists()


def test_perturb_points_at_zero_metres_is_refused(made: dict[str, Path], tmp_path: Path) -> None:
    res = run_urbandp(
        *("survey", "perturb-points", str(made["survey"] / "homes.csv"), "--lat", "lat", "--lon", "lon"),
        *("--epsilon-per-metre", "0.005", "--budget-metres", "0", "--out", str(tmp_path / "p")),
    )
    assert res.returncode == 2 and "--budget-metres must be a finite number > 0" in res.stderr, res.stderr
