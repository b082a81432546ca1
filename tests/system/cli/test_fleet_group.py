"""``urbandp fleet COMMAND`` is the fleet's canonical group, and ``urbandp COMMAND`` its alias: same help, same run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from urbandp.cli import _wanted_group, build_app
from urbandp.fleet._commands import HELP

RUN = CliRunner()
COMMANDS = ("release", "plan", "explore", "map")


@pytest.mark.parametrize("command", COMMANDS)
def test_the_group_and_the_alias_print_the_same_help(command: str) -> None:
    app = build_app()
    grouped = RUN.invoke(app, ["fleet", command, "--help"], terminal_width=200)
    alias = RUN.invoke(app, [command, "--help"], terminal_width=200)
    assert grouped.exit_code == alias.exit_code == 0
    assert f"Usage: urbandp fleet {command}" in grouped.output and f"Usage: urbandp {command}" in alias.output
    assert grouped.output.replace(f"urbandp fleet {command}", f"urbandp {command}") == alias.output


def test_the_root_lists_the_group_and_hides_the_aliases() -> None:
    text = RUN.invoke(build_app(), ["--help"], terminal_width=200).output
    commands = text.split("Commands:")[1]
    assert "fleet" in commands and HELP[:30] in commands
    assert not any(line.split()[0] in COMMANDS for line in commands.splitlines() if line.strip())


def test_a_fleet_command_loads_no_other_group() -> None:
    assert _wanted_group(["fleet", "release", "in.csv"]) == _wanted_group(["release", "in.csv"]) == ""
    assert _wanted_group(["fleet", "--help"]) is None and _wanted_group(["counts", "release"]) == "counts"


def test_the_group_releases_what_the_alias_releases(tmp_path: Path) -> None:
    from warm_process import run_warm

    fleet = tmp_path / "f.parquet"
    assert run_warm(["synth", "fleet", "--vehicles", "6", "--days", "1", "--out", str(fleet)]).returncode == 0
    args = ["--start", "2021-11-15", "--end", "2021-11-15", "--no-map", "--epsilon-per-day", "10"]
    common = ["--domain-bbox", "21.09,72.75,21.25,72.91", *args]
    grouped = run_warm(["fleet", "release", str(fleet), "--out", str(tmp_path / "a"), *common])
    alias = run_warm(["release", str(fleet), "--out", str(tmp_path / "b"), *common])
    assert grouped.returncode == alias.returncode == 0, grouped.stderr + alias.stderr
    a = json.loads((tmp_path / "a" / "privacy.json").read_text())
    b = json.loads((tmp_path / "b" / "privacy.json").read_text())
    assert a["cumulative_epsilon_per_day"] == b["cumulative_epsilon_per_day"] > 0
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(
        p.name for p in (tmp_path / "b").iterdir()
    )
    assert a["privacy_unit"] == b["privacy_unit"]
