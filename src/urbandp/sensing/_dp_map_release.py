"""The dp-map release (:func:`urbandp.sensing.dp_map`, `urbandp sensing dp-map`), run by
:func:`urbandp.sensing._result.release_in_charge` in the order that keeps it honest (docs/sensing.md, "DP variance
maps", "Order of a release"): the cost is planned (:func:`urbandp.sensing._dp_map_mechanism.plan_dp_map`) and
reserved before the fit and the noise. What is read off the true readings is the owner's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from urbandp.errors import Advice, InputDataError
from urbandp.sensing._options import DpMapOptions, parse_window
from urbandp.sensing._report import spec_sha256
from urbandp.sensing._result import SensingRelease, owner_files, release_in_charge

if TYPE_CHECKING:
    from urbandp._frames import TableLike
    from urbandp._outputs import OutputDirs
    from urbandp._privacy.session import ReleaseCharge
    from urbandp._session import Session
    from urbandp.sensing._dp_map_mechanism import DpMapPlan, DpMapRelease
    from urbandp.sensing._grid import SquareGrid
    from urbandp.sensing._interpolation import WindowResult
    from urbandp.sensing._progress import WindowClock
    from urbandp.sensing._readings import Readings

OWNER_FILES = {
    "quarantine.csv": "raw rejected readings with their reason",
    "input_report.json": "row counts of the raw input",
    "leakage.csv": "per window: true counts of readings and visited cells, leakage before/after noise",
    "leakage_summary.json": "mean leakage measures over windows (computed from the true readings)",
    "dp_sigma2.png": "true sigma_p^2 beside the DP map, with every reading's location (the routes)",
    "rmse_vs_epsilon.csv": "utility experiment: RMSE against the true sigma_p^2 per window",
    "rmse_vs_epsilon.png": "utility experiment: CDF of that RMSE (paper Fig. 6)",
    "window_timing.csv": "seconds per window of the GP fits and the noise (grows with a window's true readings)",
}


class DpMapResult(SensingRelease):
    """The result of :func:`urbandp.sensing.dp_map`: ``table`` is dp_grid.csv (cell_id, lat, lon, window,
    sigma2_dp), ``privacy`` a :class:`~urbandp.sensing._report.DpMapPrivacyReport`."""


@dataclass
class _Inputs:
    """What the release reads before its charge: the public windows, the grid, the plan (None: paper)."""

    readings: Readings
    rows: dict[str, Any]
    windows: np.ndarray
    grid: SquareGrid
    plan: DpMapPlan | None


def _read(o: DpMapOptions, path: Path, quarantine: Path) -> _Inputs:
    """Read the readings at ``path``, keep those inside the public window, build the grid and the plan (before any noise)."""
    from urbandp.sensing._dp_map_mechanism import all_windows, plan_dp_map, public_windows
    from urbandp.sensing._grid import SquareGrid
    from urbandp.sensing._readings import read_readings, windows_per_day

    readings, load = read_readings(path, o.value_column, quarantine, o.bbox)
    rows: dict[str, Any] = dict(load.__dict__)
    if o.start is not None and o.end is not None:
        start, end = parse_window(o.start, o.end)
        inside, rows["rows_outside_window"] = readings.within(start, end)
        if len(inside) == 0:
            raise InputDataError(
                f"no usable reading inside start {o.start} end {o.end} "
                f"({len(readings)} usable readings lie outside it)",
                parameters=("start", "end"),
            )
        readings = inside
        windows = public_windows(start, end, o.window_minutes)
    else:
        windows = all_windows(readings, o.window_minutes)
    grid = SquareGrid.for_release(o.bbox, readings.lat, readings.lon, o.cell_metres)
    plan = None
    if o.calibration != "paper":
        per_day = windows_per_day(windows, o.window_minutes)
        plan = plan_dp_map(len(windows), grid.n_cells, o.epsilon, o.sensitivity, o.upper, o.delta, per_day)
        plan.check()  # before any noise: meaningless noise or unbounded work
    elif len(readings) < o.min_readings:
        raise InputDataError(
            f"the paper's calibration releases only fitted windows; none has {o.min_readings} readings "
            f"({len(readings)} usable)"
        )
    return _Inputs(readings, rows, windows, grid, plan)


def not_dp_reasons(o: DpMapOptions) -> list[str]:
    """Why the release would be NOT DP, from its options alone (refused with a dataset, before any noise)."""
    reasons: list[str] = []
    if o.start is None:
        reasons.append(
            Advice(
                "the time window (first to last released window) was derived from the data's first and last "
                "reading; give start and end to make it public",
                parameters=("start", "end"),
            )
        )
    if o.bbox is None:
        reasons.append(
            Advice(
                "the bounding box was taken from the readings (bbox_from_data_not_private)",
                parameters="bbox_from_data_not_private",
            )
        )
    if o.calibration == "paper":
        reasons.append(
            "paper calibration: b = Delta/epsilon with the upper bound taken from the data (no finite epsilon)"
        )
    return reasons


def _reserve(o: DpMapOptions, charge: ReleaseCharge, inputs: _Inputs) -> None:
    """Reserve before any noise; the loss per vehicle-day is booked, so the one guard (_privacy/guards.py, in
    reserve) checks what a vehicle pays in a day. Kept (aborted after noise) if anything after it fails."""
    from urbandp._privacy.loss import Loss
    from urbandp._privacy.session import days_between

    plan = inputs.plan
    charge.reserve(
        plan.loss_per_vehicle_day() if plan is not None else Loss(),
        days_between(str(inputs.windows[0]), str(inputs.windows[-1])),
        "sensing-dp-map",
        {"epsilon_cell": o.epsilon, "cells": inputs.grid.n_cells, "windows": len(inputs.windows)},
        cap_on=plan.loss_total() if plan is not None else Loss(),
    )


def _measure(
    o: DpMapOptions, inputs: _Inputs, noise: Any, clocks: tuple[WindowClock, WindowClock]
) -> tuple[DpMapRelease, list[WindowResult]]:
    """Fit a GP per window and draw the bounded Laplace noise (OpenDP), with progress on stderr."""
    from urbandp.sensing._dp_map_mechanism import _release_dp_map, fit_for_release
    from urbandp.sensing._gp import blas_threads_limit
    from urbandp.sensing._progress import progress

    fit_clock, noise_clock = clocks
    with blas_threads_limit(), progress() as bar:
        r, grid = inputs.readings, inputs.grid
        fitted = fit_for_release(
            r,
            grid,
            o.sensitivity,
            o.calibration,
            o.window_minutes,
            o.kernel,
            o.min_readings,
            progress=fit_clock.ticking(bar, "GP per window"),
            origin=inputs.windows[0] if o.calibration != "paper" and len(inputs.windows) else None,
        )
        if o.calibration == "paper" and not fitted:
            raise InputDataError(f"no window has at least {o.min_readings} readings")
        rel = _release_dp_map(
            r,
            grid,
            o.epsilon,
            noise,
            fitted,
            inputs.windows,
            o.sensitivity,
            o.upper,
            o.calibration,
            o.window_minutes,
            progress=noise_clock.ticking(bar, "bounded Laplace (OpenDP)"),
        )
    return rel, fitted


def run_dp_map(
    data: TableLike, o: DpMapOptions, session: Session, out: str | Path | None, overwrite: bool
) -> DpMapResult:
    """Run the release on the readings ``data`` (see the module docstring) in a charge of ``session``; returns
    the result (written to ``out`` inside the charge when given)."""
    from urbandp._privacy.loss import Loss

    return release_in_charge(
        session,
        data,
        out,
        overwrite,
        "dpmap",
        lambda path, quarantine: _read(o, path, quarantine),
        lambda _: "vehicle-day",
        lambda charge, inputs: _reserve(o, charge, inputs),
        lambda inputs, noise, d, not_dp: _release(o, inputs, noise, d, not_dp),
        cap=None if o.budget is None else Loss.approx_dp(o.budget, 1.0),
        refuse=not_dp_reasons(o),
    )


def _release(o: DpMapOptions, inputs: _Inputs, noise: Any, d: OutputDirs, not_dp: list[str]) -> DpMapResult:
    """Measure (the fits and the noise, timed), then the result: the DP table, the typed report, the owner's
    files (staged in ``d.owner``) and warnings."""
    from urbandp.sensing._progress import WindowClock
    from urbandp.sensing._report import DpMapPrivacyReport

    fit_clock, noise_clock = clocks = (WindowClock(), WindowClock())
    rel, fitted = _measure(o, inputs, noise, clocks)
    table = _dp_grid(o, rel, inputs.grid)
    _owner_material(o, d, rel, inputs, fitted)
    pl.DataFrame(
        {
            "stage": ["gp_fit"] * len(fit_clock.seconds) + ["noise"] * len(noise_clock.seconds),
            "seconds": fit_clock.seconds + noise_clock.seconds,
        }
    ).write_csv(d.owner_path("window_timing.csv"))
    # the noise is drawn in bulk (one OpenDP call per core), so only its total time means something
    timing = [fit_clock.summary("GP fits"), noise_clock.summary("noise", per_window=False)]
    return DpMapResult(
        tables={"dp_grid": table},
        privacy=DpMapPrivacyReport.from_document(_privacy(o, rel, inputs, not_dp)),
        owner={"files": owner_files(d.owner), "input_report": {"rows": inputs.rows}, "timing": timing},
        warnings=[f"NOT differentially private: {reason}" for reason in not_dp],
        owner_notes=OWNER_FILES,
        grid=inputs.grid,
    )


def _dp_grid(o: DpMapOptions, rel: DpMapRelease, grid: SquareGrid) -> pl.DataFrame:
    """dp_grid.csv: the noisy standardised sigma_p^2 of every cell of every window, rounded (Mironov 2012)."""
    from urbandp._privacy.rounding import round_to_precision

    ids, lat, lon = grid.centroids()
    return pl.concat(
        [
            pl.DataFrame(
                {
                    "cell_id": ids,
                    "lat": np.round(lat, 6),
                    "lon": np.round(lon, 6),
                    "window": [str(w.window.astype("datetime64[m]"))] * len(ids),
                    "sigma2_dp": round_to_precision(w.sigma2_dp, o.precision),
                }
            )
            for w in rel.windows
        ]
    )


def _owner_material(
    o: DpMapOptions, d: OutputDirs, rel: DpMapRelease, inputs: _Inputs, fitted: list[WindowResult]
) -> None:
    """Write the owner's files (NOT DP) into ``d.owner``: input report, leakage, true map, utility curve."""
    from urbandp._outputs import write_json
    from urbandp.sensing._dp_map_mechanism import rmse_vs_epsilon
    from urbandp.sensing._plots import rmse_cdf

    write_json(d.owner_path("input_report.json"), {"note": "raw-data counts; NOT DP", "rows": inputs.rows})
    _leakage(o, d, rel, inputs.grid)
    if o.utility_epsilons and fitted:
        rows_u = rmse_vs_epsilon(fitted, list(o.utility_epsilons), o.sensitivity, o.upper, o.calibration)
        pl.DataFrame(rows_u).write_csv(d.owner_path("rmse_vs_epsilon.csv"))
        rmse_cdf(
            rows_u,
            d.owner_path("rmse_vs_epsilon.png"),
            f"RMSE of DP sigma_p^2 over {len(fitted)} windows ({o.calibration})",
        )


