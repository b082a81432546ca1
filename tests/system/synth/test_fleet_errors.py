"""`urbandp synth fleet` names its flags where the library (:class:`FleetSpec`) names its parameters:
the command runs as a real process and prints one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from urbandp_process import assert_refused, run_urbandp

pytestmark = pytest.mark.system


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--vehicles", "0", "--days", "1"], "--vehicles must be an integer >= 1, got 0"),
        (
            ["--vehicles", "2", "--days", "1", "--records-per-vehicle-day", "1"],
            "--records-per-vehicle-day must be a finite number >= 2 and <= 20000, got 1.0",
        ),
        # the library named `routes` without listing it, so the command printed no flag; now it names --routes
        (
            ["--vehicles", "2", "--days", "1", "--routes", "0"],
            "--routes must be an integer >= 1 and <= 200, got 0",
        ),
    ],
)
def test_fleet_errors_name_the_flag(tmp_path: Path, args: list[str], line: str) -> None:
    out = tmp_path / "f.csv"
    res = run_urbandp("synth", "fleet", *args, "--out", str(out))
    assert_refused(res, line, others="none")
    assert res.stderr.strip() == f"urbandp: error: {line}"
    assert not out.exists()
