"""Every release command passes every guard (issue 30: "a test enumerates every release function and proves each
guard fires on it").

The guards live in the library's release path (``urbandp._privacy.guards``, run by ``Session``): the delta limit,
the meaningless-loss limit, the NOT DP refusal with a budget dataset, and output safety. Each release command is
run here as a real process, once per guard that applies to it, and must be refused in one line (exit 2), with no
output folder and nothing booked in the budget store.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from urbandp_process import assert_refused, run_urbandp

pytestmark = pytest.mark.system

SENSING_BOX = "22.49,88.32,22.60,88.44"


@dataclass(frozen=True)
class ReleaseCommand:
    """A release command: its arguments for an input folder, an epsilon and an output folder."""

    name: str
    args: Callable[[Path, str, Path], list[str]]
    unit: str  # the privacy unit its budget dataset is declared with
    delta: bool = False  # takes --delta
    allow_flag: bool = False  # takes --allow-meaningless-epsilon
    dataset: bool = True  # takes --dataset / --budget-store
    dataset_args: tuple[
        str, ...
    ] = ()  # what a charged run needs besides --dataset (a survey's collection day)
    dp: bool = (
        True  # False: a release with another guarantee (geo-indistinguishability), refused with a dataset
    )


def _fleet(d: Path, eps: str, out: Path) -> list[str]:
    return ["release", str(d / "fleet.parquet"), "--out", str(out), "--start", "2021-11-15", "--end",
            "2021-11-16", "--epsilon-per-day", eps, "--no-map"]  # fmt: skip


def _counts(d: Path, eps: str, out: Path) -> list[str]:
    return ["counts", "release", str(d / "taps" / "events.csv"), "--domain", str(d / "taps" / "domain.json"),
            "--unit", "card-day", "--max-events", "4", "--epsilon", eps, "--out", str(out)]  # fmt: skip


def _randomize(d: Path, eps: str, out: Path) -> list[str]:
    return ["survey", "randomize", str(d / "sv" / "vehicles.csv"), "--column", "model", "--categories-file",
            str(d / "sv" / "models.csv"), "--within", "fuel", "--epsilon", eps, "--out", str(out)]  # fmt: skip


def _points(d: Path, eps: str, out: Path) -> list[str]:
    # epsilon per metre: the loss per respondent is it times --budget-metres (1000 m by default)
    return ["survey", "perturb-points", str(d / "sv" / "homes.csv"), "--lat", "lat", "--lon", "lon",
            "--epsilon-per-metre", f"{float(eps) / 1000:g}", "--out", str(out)]  # fmt: skip


def _od(d: Path, eps: str, out: Path) -> list[str]:
    return ["survey", "od-randomize", str(d / "sv" / "trips.csv"), "--from", "from_county", "--to", "to_county",
            "--blocks", "19", "--epsilon", eps, "--out", str(out)]  # fmt: skip


def _dp_map(d: Path, eps: str, out: Path) -> list[str]:
    # epsilon per cell: a vehicle-day pays the day's windows x cells composed, so "1" is 0.05 per cell here
    return ["sensing", "dp-map", str(d / "sens.csv"), "--bbox", SENSING_BOX, "--cell-metres", "1000",
            "--start", "2024-01-15", "--end", "2024-01-15", "--epsilon", f"{float(eps) * 0.05:g}",
            "--out", str(out)]  # fmt: skip


def _pm_map(d: Path, eps: str, out: Path) -> list[str]:
    return ["sensing", "pm-map", str(d / "sens.csv"), "--bbox", SENSING_BOX, "--start", "2024-01-15", "--end",
            "2024-01-15", "--epsilon", eps, "--out", str(out)]  # fmt: skip


SURVEY_DAY = ("--survey-date", "2024-01-15")
COMMANDS = [
    ReleaseCommand("release", _fleet, "vehicle-day", delta=True, allow_flag=True),
    ReleaseCommand("counts release", _counts, "card-day", delta=True, allow_flag=True),
    ReleaseCommand("survey randomize", _randomize, "respondent", dataset_args=SURVEY_DAY),
    ReleaseCommand("survey perturb-points", _points, "respondent", dataset_args=SURVEY_DAY, dp=False),
    ReleaseCommand("survey od-randomize", _od, "trip", dataset_args=SURVEY_DAY),
    ReleaseCommand("sensing dp-map", _dp_map, "vehicle-day", delta=True, allow_flag=True),
    ReleaseCommand("sensing pm-map", _pm_map, "vehicle-day", allow_flag=True),
]
IDS = [c.name for c in COMMANDS]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("inputs")
    made = [
        run_urbandp("synth", "fleet", "--vehicles", "4", "--days", "2", "--out", str(d / "fleet.parquet")),
        run_urbandp("counts", "synth", "--days", "1", "--trips-per-day", "50", "--out", str(d / "taps")),
        run_urbandp("synth", "survey", "--households", "50", "--out", str(d / "sv")),
        run_urbandp(
            "sensing",
            "synth",
            str(d / "sens.csv"),
            "--readings",
            "300",
            "--vehicles",
            "4",
            "--hours",
            "2",
            "--seed",
            "3",
        ),
    ]
    assert all(m.returncode == 0 for m in made), [m.stderr for m in made]
    return d


def _declare(store: Path, unit: str) -> None:
    res = run_urbandp(
        "budget", "init", "d", "--unit", unit, "--epsilon-total", "1000", "--budget-store", str(store)
    )
    assert res.returncode == 0, res.stderr


def _booked(store: Path) -> int:
    if not store.exists():
        return 0
    with sqlite3.connect(store) as db:
        return int(db.execute("SELECT COUNT(*) FROM releases").fetchone()[0])


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_each_release_runs_with_sane_parameters(cmd: ReleaseCommand, inputs: Path, tmp_path: Path) -> None:
    """The baseline: the same command line with a sane epsilon releases (so each refusal below is the guard's)."""
    out = tmp_path / "rel"
    res = run_urbandp(*cmd.args(inputs, "1", out))
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads((out / "privacy.json").read_text())
    assert doc["differentially_private"] is cmd.dp, doc.get("not_dp_reasons")


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_a_meaningless_loss_is_refused(cmd: ReleaseCommand, inputs: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel"
    res = run_urbandp(*cmd.args(inputs, "1e300", out))
    assert_refused(res, "100")
    assert not out.exists()


@pytest.mark.parametrize("cmd", [c for c in COMMANDS if c.delta], ids=[c.name for c in COMMANDS if c.delta])
def test_a_delta_above_the_limit_is_refused(cmd: ReleaseCommand, inputs: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel"
    res = run_urbandp(*cmd.args(inputs, "1", out), "--delta", "0.99")
    assert_refused(res, "1e-05")
    assert not out.exists()


@pytest.mark.parametrize(
    "cmd", [c for c in COMMANDS if c.allow_flag], ids=[c.name for c in COMMANDS if c.allow_flag]
)
def test_a_not_dp_release_is_refused_with_a_budget_dataset(
    cmd: ReleaseCommand, inputs: Path, tmp_path: Path
) -> None:
    """Labelled NOT DP by --allow-meaningless-epsilon, it cannot be booked as DP spend: refused, nothing booked."""
    out, store = tmp_path / "rel", tmp_path / "budget.sqlite"
    _declare(store, cmd.unit)
    res = run_urbandp(
        *cmd.args(inputs, "1000", out), "--allow-meaningless-epsilon", "--dataset", "d", "--budget-store",
        str(store),
    )  # fmt: skip
    assert_refused(res, "NOT differentially private")
    assert not out.exists() and _booked(store) == 0
    alone = run_urbandp(*cmd.args(inputs, "1000", tmp_path / "alone"), "--allow-meaningless-epsilon")
    assert alone.returncode == 0, alone.stderr[-2000:]  # without a dataset: released, labelled NOT DP
    doc = json.loads((tmp_path / "alone" / "privacy.json").read_text())
    assert doc["differentially_private"] is False and doc["not_dp_reasons"]


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_an_output_named_like_the_owner_folder_is_refused(
    cmd: ReleaseCommand, inputs: Path, tmp_path: Path
) -> None:
    """A release folder named ``owner_only`` would put the owner's material inside the public folder's tree."""
    out = tmp_path / "owner_only"
    res = run_urbandp(*cmd.args(inputs, "1", out))
    assert_refused(res, "owner_only")
    assert not out.exists()


@pytest.mark.parametrize(
    "cmd", [c for c in COMMANDS if c.dataset and c.dp], ids=[c.name for c in COMMANDS if c.dataset and c.dp]
)
def test_a_dp_release_with_a_dataset_is_charged(cmd: ReleaseCommand, inputs: Path, tmp_path: Path) -> None:
    """The other side of the NOT DP refusal: a DP release with --dataset is committed to the store."""
    out, store = tmp_path / "rel", tmp_path / "budget.sqlite"
    _declare(store, cmd.unit)
    res = run_urbandp(
        *cmd.args(inputs, "1", out), "--dataset", "d", "--budget-store", str(store), *cmd.dataset_args
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert _booked(store) == 1
    assert json.loads((out / "privacy.json").read_text())["differentially_private"] is True
