"""`urbandp sensing interpolate` / :func:`urbandp.sensing.interpolate`: NOT A RELEASE. GP interpolation per window
onto a square grid, the server's private input of the paper's queries (section V); the folder it writes
(grid.parquet, models.csv, report.json, quarantine.csv, optional plot and cross-validation) is the data owner's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from urbandp._progress import progress_display
from urbandp.errors import InputDataError
from urbandp.sensing._options import InterpolateOptions

if TYPE_CHECKING:
    from urbandp.sensing._grid import SquareGrid
    from urbandp.sensing._interpolation import WindowResult
    from urbandp.sensing._readings import LoadReport, Readings


@dataclass
class Interpolation:
    """What :func:`urbandp.sensing.interpolate` wrote (NOT differentially private: owner only)."""

    out: Path
    report: dict[str, Any]
    windows: int
    cells: int
    rows_quarantined: int

    @property
    def grid_path(self) -> Path:
        """The grid file (``grid.parquet`` or ``grid.csv``) that :func:`urbandp.sensing.query` reads."""
        suffix = "parquet" if (self.out / "grid.parquet").exists() else "csv"
        return self.out / f"grid.{suffix}"

    def summary(self) -> str:
        """The line `sensing interpolate` prints."""
        cvtxt = ""
        if "cross_validation" in self.report:
            c = self.report["cross_validation"]
            cvtxt = f"; CV RMSE GP {c['rmse_gp']:.3f} vs IDW {c['rmse_idw']:.3f} ({c['held_out']} held-out readings)"
        return (
            f"{self.windows} windows ({', '.join(self.report['methods'])}), {self.cells} cells, "
            f"{self.rows_quarantined} rows quarantined{cvtxt} -> {self.out}"
        )


def run_interpolate(o: InterpolateOptions) -> Interpolation:
    """Read the readings (quarantined rows into the folder), fit and predict every window on the grid over
    ``bbox``, write the folder ``o.out`` atomically (a failing run leaves no partial one)."""
    from urbandp._outputs import atomic_output_dir, write_json
    from urbandp.sensing._gp import blas_threads_limit
    from urbandp.sensing._grid import SquareGrid
    from urbandp.sensing._interpolation import interpolate_windows
    from urbandp.sensing._readings import read_readings

    with atomic_output_dir(o.out) as dirs:
        folder = dirs.release
        readings, loaded = read_readings(o.input_path, o.value_column, folder / "quarantine.csv", o.bbox)
        grid = SquareGrid.for_release(o.bbox, readings.lat, readings.lon, o.cell_metres)
        t0 = time.perf_counter()
        with blas_threads_limit(), progress_display() as bar:
            task = bar.add_task("GP per window", total=None)
            results, counts = interpolate_windows(
                readings,
                grid,
                o.window_minutes,
                o.kernel,
                o.exact_max,
                o.inducing,
                min_readings=o.min_readings,
                progress=lambda i, n: bar.update(task, completed=i, total=n),
            )
        t_fit = time.perf_counter() - t0
        if not results:
            raise InputDataError(f"no window has at least {o.min_readings} readings")
        _write_fits(o, folder, grid, results)
        report = _report(o, loaded, grid, results, counts, t_fit)
        if o.folds:
            report["cross_validation"] = _cross_validate(o, folder, readings, grid, results)
        write_json(folder / "report.json", report)
    return Interpolation(o.out, report, len(results), grid.n_cells, loaded.rows_quarantined)


def _write_fits(o: InterpolateOptions, folder: Path, grid: SquareGrid, results: list[WindowResult]) -> None:
    """grid.<format> (mu, sigma2 per cell and window), models.csv (hyper-parameters), the optional plot."""
    from urbandp.sensing._grid import write_grid_table

    names = [str(r.window.astype("datetime64[m]")) for r in results]
    values = {"mu": [r.mu for r in results], "sigma2": [r.sigma2 for r in results]}
    write_grid_table(grid, names, values, folder / f"grid.{o.grid_format}", o.grid_format)
    pl.DataFrame(
        [
            {
                "window": str(r.window.astype("datetime64[m]")),
                "n_readings": r.n_readings,
                "method": r.method,
                "kernel": o.kernel,
                "variance": r.hyperparameters.variance,
                "lengthscale_km": r.hyperparameters.lengthscale,
                "noise": r.hyperparameters.noise,
                "log_marginal_likelihood": r.log_marginal_likelihood,
                "value_mean": r.value_mean,
                "value_sd": r.value_sd,
            }
            for r in results
        ]
    ).write_csv(folder / "models.csv")
    if o.plot:
        from urbandp.sensing._plots import contour_panels

        busiest = max(results, key=lambda r: r.n_readings)
        contour_panels(
            grid,
            [("posterior mean mu_p", busiest.mu), ("posterior variance sigma_p^2", busiest.sigma2)],
            folder / "map_mu_sigma2.png",
            f"window {busiest.window} ({busiest.n_readings} readings)",
            busiest.reading_xy_km,
        )


def _report(
    o: InterpolateOptions,
    loaded: LoadReport,
    grid: SquareGrid,
    results: list[WindowResult],
    counts: Any,
    t_fit: float,
) -> dict[str, Any]:
    """report.json (NOT DP)."""
    return {
        "differentially_private": False,
        "note": "server-side interpolation (the paper's private input); release with `dp-map` or `query`",
        "input": str(o.input_path),
        "rows": loaded.__dict__,
        "grid": {
            "cell_metres": o.cell_metres,
            "n_cols": grid.n_cols,
            "n_rows": grid.n_rows,
            "cells": grid.n_cells,
            "bbox": [grid.lat_min, grid.lon_min, grid.lat_max, grid.lon_max],
            "bbox_source": "bbox" if o.bbox else "from the readings",
            "cell_id": "floor((x - x0)/z) + floor((y - y0)/z) * n_cols",
        },
        "windows": counts,
        "methods": sorted({r.method for r in results}),
        "seconds_fit_predict": round(t_fit, 3),
    }


def _cross_validate(
    o: InterpolateOptions, folder: Path, readings: Readings, grid: SquareGrid, results: list[WindowResult]
) -> dict[str, Any]:
    """K-fold cross-validation against IDW (cv_windows.csv), its summary for report.json."""
    from urbandp.sensing._gp import blas_threads_limit
    from urbandp.sensing._interpolation import cross_validate

    with blas_threads_limit(), progress_display() as bar:
        task = bar.add_task("cross-validation", total=None)
        cv_report = cross_validate(
            readings,
            grid,
            o.window_minutes,
            o.folds,
            o.kernel,
            o.exact_max,
            o.inducing,
            max_windows=o.cv_max_windows or None,
            progress=lambda i, n: bar.update(task, completed=i, total=n),
            fitted=None if o.cv_refit else {r.window: r.hyperparameters for r in results},
        )
    summary = {k: v for k, v in cv_report.__dict__.items() if k != "per_window"}
    summary["hyperparameters"] = (
        "re-optimised in every fold (cv_refit)"
        if o.cv_refit
        else "the window's fit on all its readings, reused in every fold (optimistic; cv_refit refits)"
    )
    if cv_report.per_window:
        pl.DataFrame(cv_report.per_window).write_csv(folder / "cv_windows.csv")
    return summary
