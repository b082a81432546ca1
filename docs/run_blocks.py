"""Run a docs page's code blocks as a reader would: ``python docs/run_blocks.py PAGE.md FOLDER [VENV]``.

Every fenced ``bash`` and ``python`` block runs in order in FOLDER (created empty): ``bash`` blocks as real
processes, ``python`` blocks in this interpreter, in one namespace as a reader's session would be. ``FOLDER/.venv``
is made a link to VENV (default: this interpreter's environment), so ``.venv/bin/urbandp`` in a block is the
installed command. A block on the line after ``<!-- not run: ... -->`` (an install from the network) is skipped; a
``text`` block is the exact output of the ``python`` block before it. No ``URBANDP_*`` variable of the caller's
environment reaches the blocks. The docs tests and the wheel smoke check (``make wheel-smoke``) both use it.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"(?P<before>[^\n]*)\n```(?P<lang>[a-z]*)\n(?P<code>.*?)\n```", re.S)
SKIP = "<!-- not run:"


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its code, and whether it runs."""

    lang: str
    code: str
    run: bool


class BlockFailed(AssertionError):
    """A block failed, or printed something else than the ``text`` block after it."""


def blocks(markdown: str) -> list[Block]:
    """The fenced blocks of a page, in order."""
    return [
        Block(m["lang"], m["code"], not m["before"].startswith(SKIP)) for m in FENCE.finditer("\n" + markdown)
    ]


def prepare(folder: Path, venv: Path | None = None) -> dict[str, str]:
    """Make ``folder`` (with ``.venv`` linked to ``venv``) and return the environment for its processes; the
    caller's ``URBANDP_*`` variables (a budget store, an operator) are left out."""
    venv = Path(sys.prefix) if venv is None else venv
    if not (venv / "bin" / "urbandp").is_file():
        raise BlockFailed(f"urbandp is not installed in {venv}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".venv").symlink_to(venv.resolve(), target_is_directory=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("URBANDP_")}
    env["COLUMNS"] = "100"
    return env


def run(page: list[Block], folder: Path, env: dict[str, str]) -> list[str]:
    """Run the blocks of ``page`` in ``folder`` (the current directory must be ``folder``, and ``os.environ``
    free of ``URBANDP_*``); returns the stdout of each bash block that ran."""
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
            if done.returncode != 0:
                raise BlockFailed(f"{block.code}\nfailed ({done.returncode}):\n{done.stderr}")
            shell_out.append(done.stdout)
        elif block.lang == "python":
            captured = io.StringIO()
            with contextlib.redirect_stdout(captured):
                exec(compile(block.code, "<docs block>", "exec"), namespace)
            printed = captured.getvalue()
        elif block.lang == "text":
            if printed is None:
                raise BlockFailed(f"a text block with no python block before it:\n{block.code}")
            if printed != block.code + "\n":
                raise BlockFailed(f"the page says it prints\n{block.code}\nit printed\n{printed}")
            printed = None
    return shell_out


def main(argv: list[str]) -> int:
    """The command: run PAGE's blocks in FOLDER with VENV's urbandp; exit 1 with the failing block."""
    if len(argv) not in (2, 3):
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    page = blocks(Path(argv[0]).read_text(encoding="utf-8"))
    folder = Path(argv[1]).resolve()
    env = prepare(folder, Path(argv[2]) if len(argv) == 3 else None)
    for key in [key for key in os.environ if key.startswith("URBANDP_")]:
        del os.environ[key]
    os.chdir(folder)
    try:
        run(page, folder, env)
    except BlockFailed as failed:
        print(f"{argv[0]}: {failed}", file=sys.stderr)
        return 1
    print(f"{argv[0]}: {sum(b.run for b in page)} blocks ran as written in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