def _leakage(o: DpMapOptions, d: OutputDirs, rel: DpMapRelease, grid: SquareGrid) -> None:
    """leakage.csv, leakage_summary.json and the true-vs-DP plot of the busiest window (owner only)."""
    from urbandp._outputs import write_json
    from urbandp.sensing._plots import contour_panels

    leak_rows = [
        {
            "window": str(w.window.astype("datetime64[m]")),
            "n_readings": w.n_readings,
            "visited_cells": w.leak_before.visited_cells,
            "spearman_before": w.leak_before.spearman_distance,
            "spearman_after": w.leak_after.spearman_distance,
            "recall_before": w.leak_before.visited_recall,
            "recall_after": w.leak_after.visited_recall,
            "recall_chance": w.leak_before.visited_recall_chance,
        }
        for w in rel.windows
        if w.leak_before is not None and w.leak_after is not None
    ]
    if leak_rows:
        lk = pl.DataFrame(leak_rows)
        lk.write_csv(d.owner_path("leakage.csv"))
        means = {c: lk[c].drop_nans().mean() for c in lk.columns if c != "window"}
        summary = {c: float(v) for c, v in means.items()}  # type: ignore[arg-type]
        write_json(
            d.owner_path("leakage_summary.json"),
            {"note": "computed from the true readings; NOT DP", "leakage_mean": summary},
        )
    with_leak = [w for w in rel.windows if w.leak_before is not None]
    if with_leak:
        w = max(with_leak, key=lambda w: w.n_readings)
        contour_panels(
            grid,
            [
                ("sigma_p^2 (standardised, TRUE)", w.sigma2_std),
                (f"DP sigma_p^2, eps/cell={o.epsilon:g}", w.sigma2_dp),
            ],
            d.owner_path("dp_sigma2.png"),
            f"window {w.window} (owner only: shows the true map and the readings)",
            w.fitted.reading_xy_km if w.fitted is not None else None,
        )


