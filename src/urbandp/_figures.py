"""One way to draw a PNG figure: Matplotlib's file-only backend (Agg, no display needed), saved at 110 dpi."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def saved_figure(path: str | Path, *rows_cols: int, **subplots: Any) -> Iterator[tuple[Any, Any]]:
    """``(figure, axes)`` of ``plt.subplots(*rows_cols, **subplots)``, laid out and written to ``path`` when the
    block ends without error; the figure is closed either way. Matplotlib is imported here, on first use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(*rows_cols, **subplots)
    try:
        yield fig, axes
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
