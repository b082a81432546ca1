"""`urbandp sensing pm-map`: a DP map of PM2.5 (:mod:`urbandp.sensing.pm_map`), released through the Session.

Order: options and output checked; readings read (bad rows to a staging quarantine) and kept inside the public
``--start/--end`` window and ``--bbox``; the loss planned and reserved before any noise; the noisy cells drawn
once; everything written into a temporary folder renamed into place. The release folder holds only DP outputs:
``pm_cells.csv`` (the noisy sums and counts, and the cell means derived from them) and ``pm_grid.csv`` (the
smoothed map, post-processing); the quarantine and the exact row counts go to ``owner_only/<name>/``.

The privacy unit (:func:`resolve_unit`): one vehicle-window, truncated to ``M`` readings, when the readings carry
a vehicle id (``--vehicle-column``, default a column named ``vehicle``); one reading otherwise, or with
``--unit reading``. The Session books the loss per **vehicle-day** (``k`` windows of a day x epsilon) under the
vehicle unit, per reading otherwise, so the one loss guard (:mod:`urbandp.privacy.guards`, in
``Session.reserve``) sees what a vehicle pays in a day. privacy.json holds public parameters and the figures
computed from them only; anything read off the readings (rows used, readings dropped by the truncation, the
largest number of readings of a vehicle-window) goes to stderr and ``owner_only/<name>/input_report.json``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from urbandp.errors import InputError
from urbandp.sensing.pm_map import DEFAULT_MAX_READINGS, SMOOTHERS, UNITS

DEFAULT_VEHICLE_COLUMN = "vehicle"

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
    unit: str | None = None  # None: vehicle-window when the input has a vehicle column, else reading
    vehicle_column: str | None = None  # None: a column named "vehicle", if the input has one
    max_readings_per_vehicle_window: int = DEFAULT_MAX_READINGS

    def __post_init__(self) -> None:
        if self.unit is not None and self.unit not in UNITS:
            raise InputError(f"--unit must be one of {', '.join(UNITS)}, got {self.unit!r}")
        m = self.max_readings_per_vehicle_window
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise InputError(f"--max-readings-per-vehicle-window must be an integer >= 1, got {m!r}")
        if self.smoother not in SMOOTHERS:
            raise InputError(f"--smoother must be one of {', '.join(SMOOTHERS)}, got {self.smoother!r}")
        if not (self.cell_metres > 0 and np.isfinite(self.cell_metres)):
            raise InputError(f"--cell-metres must be a positive number, got {self.cell_metres}")
        if self.window_minutes <= 0:
            raise InputError(f"--window-minutes must be positive, got {self.window_minutes}")


def resolve_unit(o: PmMapOptions, columns: list[str]) -> tuple[str, str | None]:
    """(unit, vehicle column to read) from the options and the file's header (its schema, public): the
    vehicle-window unit is the default whenever a vehicle column exists."""
    lower = {c.strip().lower(): c for c in columns}
    if o.vehicle_column is not None and o.vehicle_column.strip().lower() not in lower:
        raise InputError(
            f"--vehicle-column {o.vehicle_column!r}: no such column in {o.input_path} (found {', '.join(columns)})"
        )
    name = o.vehicle_column or (DEFAULT_VEHICLE_COLUMN if DEFAULT_VEHICLE_COLUMN in lower else None)
    unit = o.unit or ("vehicle-window" if name is not None else "reading")
    if unit == "vehicle-window" and name is None:
        raise InputError(
            f"--unit vehicle-window needs vehicle ids: {o.input_path} has no {DEFAULT_VEHICLE_COLUMN!r} column; "
            "name one with --vehicle-column, or use --unit reading"
        )
    return unit, name


def _per_vehicle_json(plan: Any, vl: Any) -> dict[str, Any]:
    """privacy.json's per-vehicle figures (public: the plan and the public windows only)."""
    if vl.per_vehicle_window is None:
        return {
            "bounded": False,
            "epsilon_per_vehicle_window": None,
            "epsilon_per_vehicle_day": None,
            "epsilon_per_vehicle_release": None,
            "rule": f"a vehicle with m readings in a window pays m x {plan.epsilon:g} there, and the sum over its "
            "windows over the release; nothing public bounds m under the reading unit",
            "how_to_bound": "give the readings a vehicle id column (--vehicle-column) and use the vehicle-window "
            "unit (the default when such a column exists)",
        }
    return {
        "bounded": True,
        "max_readings_per_vehicle_window": plan.readings_per_unit,
        "epsilon_per_vehicle_window": vl.per_vehicle_window.epsilon,
        "windows_per_day_max": vl.windows_per_day,
        "epsilon_per_vehicle_day": vl.per_vehicle_day.epsilon,
        "windows": vl.windows,
        "epsilon_per_vehicle_release": vl.per_vehicle_release.epsilon,
        "composition": "basic: a vehicle-window costs epsilon; a vehicle in k windows of a day pays k x epsilon "
        "that day, and W x epsilon if it is in all W windows of the release",
    }


