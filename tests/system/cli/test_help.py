"""Every ``--help`` renders its defaults and an example (issue 9 item 14).

Rich markup used to swallow bracketed text ("TOML config (, , ).", "H3 resolution ."), so the CLI turns markup off
and this test renders every command's help and checks it: no empty parentheses or dangling full stops, an example
per command, and for every option that is neither a flag nor required either a shown default or a help text that
says what happens when it is left out ("default: ...").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from urbandp.cli import app

EMPTY_PARENS = re.compile(r"\(\s*[,\s]*\)")
DANGLING_STOP = re.compile(r"[A-Za-z0-9\]] \.(\s|$)")


def _commands(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    if hasattr(cmd, "commands"):
        for name, sub in sorted(cmd.commands.items()):
            yield from _commands(sub, [*path, name])
    else:
        yield path, cmd


COMMANDS = list(_commands(typer.main.get_command(app), []))


def test_every_command_is_walked() -> None:
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"release", "plan", "explore", "counts release", "sensing dp-map", "survey randomize"} <= names
    assert len(COMMANDS) >= 25


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_help_renders_defaults_and_an_example(path: list[str]) -> None:
    cmd = dict((tuple(p), c) for p, c in COMMANDS)[tuple(path)]
    res = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert res.exit_code == 0, res.output
    text = res.output
    assert not EMPTY_PARENS.search(text), f"empty parentheses in {' '.join(path)} --help"
    dangling = DANGLING_STOP.search(text)
    assert not dangling, (
        f"a swallowed value before a full stop in {' '.join(path)} --help: {dangling.group(0)!r}"
    )
    assert "Example" in text, f"{' '.join(path)} --help shows no example"
    missing = []
    for p in cmd.params:
        if type(p).__name__ != "TyperOption" or p.name == "help" or p.is_flag or p.required:
            continue
        help_text = (p.help or "").lower()
        shows_default = p.default is not None and p.show_default is not False
        if not (shows_default or "default" in help_text):
            missing.append(p.opts[0])
    assert not missing, f"{' '.join(path)}: options without a stated default: {missing}"


def test_speed_estimator_help_lists_clipped_mean() -> None:
    res = CliRunner().invoke(app, ["release", "--help"], terminal_width=200)
    assert "clipped-mean" in res.output
