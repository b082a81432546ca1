"""Progress of urbandp's long jobs, set up in one place: a transient Rich display on stderr.

Every long job of the command line (drawing a counts release's noise, generating a synthetic fleet, the stages of
a fleet release, the Monte Carlo of an experiment, the GP fits of the sensing maps, the demo) shows its progress
through :func:`progress_bar` (one job) or :func:`progress_display` (several tasks on one display). Both draw on
stderr, so stdout keeps only what a command prints as its result, and both are transient: the bar goes once the
job ends. Nothing is drawn when stderr is not a terminal (a log file, a pipe, CI: not even the blank lines Rich
leaves there); the sensing maps write plain lines there instead (:class:`urbandp.sensing._progress.LineProgress`).
Progress shows counts of work done (days, windows, noise draws), never a value of the data.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress


def progress_display(*, counted: bool = True) -> Progress:
    """A transient Rich progress display on stderr, its tasks added by the caller (``add_task``, ``update``).

    ``counted``: a bar with ``done/total`` (a task added with ``total=None`` pulses until its total is known);
    ``False`` for a spinner beside the task's description, for stages that have no count."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns: list[ProgressColumn] = (
        [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
        if counted
        else [SpinnerColumn(), TextColumn("{task.description}")]
    )
    console = Console(stderr=True)
    return Progress(
        *columns, TimeElapsedColumn(), console=console, transient=True, disable=not console.is_terminal
    )


Advance = Callable[..., None]
"""``advance(n=1, description=None)``: ``n`` more units done; a new description where one is given."""


@contextlib.contextmanager
def progress_bar(description: str, total: int | None = None) -> Iterator[Advance]:
    """One job's progress (:func:`progress_display`): ``total`` units (``None``: a spinner naming the stage), told
    through the :data:`Advance` it yields."""
    with progress_display(counted=total is not None) as display:
        task = display.add_task(description, total=total)

        def advance(n: int = 1, description: str | None = None) -> None:
            display.update(task, advance=n, description=description)

        yield advance
