"""``urbandp release --borrow-strength parent`` as a real process on four real Austin days: the pooled columns in every
table the release writes, privacy.json's ``borrow_strength``, and a refusal in one line where pooling cannot apply."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from tests.system.urbandp_process import assert_refused, run_urbandp

pytestmark = pytest.mark.system
AVL = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "austin-avl"
DAYS = ("2016-11-24", "2016-11-25", "2016-11-27", "2016-12-16")
ARGS = [
    "--speed-unit",
    "m/s",
    "--start",
    DAYS[0],
    "--end",
    DAYS[-1],
    "--dates",
    ",".join(DAYS),
    "--hours",
    "6-22",
]
ARGS += ["--epsilon-per-day", "4", "--domain-bbox", "30.15,-97.95,30.55,-97.6", "--no-map"]


@pytest.fixture(scope="module")
def days() -> list[str]:
    paths = [AVL / f"{d}.csv" for d in DAYS]
    if not all(p.exists() for p in paths):
        pytest.skip(f"real Austin data not found in {AVL}")
    return [str(p) for p in paths]


def test_release_publishes_pooled_columns_and_says_what_they_promise(days: list[str], tmp_path: Path) -> None:
    out = tmp_path / "rel"
    res = run_urbandp("release", *days, "--out", str(out), *ARGS, "--borrow-strength", "parent")
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader((out / "hat_speed.csv").open()))
    assert rows and {"pooled_mean_speed", "pooled_ci95_low", "pooled_ci95_high", "pooled_useful"} <= set(
        rows[0]
    )
    shown = sum(1 for r in rows if r["mean_speed"] != "" and r["clamped"] == "false")
    for r in rows:  # pooled exactly where a mean is shown and not clamped; inside its own interval
        assert (r["pooled_mean_speed"] != "") == (
            r["mean_speed"] != "" and r["clamped"] == "false" and shown > 1
        )
        if r["pooled_mean_speed"]:
            assert (
                float(r["pooled_ci95_low"]) <= float(r["pooled_mean_speed"]) <= float(r["pooled_ci95_high"])
            )
    privacy = json.loads((out / "privacy.json").read_text())
    report = privacy["borrow_strength"]
    assert (
        report["hats_pooled"] == sum(1 for r in rows if r["pooled_mean_speed"]) > 50
    )  # about 86 (K = 96 truncation)
    assert report["useful_hats_pooled"] == sum(1 for r in rows if r["pooled_useful"] == "true")
    assert "on average over the pooled HATs" in report["guarantee"]


def test_borrow_strength_is_refused_in_one_line_under_presence_public(
    days: list[str], tmp_path: Path
) -> None:
    res = run_urbandp(
        "release",
        *days,
        "--out",
        str(tmp_path / "x"),
        *ARGS,
        "--borrow-strength",
        "parent",
        "--neighbouring",
        "presence-public",
    )
    assert_refused(res, "borrow_strength needs add-remove neighbouring")
