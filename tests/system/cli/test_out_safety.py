"""``--out`` never costs the user a file (issue 19 items 1-2, docs/outputs.md), run as real processes.

Every command that writes a folder is driven at an existing folder holding the user's files, at a folder that holds
an input, at a folder inside an input folder, at ``.`` and ``""``, and at an earlier urbandp output (replaced only
with ``--overwrite``, and never when a file was added to it). After every refusal the checksums of every file in
the test's folder are what they were before, and no hidden temporary is left beside ``--out``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from urbandp_process import assert_refused, run_urbandp, synth_inputs

pytestmark = pytest.mark.system

W = ["--start", "2021-11-15", "--end", "2021-11-16"]
MARKER = ".urbandp-output.json"


def _tree(root: Path) -> dict[str, str]:
    """Every file and folder below ``root`` (hidden ones included) with the sha256 of each file's bytes."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        found[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return found


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return synth_inputs(tmp_path_factory.mktemp("made"), households=40)


def _commands(made: dict[str, Path], data: Path) -> dict[str, list[str]]:
    """Every command that writes a folder, reading its input from ``data`` (a copy in the user's folder)."""
    return {
        "release": ["release", str(data / "fleet.parquet"), *W, "--epsilon-per-day", "10", "--no-map"],
        "explore": ["explore", str(data / "fleet.parquet")],
        "plan": ["plan", str(data / "fleet.parquet"), *W, "--epsilon-per-day", "10"],
        "counts release": [
            "counts",
            "release",
            str(data / "events.csv"),
            "--domain",
            str(data / "domain.json"),
            "--unit",
            "card-day",
            "--max-events",
            "4",
            "--epsilon",
            "1",
        ],
        "survey randomize": [
            "survey",
            "randomize",
            str(data / "vehicles.csv"),
            "--column",
            "model",
            "--categories-file",
            str(data / "models.csv"),
            "--within",
            "fuel",
            "--epsilon",
            "2",
        ],
        "survey perturb-points": [
            "survey",
            "perturb-points",
            str(data / "homes.csv"),
            "--lat",
            "lat",
            "--lon",
            "lon",
            "--epsilon-per-metre",
            "0.01",
        ],
        "experiment mean": ["experiment", "mean", "--input", str(data / "hat.csv"), "--runs", "5"],
    }