def _privacy(o: DpMapOptions, rel: DpMapRelease, inputs: _Inputs, not_dp: list[str]) -> dict[str, Any]:
    """privacy.json's content (public parameters and figures computed from them only): the per-cell epsilon with
    its lattice slack, the plan's composition figures and the ledger (Holohan et al. 2018), or, for the paper's
    calibration, why no epsilon holds."""
    from urbandp.sensing._bounded_laplace import LATTICE_EXPONENT

    grid, plan = inputs.grid, inputs.plan
    privacy: dict[str, Any] = {
        "mechanism": "bounded Laplace on standardised sigma_p^2 per cell (Holohan et al. 2018), OpenDP draws"
        if plan is not None
        else "paper's bounded Laplace (b = Delta/epsilon, data-dependent bounds)",
        "calibration": o.calibration,
        "differentially_private": not not_dp,
        "unit": "reading",
        "sensitivity_per_cell": o.sensitivity,
        "sensitivity_source": "section VI-A: |f(D) - f(D')| <= sigma_f^2, kernel variance capped at Delta",
        "epsilon_cell_requested": o.epsilon,
        "cells_per_window": grid.n_cells,
        "windows_released": len(rel.windows),
    }
    if plan is not None:
        privacy["epsilon_cell_actual_max"] = plan.epsilon_cell
        privacy["noise_lattice"] = (
            f"2^{LATTICE_EXPONENT} (OpenDP make_laplace k={LATTICE_EXPONENT}; the per-cell epsilon includes the "
            "lattice slack, see urbandp.sensing._bounded_laplace)"
        )
        privacy.update(plan.to_json())
        privacy["ledger"] = rel.ledger.to_dict()
        privacy["epsilon_budget"] = o.budget
        privacy["budget_booked"] = {"unit": "vehicle-day", "epsilon_per_day": plan.epsilon_per_vehicle_day}
    else:
        privacy["epsilon"] = None
        privacy["epsilon_reason"] = (
            "not DP: the upper bound of the noise domain is the window's largest true sigma_p^2 (read from the "
            "data), so no finite epsilon holds; 'epsilon_cell_requested' is only the paper's nominal parameter"
        )
        privacy["flaws"] = [
            "b = Delta/epsilon ignores the input-dependent normaliser of the truncated Laplace (Holohan et al.)",
            "bounds [0, max sigma_p^2] are taken from the data",
            "Delta = 1 is not a sensitivity bound when the fitted kernel variance exceeds 1",
            "epsilon is per cell; the map of G cells costs G x epsilon",
        ]
    privacy["not_dp_reasons"] = not_dp
    privacy["dp_label"] = (
        "differentially private (per reading, and per vehicle-day)"
        if not not_dp
        else "NOT differentially private"
    )
    privacy["bbox"] = [grid.lat_min, grid.lon_min, grid.lat_max, grid.lon_max]
    privacy["bbox_source"] = "bbox (public)" if o.bbox else "from the readings: NOT differentially private"
    privacy["windows_source"] = (
        f"public: start {o.start}, end {o.end}"
        if o.start is not None
        else "every window from the first to the last reading (time range from the data: NOT DP)"
    )
    privacy["released_unit"] = "standardised sigma_p^2 (fraction of the window's value variance)"
    privacy["warnings"] = []
    privacy["spec_sha256"] = spec_sha256("dp-map", o)
    return privacy