def run_pm_map(o: PmMapOptions) -> dict[str, Any]:
    """Run the release; returns privacy.json's content."""
    import polars as pl

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
        vehicle_losses,
        window_means,
    )
    from urbandp.sensing.readings import csv_columns, read_readings

    check_output_path(o.out)
    unit, vehicle_column = resolve_unit(o, csv_columns(o.input_path))
    m = o.max_readings_per_vehicle_window if unit == "vehicle-window" else 1
    plan = plan_pm_map(o.epsilon, o.clip, m, unit)  # public parameters only
    start, end = parse_window(o.start, o.end)
    windows = public_windows(start, end, o.window_minutes)
    vl = vehicle_losses(plan, windows, o.window_minutes)
    # the loss booked per day, what the guard checks: a vehicle's k windows of a day, or one reading
    booked = vl.per_vehicle_day if vl.per_vehicle_day is not None else plan.loss_per_unit()
    session_unit = "vehicle-day" if unit == "vehicle-window" else "reading"
    grid = SquareGrid(*o.bbox, o.cell_metres)
    if len(windows) * grid.n_cells > MAX_CELL_WINDOWS:
        raise InputError(
            f"{len(windows)} windows x {grid.n_cells} cells is too many cells to noise; use larger "
            "--cell-metres or --window-minutes, or a shorter --start/--end"
        )
    with tempfile.TemporaryDirectory(prefix="urbandp-pmmap-") as stage:
        q_stage = Path(stage) / "quarantine.csv"
        readings, load = read_readings(o.input_path, o.value_column, q_stage, o.bbox, vehicle_column)
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
                unit=session_unit,
                out=o.out,
                allow_meaningless_epsilon=o.allow_meaningless_epsilon,
            ) as session,
            atomic_output_dir(o.out) as d,
        ):
            # the guards run here (delta, meaningless loss per vehicle-day or reading), before any noise
            session.reserve(
                booked,
                days_between(days[0], days[-1]),
                "sensing-pm-map",
                {
                    "unit": unit,
                    "epsilon_per_unit": o.epsilon,
                    "max_readings_per_vehicle_window": m if unit == "vehicle-window" else None,
                    "clip": o.clip,
                    "cells": grid.n_cells,
                    "windows": len(windows),
                },
            )
            not_dp = list(session.not_dp_reasons)
            shutil.copyfile(q_stage, d.owner_path("quarantine.csv"))
            agg = cell_aggregates(
                readings,
                grid,
                windows,
                o.window_minutes,
                plan.clip,
                readings.vehicle if unit == "vehicle-window" else None,
                m,
            )
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
            owner = _owner_report(
                plan, load, outside, agg, readings, windows, o.window_minutes, vehicle_column
            )
            write_json(d.owner_path("input_report.json"), owner)
            for line in owner["warnings"]:
                print(f"urbandp: warning (owner only, from the true readings): {line}", file=sys.stderr)
            eps = plan.loss_per_unit().epsilon
            vehicle = unit == "vehicle-window"
            label = "one vehicle-window" if vehicle else "one reading"
            privacy: dict[str, Any] = {
                "differentially_private": not not_dp,
                "dp_label": f"DP (add/remove {label})" if not not_dp else "NOT differentially private",
                "not_dp_reasons": not_dp,
                "privacy_unit": label,
                "neighbouring": (
                    f"add/remove all of one vehicle's readings in one window (column {vehicle_column!r}), of which "
                    f"at most {m} are kept: evenly spaced ranks by time, chosen from the times only"
                    if vehicle
                    else "add/remove one reading (a vehicle's many readings are many units: no vehicle id used)"
                ),
                "epsilon_per_unit": eps,
                "epsilon_per_reading": eps,
                "epsilon_per_reading_note": (
                    "a reading is part of one vehicle-window: it is protected at least as well as its unit"
                    if vehicle
                    else "the unit"
                ),
                "per_vehicle": _per_vehicle_json(plan, vl),
                "budget_booked": {"unit": session_unit, "epsilon_per_day": booked.epsilon},
                "delta": 0.0,
                "composition": f"a {label[4:]} lies in one window and its readings in that window's cells: "
                "the windows compose in parallel, so the whole release costs epsilon per unit; in its window, "
                "count + centred sum at L1 sensitivities M and M x clip/2",
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
                    f"../owner_only/{o.out.name}/input_report.json": "exact row counts of the raw input, readings "
                    "dropped by the truncation, warnings read off the readings",
                },
            }  # fmt: skip
            write_privacy_json(d.release, privacy)
            session.set_output(o.out)
            session.say(
                f"{len(windows)} windows x {g} cells; epsilon {eps:.4g} per {label[4:]}"
                + (f" (at most {m} readings; {booked.epsilon:.4g} per vehicle-day)" if vehicle else "")
                + f" (Laplace on counts and centred sums, clip {plan.clip:g}); smoother {o.smoother} -> {o.out}"
            )
    return privacy


