"""``urbandp plan`` states the loss the release with the same options states: privacy.json's ``loss`` and the
plan's come from one object (the release's planned loss), for Laplace, Gaussian and L2 bounding, on 1 and 3 days."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from warm_process import run_warm

BOX = ("--domain-bbox", "21.09,72.75,21.25,72.91")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fleet") / "f.parquet"
    made = run_warm(["synth", "fleet", "--vehicles", "8", "--days", "3", "--out", str(path), "--seed", "2"])
    assert made.returncode == 0, made.stderr
    return path


@pytest.mark.parametrize(
    "options",
    [
        ("--epsilon-per-day", "4"),
        ("--epsilon-per-day", "4", "--mechanism", "gaussian"),
        ("--epsilon-per-day", "4", "--contribution-bounding", "l2"),
    ],
    ids=["laplace", "gaussian", "l2"],
)
@pytest.mark.parametrize("end", ["2021-11-15", "2021-11-17"], ids=["1-day", "3-days"])
def test_plan_and_release_state_the_same_loss(
    fleet: Path, tmp_path: Path, options: tuple[str, ...], end: str
) -> None:
    window = ("--start", "2021-11-15", "--end", end)
    planned = run_warm(
        ["fleet", "plan", str(fleet), "--out", str(tmp_path / "plan"), *window, *BOX, *options]
    )
    assert planned.returncode == 0, planned.stderr
    released = run_warm(
        ["fleet", "release", str(fleet), "--out", str(tmp_path / "rel"), "--no-map", *window, *BOX, *options]
    )
    assert released.returncode == 0, released.stderr
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
    privacy = json.loads((tmp_path / "rel" / "privacy.json").read_text())
    assert plan["loss"] is not None and plan["loss"] == privacy["loss"]
    assert plan["loss"]["days"] == (1 if end == "2021-11-15" else 3)
    assert plan["loss"]["per_window"]["epsilon"] == privacy["epsilon_per_window"]
