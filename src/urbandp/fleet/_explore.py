"""Exploration of TRUE data for the data owner (ITMS report sections III A-C). Nothing here is private.

The resolution comparison table (report III A: cells, HATs, average unique vehicles per HAT per day, share of cells
meeting the threshold in every slot) and histograms of unique vehicles per HAT per day and of HATs per vehicle-day
(the K of III E). These read exact counts: they are for choosing parameters, never for publication.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from urbandp._contributions import ContributionSpec, get_backend
from urbandp._grid.slots import SlotSpec
from urbandp.errors import InvalidParameterError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

OWNER_ONLY = "FOR THE DATA OWNER ONLY: computed from true data, not differentially private; do not publish."


@dataclass(frozen=True)
class ExploreResult:
    table: pl.DataFrame
    vehicles_per_hat_day: dict[int, pl.Series]
    hats_per_vehicle_day: pl.Series


def in_window(
    clean: pl.DataFrame, slots: SlotSpec, start: dt.date | None = None, end: dt.date | None = None
) -> tuple[pl.DataFrame, int]:
    """The valid records inside the date window and the daily hours of ``slots``, and how many were outside.

    The same rule as a release (:func:`urbandp._contributions.polars_backend.window_filter`), so that explore and
    release count the same records.
    """
    from urbandp._contributions.polars_backend import window_filter

    spec = ContributionSpec(resolution=7, slots=slots, start=start, end=end)
    inside = clean.filter(window_filter(spec))
    return inside, clean.height - inside.height


def check_min_vehicles_per_day(value: float) -> float:
    """Refuse a ``--min-vehicles-per-day`` threshold that is negative or not finite (every HAT would meet it)."""
    if not (math.isfinite(value) and value >= 0):
        raise InvalidParameterError(
            f"min_vehicles_per_day must be a finite number of vehicles per day, 0 or more, got {value:g}",
            parameters="min_vehicles_per_day",
        )
    return value


def explore(
    clean: pl.DataFrame,
    resolutions: tuple[int, ...] = (6, 7, 8),
    slots: SlotSpec | None = None,
    min_vehicles_per_day: float = 10.0,
    main_resolution: int = 7,
) -> ExploreResult:
    """Compute the comparison table and the histogram data over the valid records."""
    check_min_vehicles_per_day(min_vehicles_per_day)
    slots = slots or SlotSpec()
    rows = []
    per_res: dict[int, pl.Series] = {}
    k_series = pl.Series("hats", [], dtype=pl.UInt32)
    for res in resolutions:
        c = get_backend().contributions(clean, ContributionSpec(resolution=res, slots=slots))
        days = max(1, c["day"].n_unique())
        per_hat_day = c.group_by("cell", "slot", "day").len()
        per_hat = c.group_by("cell", "slot").len()
        good = per_hat.filter(pl.col("len") >= min_vehicles_per_day * days).group_by("cell").len()
        n_cells = c["cell"].n_unique()
        full = good.filter(pl.col("len") == len(slots.slots)).height
        rows.append(
            {
                "resolution": res,
                "cells": n_cells,
                "hats": per_hat.height,
                "avg_unique_vehicles_per_hat_per_day": float(per_hat_day["len"].mean() or 0.0),  # type: ignore[arg-type]
                "share_cells_meeting_threshold_every_slot": full / n_cells if n_cells else 0.0,
            }
        )
        per_res[res] = per_hat_day["len"]
        if res == main_resolution:
            k_series = c.group_by("vehicle", "day").len()["len"]
    return ExploreResult(pl.DataFrame(rows), per_res, k_series)


def write_histograms(result: ExploreResult, out_dir: Path) -> list[Path]:
    """PNG histograms: unique vehicles per HAT per day (one panel per resolution) and HATs per vehicle-day."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    res_list = sorted(result.vehicles_per_hat_day)
    fig, axes = plt.subplots(1, len(res_list), figsize=(4.2 * len(res_list), 3.4), squeeze=False)
    for ax, res in zip(axes[0], res_list, strict=True):
        values = result.vehicles_per_hat_day[res].to_numpy()
        ax.hist(values, bins=range(1, int(values.max(initial=1)) + 2), color="#3b6ea5")
        ax.set_title(f"H3 resolution {res}")
        ax.set_xlabel("unique vehicles per HAT per day")
        ax.set_ylabel("HAT-days")
    fig.suptitle(OWNER_ONLY, fontsize=8, color="#a00")
    paths.append(_save(fig, out_dir / "vehicles_per_hat_per_day.png"))
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    k = result.hats_per_vehicle_day.to_numpy()
    ax.hist(k, bins=30, color="#a5673b")
    ax.set_xlabel("HATs visited by one vehicle in a day (K of report III E)")
    ax.set_ylabel("vehicle-days")
    ax.set_title(OWNER_ONLY, fontsize=7, color="#a00")
    paths.append(_save(fig, out_dir / "hats_per_vehicle_day.png"))
    return paths


def _save(fig: Figure, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def comparison_table(table: pl.DataFrame) -> object:
    """The resolution comparison as a Rich table (for the CLI and the demo)."""
    from rich.table import Table

    out = Table(title="H3 resolution comparison (report III A) - " + OWNER_ONLY)
    for col in table.columns:
        out.add_column(col.replace("_", " "))
    for row in table.iter_rows():
        out.add_row(*(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row))
    return out