@pytest.fixture()
def user_folder(tmp_path: Path, made: dict[str, Path]) -> Path:
    """A user's folder ``data/`` holding the inputs of every command and an unrelated notes.txt."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "fleet.parquet").write_bytes(made["fleet"].read_bytes())
    for name in ("events.csv", "domain.json"):
        (data / name).write_bytes((made["taps"] / name).read_bytes())
    for name in ("vehicles.csv", "models.csv", "homes.csv"):
        (data / name).write_bytes((made["survey"] / name).read_bytes())
    (data / "hat.csv").write_text("".join(f"v{i % 9},{20 + i % 17}\n" for i in range(200)))
    (data / "hat.csv").write_text("vehicle_id,speed\n" + (data / "hat.csv").read_text())
    (data / "notes.txt").write_text("the user's own notes\n")
    return data


COMMANDS = [
    "release",
    "explore",
    "plan",
    "counts release",
    "survey randomize",
    "survey perturb-points",
    "experiment mean",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_out_on_the_input_folder_is_refused_and_nothing_changes(
    command: str, user_folder: Path, made: dict[str, Path]
) -> None:
    """The measured data loss: ``release data/fleet.csv --out data`` deleted data/fleet.csv and data/notes.txt."""
    args = _commands(made, user_folder)[command]
    before = _tree(user_folder.parent)
    for flags in ([], ["--overwrite"]):
        assert_refused(run_urbandp(*args, "--out", str(user_folder), *flags), "contains the input")
        assert _tree(user_folder.parent) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_out_inside_an_input_folder_and_dot_and_empty_areassert_refused(
    command: str, user_folder: Path, made: dict[str, Path]
) -> None:
    args = _commands(made, user_folder)[command]
    before = _tree(user_folder.parent)
    inside = [a if a != str(user_folder / "fleet.parquet") else str(user_folder) for a in args]
    if inside != args:  # a folder input: an output inside it would be read by the next run
        assert_refused(
            run_urbandp(*inside, "--out", str(user_folder / "rel")), "lies inside the input folder"
        )
    assert_refused(run_urbandp(*args, "--out", ".", cwd=user_folder), "working directory")
    assert_refused(run_urbandp(*args, "--out", "", cwd=user_folder), "working directory")
    assert_refused(run_urbandp(*args, "--out", "..", cwd=user_folder), "working directory")
    assert _tree(user_folder.parent) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_a_foreign_folder_is_never_replaced_and_an_earlier_output_needs_overwrite(
    command: str, user_folder: Path, made: dict[str, Path]
) -> None:
    args = _commands(made, user_folder)[command]
    foreign = user_folder.parent / "reports"
    foreign.mkdir()
    (foreign / "budget-2025.xlsx").write_bytes(b"the agency's spreadsheet")
    before = _tree(user_folder.parent)
    for flags in ([], ["--overwrite"]):
        assert_refused(run_urbandp(*args, "--out", str(foreign), *flags), "did not write")
        assert _tree(user_folder.parent) == before

    out = user_folder.parent / "rel"
    first = run_urbandp(*args, "--out", str(out))
    assert first.returncode == 0, first.stderr[-2000:]
    assert (out / MARKER).is_file()
    written = _tree(user_folder.parent)
    assert_refused(run_urbandp(*args, "--out", str(out)), "add --overwrite")
    assert _tree(user_folder.parent) == written
    again = run_urbandp(*args, "--out", str(out), "--overwrite")
    assert again.returncode == 0, again.stderr[-2000:]
    (out / "my-notes.txt").write_text("added by the user after the release\n")
    changed = _tree(user_folder.parent)
    assert_refused(run_urbandp(*args, "--out", str(out), "--overwrite"), "my-notes.txt")
    assert _tree(user_folder.parent) == changed
    assert not [p for p in user_folder.parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


def test_an_empty_existing_folder_is_used(user_folder: Path, made: dict[str, Path]) -> None:
    out = user_folder.parent / "empty"
    out.mkdir()
    res = run_urbandp(*_commands(made, user_folder)["release"], "--out", str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    assert (out / "privacy.json").is_file() and (out / MARKER).is_file()


def test_owner_only_file_beside_out_leaves_no_hidden_output(user_folder: Path, made: dict[str, Path]) -> None:
    """Item 2: ``owner_only`` as a file beside --out left ``.rel.owner-tmp-*`` and ``.owner_only.old-*``."""
    parent = user_folder.parent
    (parent / "owner_only").write_text("a file, not a folder\n")
    before = _tree(parent)
    assert_refused(
        run_urbandp(*_commands(made, user_folder)["release"], "--out", str(parent / "rel")), "owner_only"
    )
    assert _tree(parent) == before


def test_out_dot_leaves_no_hidden_output(user_folder: Path, made: dict[str, Path]) -> None:
    """Item 2: ``--out .`` left a complete hidden ``..tmp-*`` release after exit 2."""
    before = _tree(user_folder.parent)
    res = run_urbandp(*_commands(made, user_folder)["release"], "--out", ".", cwd=user_folder)
    assert_refused(res, "working directory")
    assert _tree(user_folder.parent) == before
    assert not any(p.name.startswith(".") for p in user_folder.iterdir())


def test_single_file_outputs_are_never_inputs_and_replace_only_with_overwrite(tmp_path: Path) -> None:
    made = tmp_path / "fleet.csv"
    assert run_urbandp("synth", "fleet", "--vehicles", "2", "--days", "1", "--out", str(made)).returncode == 0
    before = _tree(tmp_path)
    assert_refused(
        run_urbandp("synth", "fleet", "--vehicles", "2", "--days", "1", "--out", str(made)), "--overwrite"
    )
    assert_refused(
        run_urbandp("experiment", "busiest-hat", str(made), "--out", str(made), "--overwrite"),
        "also an input",
    )
    assert _tree(tmp_path) == before
    res = run_urbandp("synth", "fleet", "--vehicles", "3", "--days", "1", "--out", str(made), "--overwrite")
    assert res.returncode == 0 and "3 vehicles" in res.stdout


def test_synth_fleet_interrupted_leaves_no_partial_file(tmp_path: Path) -> None:
    """Item 4: ``synth fleet --days 100000`` ran for ever and left a partial file; now capped, and a killed run
    (SIGINT while writing) leaves nothing behind."""
    assert_refused(
        run_urbandp(
            "synth", "fleet", "--vehicles", "2", "--days", "100000", "--out", str(tmp_path / "f.csv")
        ),
        "--days",
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "urbandp",
            *("synth", "fleet", "--vehicles", "300", "--days", "60"),
            "--out",
            str(tmp_path / "big.csv"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    for _ in range(600):  # wait until the temporary file exists, then interrupt
        if any(".tmp-" in p.name for p in tmp_path.iterdir()):
            break
        assert proc.poll() is None
        import time

        time.sleep(0.05)
    proc.send_signal(2)
    proc.wait(timeout=60)
    assert sorted(os.listdir(tmp_path)) == []
