"""`urbandp experiment mean`: MAE of the user-level mean estimators against epsilon (paper section IV).

Reads one HAT's records (CSV or Parquet, a vehicle column and a value column) or builds a synthetic setting,
runs the vectorised Monte Carlo of :mod:`urbandp._experiments.mean_simulation`, and writes ``mae.csv``
(``algorithm, epsilon, mae, runs``), ``mae.png`` (MAE against epsilon, log scale) and, for real input,
``quarantine.csv`` (rows that could not be used, with a reason per row).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from urbandp.errors import InvalidParameterError
from urbandp.estimators._api import unit_values
from urbandp.estimators._core import Baseline

if TYPE_CHECKING:
    from urbandp._experiments.mean_simulation import MaeRow

MIN_EPSILON = 1e-6  # below this the noise scale U / (n epsilon) is astronomically large (or infinite)


@dataclass(frozen=True)
class LoadedHat:
    values: list[np.ndarray]
    n_rows: int
    n_quarantined: int
    n_clipped: int


def parse_epsilons(text: str) -> list[float]:
    try:
        eps = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise InvalidParameterError(
            f"epsilons must be comma-separated numbers, got {text!r}", parameters="epsilons"
        ) from None
    if not eps or any(not (e > 0 and math.isfinite(e)) for e in eps):
        raise InvalidParameterError(
            f"epsilons must be positive finite numbers, got {text!r}", parameters="epsilons"
        )
    if min(eps) < MIN_EPSILON:
        raise InvalidParameterError(
            f"epsilons must be >= {MIN_EPSILON:g} (got {min(eps):g}): the noise scale U/epsilon would overflow "
            "and every estimate would be noise",
            parameters="epsilons",
        )
    return eps


def load_hat(path: Path, vehicle_col: str, value_col: str, upper: float, quarantine_path: Path) -> LoadedHat:
    """Per-vehicle value arrays of one HAT, read as ``urbandp.estimators.release`` reads them and clipped to
    ``[0, upper]`` as its estimators clip them; bad rows go to ``quarantine_path`` with a reason."""
    names = ("vehicle_col", "value_col")
    values, quarantine, report = unit_values(
        [path], vehicle_col, value_col, parameters=names, source=str(path)
    )
    if quarantine.height:
        quarantine.write_csv(quarantine_path)
    clipped = Baseline(upper=upper).prepare(values)
    return LoadedHat(
        list(clipped.values), report["input_rows"], report["quarantined_rows"], clipped.n_clipped
    )


def write_csv(rows: Sequence[MaeRow], path: Path) -> None:
    """``mae.csv``: ``algorithm, epsilon, mae, runs``, one row per algorithm and epsilon."""
    columns = ("algorithm", "epsilon", "mae", "runs")
    pl.DataFrame({c: [getattr(r, c) for r in rows] for c in columns}).write_csv(path)


def plot_mae(rows: Sequence[MaeRow], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    labels = list(dict.fromkeys(r.algorithm for r in rows))
    markers = "os^vDPX*"
    for i, label in enumerate(labels):
        pts = [(r.epsilon, r.mae) for r in rows if r.algorithm == label]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=markers[i % len(markers)], label=label)
    ax.set_yscale("log")
    ax.set_xlabel("privacy loss epsilon")
    ax.set_ylabel("mean absolute error")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
