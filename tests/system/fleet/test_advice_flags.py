"""The useless-release advice at the command line: computed for the configuration used (L2 weights: the release's
own threshold, no per-vehicle cap), named by parameter in privacy.json and by flag on stderr."""

from __future__ import annotations

import json
from pathlib import Path

from urbandp_process import run_urbandp


def test_useless_l2_release_advises_by_flag_on_stderr_and_by_parameter_in_privacy_json(
    tmp_path: Path,
) -> None:
    fleet = tmp_path / "fleet.parquet"
    made = run_urbandp("synth", "fleet", "--vehicles", "4", "--days", "1", "--seed", "2", "--out", str(fleet),
                       "--records-per-vehicle-day", "200")  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    out = tmp_path / "rel"
    res = run_urbandp(
        "release", str(fleet), "--out", str(out), "--start", "2021-11-15", "--end", "2021-11-15",
        "--epsilon-per-day", "0.5", "--domain-bbox", "21.09,72.75,21.25,72.91", "--contribution-bounding", "l2",
        "--queries", "speed", "--no-map",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    privacy = json.loads((out / "privacy.json").read_text())
    advice = [w for w in privacy["warnings"] if "options that change it most" in w]
    assert privacy["useless_release"] and advice, privacy["warnings"]
    assert "epsilon_per_day=1: threshold" in advice[0] and "weighted vehicle-days" in advice[0]
    assert "max_hats_per_vehicle_day" not in advice[0] and "--" not in advice[0]
    assert "--epsilon-per-day 1: threshold" in res.stderr and "epsilon_per_day=" not in res.stderr