def _owner_report(
    plan: Any,
    load: Any,
    outside: int,
    agg: Any,
    readings: Any,
    windows: np.ndarray,
    window_minutes: int,
    vehicle_column: str | None,
) -> dict[str, Any]:
    """input_report.json (owner only): exact counts read off the readings, and the warnings they raise."""
    from urbandp.sensing.readings import window_starts

    report: dict[str, Any] = {
        "note": "exact counts of the raw input: not differentially private, do not publish",
        **load.__dict__,
        "rows_outside_window": outside,
        "readings_used": int(agg.counts.sum()),
        "readings_dropped": agg.readings_dropped,
        "warnings": [],
    }
    if readings.vehicle is None or len(readings) == 0:
        return report
    starts = window_starts(readings.time, window_minutes).astype("datetime64[m]")
    _, per_unit = np.unique(
        np.stack([readings.vehicle, starts.astype(str)], axis=1), axis=0, return_counts=True
    )
    most = int(per_unit.max())
    report["vehicle_column"] = vehicle_column
    report["vehicle_windows"] = len(per_unit)
    report["readings_per_vehicle_window_max"] = most
    report["readings_per_vehicle_window_median"] = float(np.median(per_unit))
    if plan.unit == "vehicle-window":
        over = int((per_unit > plan.readings_per_unit).sum())
        report["vehicle_windows_truncated"] = over
        if over:
            report["warnings"].append(
                f"{over} of {len(per_unit)} vehicle-windows hold more than {plan.readings_per_unit} readings "
                f"(up to {most}); their surplus readings were dropped ({agg.readings_dropped} readings in all, "
                "with those outside the windows or grid)"
            )
    else:
        report["epsilon_per_vehicle_window_observed_max"] = most * plan.epsilon
        report["warnings"].append(
            f"unit: one reading, yet a vehicle has up to {most} readings in one window: it is protected only at "
            f"{most} x {plan.epsilon:g} = {most * plan.epsilon:g} there; the vehicle-window unit bounds this"
        )
    return report
