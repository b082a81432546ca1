"""Progress of the long sensing stages (GP fits, noise) on stderr, and their timing (owner material)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np


class LineProgress:
    """Progress as plain lines on stderr when it is not a terminal (a log, CI): one line per task at most every
    ``every`` seconds, and one when it completes, so a long run is never silent."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.tasks: dict[int, dict[str, Any]] = {}

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, total: int | None = None) -> int:
        self.tasks[len(self.tasks)] = {"name": description, "start": time.monotonic(), "last": 0.0}
        return len(self.tasks) - 1

    def update(self, task: int, completed: int, total: int) -> None:
        t = self.tasks[task]
        now = time.monotonic() - t["start"]
        if completed >= total or now - t["last"] >= self.every:
            t["last"] = now
            print(f"urbandp: dp-map: {t['name']}: {completed}/{total} windows ({now:.1f} s)", file=sys.stderr)


def progress() -> Any:
    """urbandp's progress display (:func:`urbandp._progress.progress_display`), or :class:`LineProgress` lines when
    stderr is not a terminal."""
    from urbandp._progress import progress_display

    if not sys.stderr.isatty():
        return LineProgress()
    return progress_display()


class WindowClock:
    """Seconds per window of a stage, from its progress callbacks (owner material: a window's fit time grows with
    its true number of readings)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def ticking(self, bar: Any, description: str) -> Callable[[int, int], None]:
        """A stage's progress callback ``(done, total)``: times each window from now on and advances a new task
        ``description`` of ``bar``."""
        task = bar.add_task(description, total=None)
        last = time.monotonic()

        def tick(done: int, total: int) -> None:
            nonlocal last
            now = time.monotonic()
            self.seconds.append(now - last)
            last = now
            bar.update(task, completed=done, total=total)

        return tick

    def summary(self, name: str, per_window: bool = True) -> str:
        if not self.seconds:
            return f"{name}: no window"
        v = np.array(self.seconds)
        text = f"{name}: {len(v)} windows in {v.sum():.1f} s"
        if per_window:
            text += f" (median {1000 * np.median(v):.0f} ms, slowest {1000 * v.max():.0f} ms per window)"
        return text
