"""The pm-map release (:func:`urbandp.sensing.pm_map`, `urbandp sensing pm-map`): a DP map of PM2.5
(:mod:`urbandp.sensing._pm_map_mechanism`), run by :func:`urbandp.sensing._result.release_in_charge` (the loss
planned and reserved before the noisy cells are drawn once; the exact row counts are the owner's).

The unit (:func:`~urbandp.sensing._options.resolve_unit`) and what privacy.json may hold are in docs/sensing.md,
"A DP map of PM2.5": the charge books the loss per **vehicle-day** (or per reading), so the one loss guard
(:mod:`urbandp._privacy.guards`) sees what a vehicle pays in a day.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from urbandp.errors import InputDataError, InvalidParameterError
from urbandp.sensing._options import MAX_CELL_WINDOWS, PmMapOptions, parse_window, resolve_unit
from urbandp.sensing._report import spec_sha256
from urbandp.sensing._result import SensingRelease, owner_files, release_in_charge

if TYPE_CHECKING:
    from urbandp._frames import TableLike
    from urbandp._outputs import OutputDirs
    from urbandp._privacy.loss import Loss
    from urbandp._session import Session
    from urbandp.sensing._grid import SquareGrid
    from urbandp.sensing._pm_map_mechanism import CellAggregates, NoisyCells, PmMapPlan, VehicleLosses
    from urbandp.sensing._readings import LoadReport, Readings


OWNER_FILES = {
    "quarantine.csv": "raw rejected readings with their reason",
    "input_report.json": "exact row counts of the raw input, readings dropped by the truncation, warnings read "
    "off the readings",
}


class PmMapResult(SensingRelease):
    """The result of :func:`urbandp.sensing.pm_map`: ``table`` is pm_cells.csv (noisy count, sum and mean per
    cell and window), ``tables["pm_grid"]`` the smoothed map, ``privacy`` a
    :class:`~urbandp.sensing._report.PmMapPrivacyReport`."""


@dataclass
class _Plan:
    """Everything decided from public parameters and the file's header before a reading is read, and the readings
    read before the charge (inside the public window and box; the load report; how many lay outside the window)."""

    vehicle_column: str | None
    plan: PmMapPlan
    windows: np.ndarray
    losses: VehicleLosses
    grid: SquareGrid
    readings: Readings
    load: LoadReport
    outside: int

    @property
    def vehicle(self) -> bool:
        return self.plan.unit == "vehicle-window"

    @property
    def session_unit(self) -> str:
        return "vehicle-day" if self.vehicle else "reading"

    @property
    def booked(self) -> Loss:
        """The loss booked per day, what the guard checks: a vehicle's k windows of a day, or one reading."""
        per_day = self.losses.per_vehicle_day
        return per_day if per_day is not None else self.plan.loss_per_unit()


def _read(o: PmMapOptions, path: Path, quarantine: Path) -> _Plan:
    """The unit, the plan (OpenDP calibration), the public windows and grid (public parameters and the header
    only); then the readings inside the public window (and box)."""
    from urbandp.sensing._dp_map_mechanism import public_windows
    from urbandp.sensing._grid import SquareGrid
    from urbandp.sensing._pm_map_mechanism import plan_pm_map, vehicle_losses
    from urbandp.sensing._readings import csv_columns, read_readings

    unit, vehicle_column = resolve_unit(o, path, csv_columns(path))
    m = o.max_readings_per_vehicle_window if unit == "vehicle-window" else 1
    plan = plan_pm_map(o.epsilon, o.clip, m, unit)  # public parameters only
    start, end = parse_window(o.start, o.end)
    windows = public_windows(start, end, o.window_minutes)
    grid = SquareGrid(*o.bbox, o.cell_metres)
    if len(windows) * grid.n_cells > MAX_CELL_WINDOWS:
        raise InvalidParameterError(
            f"{len(windows)} windows x {grid.n_cells} cells is too many cells to noise; use larger "
            "cell_metres or window_minutes, or a shorter start/end",
            parameters=("cell_metres", "window_minutes", "start", "end"),
        )
    losses = vehicle_losses(plan, windows, o.window_minutes)
    readings, load = read_readings(path, o.value_column, quarantine, o.bbox, vehicle_column)
    inside, outside = readings.within(start, end)
    if len(inside) == 0:
        raise InputDataError(
            f"no usable reading inside start {o.start} end {o.end}", parameters=("start", "end")
        )
    return _Plan(vehicle_column, plan, windows, losses, grid, inside, load, outside)


