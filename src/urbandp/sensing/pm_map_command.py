"""`urbandp sensing pm-map`: a DP map of PM2.5 (:mod:`urbandp.sensing.pm_map`), released through the Session.

Order: options and output checked; readings read (bad rows to a staging quarantine) and kept inside the public
``--start/--end`` window and ``--bbox``; the loss planned and reserved before any noise; the noisy cells drawn
once; everything written into a temporary folder renamed into place. The release folder holds only DP outputs:
``pm_cells.csv`` (the noisy sums and counts, and the cell means derived from them) and ``pm_grid.csv`` (the
smoothed map, post-processing); the quarantine and the exact row counts go to ``owner_only/<name>/``.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from urbandp.errors import InputError
from urbandp.sensing.pm_map import SMOOTHERS

MAX_CELL_WINDOWS = 5_000_000


@dataclass(frozen=True)
class PmMapOptions:
    input_path: Path
    out: Path
    bbox: tuple[float, float, float, float]
    start: str
    end: str
    epsilon: float = 1.0
    clip: float = 250.0
    cell_metres: float = 1000.0
    window_minutes: int = 60
    smoother: str = "gp"
    value_column: str | None = None
    dataset: str | None = None
    budget_store: str | None = None
    allow_meaningless_epsilon: bool = False
    precision: int = 3

    def __post_init__(self) -> None:
        if self.smoother not in SMOOTHERS:
            raise InputError(f"--smoother must be one of {', '.join(SMOOTHERS)}, got {self.smoother!r}")
        if not (self.cell_metres > 0 and np.isfinite(self.cell_metres)):
            raise InputError(f"--cell-metres must be a positive number, got {self.cell_metres}")
        if self.window_minutes <= 0:
            raise InputError(f"--window-minutes must be positive, got {self.window_minutes}")


def run_pm_map(o: PmMapOptions) -> dict[str, Any]:
    """Run the release; returns privacy.json's content."""
    import polars as pl

    from urbandp.privacy.loss import meaningless_reasons
    from urbandp.privacy.report import write_privacy_json
    from urbandp.privacy.rounding import round_to_precision
    from urbandp.privacy.session import Session, days_between
    from urbandp.reports.outputs import atomic_output_dir, check_output_path, write_json
    from urbandp.sensing.dp_map import public_windows
    from urbandp.sensing.dp_map_command import parse_window
    from urbandp.sensing.grid import SquareGrid
    from urbandp.sensing.interpolate import KM
    from urbandp.sensing.pm_map import (
        cell_aggregates,
        cell_means,
        mean_noise_var,
        measure_pm_map,
        plan_pm_map,
        smooth_window,
        window_means,
    )
    from urbandp.sensing.readings import read_readings

    check_output_path(o.out)
    plan = plan_pm_map(o.epsilon, o.clip)  # public parameters only
    start, end = parse_window(o.start, o.end)
    windows = public_windows(start, end, o.window_minutes)
    grid = SquareGrid(*o.bbox, o.cell_metres)
    if len(windows) * grid.n_cells > MAX_CELL_WINDOWS:
        raise InputError(
            f"{len(windows)} windows x {grid.n_cells} cells is too many cells to noise; use larger "
            "--cell-metres or --window-minutes, or a shorter --start/--end"
        )
    not_dp = meaningless_reasons(plan.loss_per_unit(), None, per="reading", allow=o.allow_meaningless_epsilon)
    with tempfile.TemporaryDirectory(prefix="urbandp-pmmap-") as stage:
        q_stage = Path(stage) / "quarantine.csv"
        readings, load = read_readings(o.input_path, o.value_column, q_stage, o.bbox)
        t = readings.time.astype("datetime64[m]")
        inside = (t >= start) & (t < end)
        if not inside.any():
            raise InputError(f"no usable reading inside --start {o.start} --end {o.end}")
        outside = int((~inside).sum())
        readings = readings.subset(inside)
        days = sorted({str(w)[:10] for w in windows})
        with (
            Session(
                o.dataset,
                o.budget_store,
                unit="reading",
                out=o.out,
                allow_meaningless_epsilon=o.allow_meaningless_epsilon,
            ) as session,
            atomic_output_dir(o.out) as d,
        ):
            session.refuse_not_dp(not_dp)
            session.reserve(
                plan.loss_per_unit(),
                days_between(days[0], days[-1]),
                "sensing-pm-map",
                {
                    "epsilon_per_reading": o.epsilon,
                    "clip": o.clip,
                    "cells": grid.n_cells,
                    "windows": len(windows),
                },
            )
            shutil.copyfile(q_stage, d.owner_path("quarantine.csv"))
            agg = cell_aggregates(readings, grid, windows, o.window_minutes, plan.clip)
            noisy = measure_pm_map(plan, agg, session.noise)  # the only draws
            means, clear = cell_means(plan, noisy)
            city = window_means(plan, noisy)
            cell_id, lat, lon = grid.centroids()
            g = grid.n_cells
            labels = np.repeat(np.datetime_as_string(windows.astype("datetime64[m]")), g)
            cells = pl.DataFrame(
                {
                    "window": labels,
                    "cell_id": np.tile(cell_id, len(windows)),
                    "lat": np.tile(lat, len(windows)),
                    "lon": np.tile(lon, len(windows)),
                    "noisy_count": round_to_precision(np.maximum(noisy.counts.ravel(), 0.0), o.precision),
                    "noisy_sum": round_to_precision(
                        np.maximum(plan.clip / 2.0 * noisy.counts + noisy.centred_sums, 0.0).ravel(),
                        o.precision,
                    ),
                    "mean_pm": round_to_precision(means.ravel(), o.precision),
                    "mean_pm_noise_sd": round_to_precision(
                        np.sqrt(mean_noise_var(plan, means, noisy.counts)).ravel(), o.precision
                    ),
                    "count_clear_of_noise": clear.ravel(),
                },
                nan_to_null=True,
            )
            cells.write_csv(d.release / "pm_cells.csv")
            x_new = grid.centroids_metres() / KM
            smoothed = np.vstack(
                [
                    smooth_window(plan, noisy, i, grid, x_new, o.smoother, city=city)
                    for i in range(len(windows))
                ]
            )
            pl.DataFrame(
                {
                    "window": labels,
                    "cell_id": np.tile(cell_id, len(windows)),
                    "lat": np.tile(lat, len(windows)),
                    "lon": np.tile(lon, len(windows)),
                    "pm": round_to_precision(smoothed.ravel(), o.precision),
                    "window_mean_pm": round_to_precision(np.repeat(city, g), o.precision),
                }
            ).write_csv(d.release / "pm_grid.csv")
            write_json(
                d.owner_path("input_report.json"),
                {
                    "note": "exact counts of the raw input: not differentially private, do not publish",
                    **load.__dict__,
                    "rows_outside_window": outside,
                    "readings_used": int(agg.counts.sum()),
                },
            )
            eps = plan.loss_per_unit().epsilon
            privacy: dict[str, Any] = {
                "differentially_private": not not_dp,
                "dp_label": "DP (add/remove one reading)" if not not_dp else "NOT differentially private",
                "not_dp_reasons": not_dp,
                "privacy_unit": "one reading",
                "neighbouring": "add/remove one reading (a vehicle's many readings are many units: no vehicle id "
                "in these files)",
                "epsilon_per_reading": eps,
                "delta": 0.0,
                "composition": "a reading lies in one cell of one window: the cells and windows compose in "
                "parallel, so the whole release costs epsilon per reading; in its cell, count + centred sum",
                "mechanism": "laplace (OpenDP) on every cell of every window of the public grid, empty ones included",
                "count": {"sensitivity": plan.count_sensitivity, "scale": plan.count.scale,
                          "epsilon": plan.count.loss(plan.count_sensitivity).epsilon},
                "centred_sum": {"sensitivity": plan.sum_sensitivity, "scale": plan.total.scale,
                                "epsilon": plan.total.loss(plan.sum_sensitivity).epsilon},
                "clip": {"low": 0.0, "high": plan.clip, "note": "readings clipped to [0, clip] and centred at clip/2"},
                "grid": {"bbox": list(o.bbox), "cell_metres": o.cell_metres, "cells": g},
                "windows": {"start": o.start, "end": o.end, "minutes": o.window_minutes, "count": len(windows)},
                "post_processing": {
                    "mean_pm": "clip/2 + noisy centred sum / noisy count where the count is at least max(1, 2 sd "
                    "of its noise) (count_clear_of_noise), else null; mean_pm_noise_sd is its first-order noise sd "
                    "(read a cell's mean only where this is small)",
                    "window_mean_pm": "the window's mean over all cells, shrunk toward the whole release's mean by "
                    "its known noise variance (empirical Bayes)",
                    "pm": f"smoothed per window by {o.smoother} on the clear cells' means (each shrunk toward the "
                    "window's mean), or the window's mean where fewer than 3 cells are clear",
                },
                "noisy_sum": "clip/2 x noisy count + noisy centred sum, clamped at 0 (post-processing)",
                "utility": "docs/sensing.md, 'A DP map of PM2.5': RMSE at the Kolkata static stations",
                "not_dp_outputs": {
                    f"../owner_only/{o.out.name}/quarantine.csv": "raw rejected readings with their reason",
                    f"../owner_only/{o.out.name}/input_report.json": "exact row counts of the raw input",
                },
            }  # fmt: skip
            write_privacy_json(d.release, privacy)
            session.set_output(o.out)
            session.say(
                f"{len(windows)} windows x {g} cells; epsilon {eps:.4g} per reading (Laplace on counts and centred "
                f"sums, clip {plan.clip:g}); smoother {o.smoother} -> {o.out}"
            )
    return privacy
