"""urbandp._progress: the one progress set-up of the long jobs, drawn on stderr on a terminal, silent elsewhere."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest

from urbandp._progress import progress_bar, progress_display

SRC = Path(__file__).resolve().parents[2] / "src" / "urbandp"


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def _run(monkeypatch: pytest.MonkeyPatch, tty: bool) -> tuple[str, str]:
    err, out = _Stream(tty), _Stream(tty)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "stdout", out)
    with progress_bar("generating days", 3) as advance:
        for i in range(3):
            advance(1, f"generating days: {100 * (i + 1):,} records")
    with progress_bar("starting") as name:  # a spinner naming the stage
        name(0, "measuring")
    return err.getvalue(), out.getvalue()


def test_a_bar_is_drawn_on_a_terminal_stderr_and_nothing_goes_to_stdout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    err, out = _run(monkeypatch, tty=True)
    assert out == ""
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", err)
    assert "generating days: 300 records" in text and "3/3" in text and "measuring" in text


def test_nothing_is_drawn_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(monkeypatch, tty=False) == ("", "")


def test_the_display_is_transient_on_stderr() -> None:
    display = progress_display()
    assert display.console.stderr and display.live.transient


def test_every_progress_display_of_the_package_is_set_up_here() -> None:
    """Six commands set up their own Rich display before; now only urbandp/_progress.py builds one."""
    builders = sorted(
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if re.search(r"\bProgress\(|from rich\.progress import", p.read_text(encoding="utf-8"))
    )
    assert builders == ["_progress.py"]