def run_pm_map(
    data: TableLike, o: PmMapOptions, session: Session, out: str | Path | None, overwrite: bool
) -> PmMapResult:
    """Run the release on the readings ``data`` in a charge of ``session``; returns the result (written to
    ``out`` inside the charge when given)."""
    from urbandp._privacy.session import days_between

    return release_in_charge(
        session,
        data,
        out,
        overwrite,
        "pmmap",
        lambda path, quarantine: _read(o, path, quarantine),
        lambda p: p.session_unit,
        # the guards run here (delta, meaningless loss per vehicle-day or reading), before any noise
        lambda charge, p: charge.reserve(
            p.booked, days_between(str(p.windows[0]), str(p.windows[-1])), "sensing-pm-map", _params(o, p)
        ),
        lambda p, noise, d, not_dp: _release(o, p, noise, d, not_dp),
    )


def _release(o: PmMapOptions, p: _Plan, noise: Any, d: OutputDirs, not_dp: list[str]) -> PmMapResult:
    """Aggregate the readings per cell, draw the noisy cells once, then the result: the two DP tables, the typed
    report, the owner's report and files (staged in ``d.owner``), its warnings."""
    from urbandp._outputs import write_json
    from urbandp.sensing._pm_map_mechanism import cell_aggregates, measure_pm_map
    from urbandp.sensing._report import PmMapPrivacyReport

    vehicles = p.readings.vehicle if p.vehicle else None
    agg = cell_aggregates(
        p.readings, p.grid, p.windows, o.window_minutes, p.plan.clip, vehicles, p.plan.readings_per_unit
    )
    noisy = measure_pm_map(p.plan, agg, noise)  # the only draws
    owner = _owner_report(o, p, agg)
    write_json(d.owner_path("input_report.json"), owner)
    return PmMapResult(
        tables=_tables(o, p, noisy),
        privacy=PmMapPrivacyReport.from_document(_privacy(o, p, not_dp)),
        owner={"files": owner_files(d.owner), "input_report": owner},
        owner_warnings=list(owner["warnings"]),
        owner_notes=OWNER_FILES,
        grid=p.grid,
    )


def _params(o: PmMapOptions, p: _Plan) -> dict[str, Any]:
    """The parameters recorded with the charge in the budget store."""
    return {
        "unit": p.plan.unit,
        "epsilon_per_unit": o.epsilon,
        "max_readings_per_vehicle_window": p.plan.readings_per_unit if p.vehicle else None,
        "clip": o.clip,
        "cells": p.grid.n_cells,
        "windows": len(p.windows),
    }


def _tables(o: PmMapOptions, p: _Plan, noisy: NoisyCells) -> dict[str, pl.DataFrame]:
    """pm_cells (noisy counts and sums, the means derived from them) and pm_grid (smoothed): post-processing of
    the noisy cells only, rounded (Mironov 2012)."""
    from urbandp._privacy.rounding import round_to_precision
    from urbandp.sensing._interpolation import KM
    from urbandp.sensing._pm_map_mechanism import cell_means, mean_noise_var, smooth_window, window_means

    plan, grid, windows = p.plan, p.grid, p.windows
    means, clear = cell_means(plan, noisy)
    city = window_means(plan, noisy)
    cell_id, lat, lon = grid.centroids()
    g = grid.n_cells
    labels = np.repeat(np.datetime_as_string(windows.astype("datetime64[m]")), g)
    where = {
        "window": labels,
        "cell_id": np.tile(cell_id, len(windows)),
        "lat": np.tile(lat, len(windows)),
        "lon": np.tile(lon, len(windows)),
    }
    sums = np.maximum(plan.clip / 2.0 * noisy.counts + noisy.centred_sums, 0.0).ravel()
    cells = pl.DataFrame(
        {
            **where,
            "noisy_count": round_to_precision(np.maximum(noisy.counts.ravel(), 0.0), o.precision),
            "noisy_sum": round_to_precision(sums, o.precision),
            "mean_pm": round_to_precision(means.ravel(), o.precision),
            "mean_pm_noise_sd": round_to_precision(
                np.sqrt(mean_noise_var(plan, means, noisy.counts)).ravel(), o.precision
            ),
            "count_clear_of_noise": clear.ravel(),
        },
        nan_to_null=True,
    )
    x_new = grid.centroids_metres() / KM
    smoothed = np.vstack(
        [smooth_window(plan, noisy, i, grid, x_new, o.smoother, city=city) for i in range(len(windows))]
    )
    grid_table = pl.DataFrame(
        {
            **where,
            "pm": round_to_precision(smoothed.ravel(), o.precision),
            "window_mean_pm": round_to_precision(np.repeat(city, g), o.precision),
        }
    )
    return {"pm_cells": cells, "pm_grid": grid_table}


