"""The getting-started page and the README's first screen run as written.

Every fenced ``bash`` and ``python`` block of docs/getting-started.md runs in order in an empty folder: ``bash``
blocks as real processes (``.venv`` there is this interpreter's environment, so ``.venv/bin/urbandp`` is the
installed command), ``python`` blocks in this process, in one namespace as a reader's session would be. A block
announced by ``<!-- not run: ... -->`` (the install from the network) is skipped. A ``text`` block is the exact
output of the ``python`` block before it. The README's first screen: ``make demo`` and ``make test`` come first,
then the CLI from the venv and a Python release, which run the same way.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.system
ROOT = Path(__file__).resolve().parents[3]
FENCE = re.compile(r"(?P<before>[^\n]*)\n```(?P<lang>[a-z]*)\n(?P<code>.*?)\n```", re.S)


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    run: bool


def blocks(markdown: str) -> list[Block]:
    """The fenced blocks of a page, in order; a block right after a ``<!-- not run: ... -->`` line is not run."""
    return [
        Block(m["lang"], m["code"], not m["before"].startswith("<!-- not run:"))
        for m in FENCE.finditer("\n" + markdown)
    ]


def _environment(folder: Path) -> dict[str, str]:
    """No budget store or operator from the caller's environment; ``.venv`` in ``folder`` is this venv."""
    venv = Path(sys.prefix)
    assert (venv / "bin" / "urbandp").is_file(), "urbandp is not installed in this interpreter's environment"
    (folder / ".venv").symlink_to(venv, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("URBANDP_")}
    env["COLUMNS"] = "100"
    return env


def run_blocks(page: list[Block], folder: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Run ``page`` in ``folder``; returns the stdout of each bash block. Fails on a block that fails, or on a
    ``text`` block that is not exactly what the python block before it printed."""
    env = _environment(folder)
    for key in [k for k in os.environ if k.startswith("URBANDP_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(folder)
    namespace: dict[str, object] = {"__name__": "__main__"}
    printed: str | None = None
    shell_out = []
    for block in page:
        if not block.run:
            continue
        if block.lang == "bash":
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", block.code],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert done.returncode == 0, f"{block.code}\nfailed ({done.returncode}):\n{done.stderr}"
            shell_out.append(done.stdout)
        elif block.lang == "python":
            captured = io.StringIO()
            with contextlib.redirect_stdout(captured):
                exec(compile(block.code, "<docs block>", "exec"), namespace)
            printed = captured.getvalue()
        elif block.lang == "text":
            assert printed is not None, "a text block with no python block before it"
            assert printed == block.code + "\n"
            printed = None
    return shell_out


def test_the_getting_started_page_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = blocks((ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8"))
    # the install is the one block not run; every other block is bash, python or its printed text
    assert [b.lang for b in page if not b.run] == ["bash"] and "pip install urbandp" in page[0].code
    assert {b.lang for b in page} == {"bash", "python", "text"}
    assert sum(b.lang == "text" for b in page) == 2
    shell = run_blocks(page, tmp_path, monkeypatch)
    from urbandp import __version__

    assert __version__ in shell[0]
    # the folder the page describes, and the same figures from the command line as from Python
    assert {"hat_speed.csv", "hat_speed.parquet", "hat_speed.geojson", "privacy.json", "map.html"} <= set(
        shell[1].split()
    )
    assert (tmp_path / "out" / "owner_only" / "rel" / "quarantine.csv").is_file()
    cli = json.loads((tmp_path / "out" / "rel" / "privacy.json").read_text(encoding="utf-8"))
    python = json.loads((tmp_path / "out" / "rel-python" / "privacy.json").read_text(encoding="utf-8"))
    for key in ("cumulative_epsilon_per_day", "epsilon_per_window", "delta_per_day", "days"):
        assert cli[key] == python[key], key
    assert round(cli["epsilon_per_window"], 4) == 23.4703
    assert (tmp_path / "budget.sqlite").is_file()


def test_the_readme_first_screen_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_screen = blocks(readme[: readme.index("\n## ")])
    commands = [line.split("#")[0].strip() for line in first_screen[0].code.splitlines()]
    assert first_screen[0].lang == "bash" and commands[:2] == ["make demo", "make test"]
    runnable = first_screen[1:]
    assert [b.lang for b in runnable] == ["bash", "python"]
    assert runnable[0].code.startswith(".venv/bin/urbandp ")
    assert "import urbandp as ud" in runnable[1].code
    run_blocks(runnable, tmp_path, monkeypatch)
    assert json.loads((tmp_path / "out" / "first" / "privacy.json").read_text(encoding="utf-8"))[
        "differentially_private"
    ]