def _privacy(o: PmMapOptions, p: _Plan, not_dp: list[str]) -> dict[str, Any]:
    """privacy.json's content: public parameters and the figures computed from them only."""
    plan, vehicle, m = p.plan, p.vehicle, p.plan.readings_per_unit
    label = "one vehicle-window" if vehicle else "one reading"
    return {
        "differentially_private": not not_dp,
        "dp_label": f"DP (add/remove {label})" if not not_dp else "NOT differentially private",
        "not_dp_reasons": not_dp,
        "privacy_unit": label,
        "neighbouring": (
            f"add/remove all of one vehicle's readings in one window (column {p.vehicle_column!r}), of which "
            f"at most {m} are kept: the lowest in a pseudo-random order keyed on each reading's own time and "
            "vehicle (never a value or a place)"
            if vehicle
            else "add/remove one reading (a vehicle's many readings are many units: no vehicle id used)"
        ),
        "epsilon_per_unit": plan.loss_per_unit().epsilon,
        "epsilon_per_reading": plan.loss_per_reading().epsilon,
        "epsilon_per_reading_note": (
            "add/remove one reading of a vehicle-window changes at most two of its kept readings (it leaves, "
            "the next in the keyed order enters): L1 distances 2 (count) and clip (centred sum), so "
            f"2 epsilon / M = 2 x {plan.epsilon:g} / {m}"
            if vehicle
            else "the unit"
        ),
        "per_vehicle": _per_vehicle_json(plan, p.losses),
        "budget_booked": {"unit": p.session_unit, "epsilon_per_day": p.booked.epsilon},
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
        "grid": {"bbox": list(o.bbox), "cell_metres": o.cell_metres, "cells": p.grid.n_cells},
        "windows": {"start": o.start, "end": o.end, "minutes": o.window_minutes, "count": len(p.windows)},
        "post_processing": {
            "mean_pm": "clip/2 + noisy centred sum / noisy count where the count is at least max(1, 2 sd "
            "of its noise) (count_clear_of_noise), else null; mean_pm_noise_sd is its first-order noise sd "
            "(read a cell's mean only where this is small)",
            "window_mean_pm": "the window's mean over all cells, shrunk toward the whole release's mean by "
            "its known noise variance (empirical Bayes)",
            "pm": f"per window: a clear cell's own mean shrunk by its noise toward a {o.smoother} surface fitted "
            "on the cells that carry more signal than noise; the surface where no count is clear; the window's "
            "mean where fewer than 3 cells are clear",
        },
        "noisy_sum": "clip/2 x noisy count + noisy centred sum, clamped at 0 (post-processing)",
        "utility": "docs/sensing.md, 'A DP map of PM2.5': RMSE at the Kolkata static stations",
        "spec_sha256": spec_sha256("pm-map", o),
    }  # fmt: skip


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
            "how_to_bound": "give the readings a vehicle id column (vehicle_column) and use the vehicle-window "
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


def _owner_report(o: PmMapOptions, p: _Plan, agg: CellAggregates) -> dict[str, Any]:
    """input_report.json (owner only): exact counts read off the readings, and the warnings they raise."""
    from urbandp.sensing._readings import window_starts

    plan, readings = p.plan, p.readings
    report: dict[str, Any] = {
        "note": "exact counts of the raw input: not differentially private, do not publish",
        **p.load.__dict__,
        "rows_outside_window": p.outside,
        "readings_used": int(agg.counts.sum()),
        "readings_dropped": agg.readings_dropped,
        "warnings": [],
    }
    if readings.vehicle is None or len(readings) == 0:
        return report
    starts = window_starts(readings.time, o.window_minutes, p.windows[0]).astype("datetime64[m]")
    _, per_unit = np.unique(
        np.stack([readings.vehicle, starts.astype(str)], axis=1), axis=0, return_counts=True
    )
    most = int(per_unit.max())
    report["vehicle_column"] = p.vehicle_column
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
