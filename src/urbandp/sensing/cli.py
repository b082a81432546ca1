"""CLI group `urbandp sensing`: GP interpolation, DP variance maps, aggregate queries, synthetic readings."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from urbandp.cli_options import AllowMeaninglessEpsilon, BudgetStoreUrl, Dataset, Overwrite
from urbandp.errors import InputError, cli_guard

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


ReadingsCsv = Annotated[
    Path, typer.Argument(metavar="INPUT", help="CSV of readings: lat, lon|long, time, value|pm.")
]
OutDir = Annotated[Path, typer.Option("--out", help="Output directory.")]
ValueColumn = Annotated[
    str | None,
    typer.Option(help="Name of the value column (default: the first of value, pm, pm25, pm2_5, pm2.5)."),
]


def _floats(text: str | None, n: int, option: str) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        vals = tuple(float(t) for t in text.split(","))
    except ValueError:
        raise InputError(f"{option} needs {n} comma-separated numbers, got {text!r}") from None
    if len(vals) != n:
        raise InputError(f"{option} needs {n} comma-separated numbers, got {text!r}")
    return vals


def _bbox(text: str | None) -> tuple[float, float, float, float] | None:
    box = _floats(text, 4, "--bbox")
    if box is not None and not (box[0] < box[2] and box[1] < box[3]):
        raise InputError("--bbox must be lat_min,lon_min,lat_max,lon_max with min < max")
    return None if box is None else (box[0], box[1], box[2], box[3])


def _progress():
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
    )


def _check_common(cell_metres: float, window_minutes: int, kernel: str) -> None:
    from urbandp.sensing.kernels import KERNELS

    if not cell_metres > 0:
        raise InputError(f"--cell-metres must be > 0, got {cell_metres}")
    if window_minutes <= 0:
        raise InputError(f"--window-minutes must be > 0, got {window_minutes}")
    if kernel not in KERNELS:
        raise InputError(f"--kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")


def _load(
    input_path: Path,
    out: Path,
    value_column: str | None,
    bbox: tuple[float, float, float, float] | None,
    cell_metres: float,
):
    from urbandp.sensing.grid import SquareGrid
    from urbandp.sensing.readings import read_readings

    readings, report = read_readings(input_path, value_column, out / "quarantine.csv", bbox)
    if bbox is not None:
        grid = SquareGrid(bbox[0], bbox[1], bbox[2], bbox[3], cell_metres)
    else:
        grid = SquareGrid.covering(readings.lat, readings.lon, cell_metres)
    if grid.n_cells > 250_000:
        raise InputError(f"grid of {grid.n_cells} cells is too large; use a larger --cell-metres")
    return readings, report, grid


@app.command()
@cli_guard
def synth(
    out: Annotated[Path, typer.Argument(help="CSV to write (lat, lon, time, value, vehicle).")],
    readings: Annotated[int, typer.Option(help="Number of readings.")] = 1400,
    vehicles: Annotated[int, typer.Option(help="Number of vehicles.")] = 10,
    hours: Annotated[int, typer.Option(help="Hours (one-hour windows) the readings span.")] = 1,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    overwrite: Overwrite = False,
) -> None:
    """Write synthetic fleet readings of a smooth pollution field (for trying the other commands).

    Example: urbandp sensing synth out/readings.csv --readings 1400 --vehicles 10
    """
    import os
    import uuid

    from urbandp.reports.outputs import check_output_file
    from urbandp.sensing.synth import synth_readings

    if readings < 2 or vehicles < 1 or hours < 1:
        raise InputError("need --readings >= 2, --vehicles >= 1 and --hours >= 1")
    if readings > 10_000_000 or hours > 24 * 366:
        raise InputError("need --readings <= 10000000 and --hours <= 8784 (one year)")
    if seed < 0:
        raise InputError(f"--seed must be >= 0, got {seed}")
    check_output_file(out, "OUT")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:  # temporary file renamed into place: no partial CSV on failure
        synth_readings(readings, vehicles, hours, seed).write_csv(tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    print(f"wrote {readings} readings to {out}")


@app.command()
@cli_guard
def interpolate(
    input_path: ReadingsCsv,
    out: OutDir,
    cell_metres: Annotated[float, typer.Option(help="Grid cell side z in metres.")] = 500.0,
    window_minutes: Annotated[int, typer.Option(help="Window length in minutes.")] = 60,
    kernel: Annotated[str, typer.Option(help="matern32 | matern52 | rbf.")] = "matern32",
    exact_max: Annotated[
        int, typer.Option(help="Exact GP up to this many readings per window; SGPR beyond.")
    ] = 2000,
    inducing: Annotated[int, typer.Option(help="Inducing points of the sparse GP.")] = 500,
    min_readings: Annotated[int, typer.Option(help="Skip windows with fewer readings.")] = 3,
    cv: Annotated[
        bool, typer.Option("--cv", help="Cross-validate against IDW (5 folds unless --cv-folds is given).")
    ] = False,
    cv_folds: Annotated[
        int, typer.Option(help="K-fold cross-validation against IDW (0 = off unless --cv, which means 5).")
    ] = 0,
    cv_max_windows: Annotated[
        int, typer.Option(help="Cross-validate at most this many windows (0 = all).")
    ] = 0,
    cv_refit: Annotated[
        bool,
        typer.Option(
            "--cv-refit", help="Re-optimise hyper-parameters in every fold (default: reuse the window's fit)."
        ),
    ] = False,
    grid_format: Annotated[str, typer.Option(help="parquet | csv (file DIR/grid.<format>).")] = "parquet",
    plot: Annotated[
        bool, typer.Option("--plot/--no-plot", help="Also write map_mu_sigma2.png (matplotlib adds ~1 s).")
    ] = False,
    bbox: Annotated[
        str | None,
        typer.Option(
            help="Public box lat_min,lon_min,lat_max,lon_max (default: the readings' extent, not DP)."
        ),
    ] = None,
    value_column: ValueColumn = None,
    overwrite: Overwrite = False,
) -> None:
    """GP interpolation per window onto a square grid: DIR/grid.parquet (cell_id, lat, lon, window, mu, sigma2).

    The grid is the server's private input (NOT differentially private); see `dp-map` and `query` for releases.
    Parquet holds one row group per window, so `query` reads one window; `--grid-format csv` writes grid.csv.

    Example: urbandp sensing interpolate ../shared/data/kolkata-pm25/Mobile_Spring.csv --cell-metres 500 --out out/kolkata
    """
    import time

    import polars as pl

    from urbandp.sensing.gp import blas_threads_limit
    from urbandp.sensing.grid import GRID_FORMATS, write_grid_table
    from urbandp.sensing.interpolate import cross_validate, interpolate_windows

    _check_common(cell_metres, window_minutes, kernel)
    if exact_max < 2 or inducing < 2 or min_readings < 2 or cv_folds < 0 or cv_folds == 1:
        raise InputError("need --exact-max >= 2, --inducing >= 2, --min-readings >= 2, --cv-folds 0 or >= 2")
    if grid_format not in GRID_FORMATS:
        raise InputError(f"--grid-format must be one of {', '.join(GRID_FORMATS)}, got {grid_format!r}")
    cv_folds = cv_folds or (5 if cv else 0)
    from urbandp.reports.outputs import atomic_output_dir, write_json

    final_out = out
    with atomic_output_dir(
        final_out
    ) as dirs:  # a failing run leaves no partial folder, a new one no stale files
        out = dirs.release
        readings, load, grid = _load(input_path, out, value_column, _bbox(bbox), cell_metres)
        t0 = time.perf_counter()
        with blas_threads_limit(), _progress() as bar:
            task = bar.add_task("GP per window", total=None)
            results, counts = interpolate_windows(
                readings,
                grid,
                window_minutes,
                kernel,
                exact_max,
                inducing,
                min_readings=min_readings,
                progress=lambda i, n: bar.update(task, completed=i, total=n),
            )
        t_fit = time.perf_counter() - t0
        if not results:
            raise InputError(f"no window has at least {min_readings} readings")
        window_names = [str(r.window.astype("datetime64[m]")) for r in results]
        write_grid_table(
            grid,
            window_names,
            {"mu": [r.mu for r in results], "sigma2": [r.sigma2 for r in results]},
            out / f"grid.{grid_format}",
            grid_format,
        )
        models = pl.DataFrame(
            [
                {
                    "window": str(r.window.astype("datetime64[m]")),
                    "n_readings": r.n_readings,
                    "method": r.method,
                    "kernel": kernel,
                    "variance": r.hyperparameters.variance,
                    "lengthscale_km": r.hyperparameters.lengthscale,
                    "noise": r.hyperparameters.noise,
                    "log_marginal_likelihood": r.log_marginal_likelihood,
                    "value_mean": r.value_mean,
                    "value_sd": r.value_sd,
                }
                for r in results
            ]
        )
        models.write_csv(out / "models.csv")
        if plot:
            from urbandp.sensing.plots import contour_panels

            busiest = max(results, key=lambda r: r.n_readings)
            contour_panels(
                grid,
                [("posterior mean mu_p", busiest.mu), ("posterior variance sigma_p^2", busiest.sigma2)],
                out / "map_mu_sigma2.png",
                f"window {busiest.window} ({busiest.n_readings} readings)",
                busiest.reading_xy_km,
            )
        report: dict[str, Any] = {
            "differentially_private": False,
            "note": "server-side interpolation (the paper's private input); release with `dp-map` or `query`",
            "input": str(input_path),
            "rows": load.__dict__,
            "grid": {
                "cell_metres": cell_metres,
                "n_cols": grid.n_cols,
                "n_rows": grid.n_rows,
                "cells": grid.n_cells,
                "bbox": [grid.lat_min, grid.lon_min, grid.lat_max, grid.lon_max],
                "bbox_source": "--bbox" if bbox else "from the readings",
                "cell_id": "floor((x - x0)/z) + floor((y - y0)/z) * n_cols",
            },
            "windows": counts,
            "methods": sorted({r.method for r in results}),
            "seconds_fit_predict": round(t_fit, 3),
        }
        if cv_folds:
            with blas_threads_limit(), _progress() as bar:
                task = bar.add_task("cross-validation", total=None)
                cv_report = cross_validate(
                    readings,
                    grid,
                    window_minutes,
                    cv_folds,
                    kernel,
                    exact_max,
                    inducing,
                    max_windows=cv_max_windows or None,
                    progress=lambda i, n: bar.update(task, completed=i, total=n),
                    fitted=None if cv_refit else {r.window: r.hyperparameters for r in results},
                )
            report["cross_validation"] = {k: v for k, v in cv_report.__dict__.items() if k != "per_window"}
            report["cross_validation"]["hyperparameters"] = (
                "re-optimised in every fold (--cv-refit)"
                if cv_refit
                else "the window's fit on all its readings, reused in every fold (optimistic; --cv-refit refits)"
            )
            pl.DataFrame(cv_report.per_window).write_csv(
                out / "cv_windows.csv"
            ) if cv_report.per_window else None
        write_json(out / "report.json", report)
    cvtxt = ""
    if "cross_validation" in report:
        c = report["cross_validation"]
        cvtxt = (
            f"; CV RMSE GP {c['rmse_gp']:.3f} vs IDW {c['rmse_idw']:.3f} ({c['held_out']} held-out readings)"
        )
    print(
        f"{len(results)} windows ({', '.join(report['methods'])}), {grid.n_cells} cells, "
        f"{load.rows_quarantined} rows quarantined{cvtxt} -> {final_out}"
    )


@app.command("dp-map")
@cli_guard
def dp_map(
    input_path: ReadingsCsv,
    out: OutDir,
    epsilon: Annotated[
        float, typer.Option(help="Epsilon per cell (the paper's epsilon); the map costs cells x it.")
    ] = 1.0,
    bbox: Annotated[
        str | None,
        typer.Option(
            help="Public box lat_min,lon_min,lat_max,lon_max (default: none; required unless the flag below)."
        ),
    ] = None,
    bbox_from_data_not_private: Annotated[
        bool, typer.Option(help="Take the box from the readings (NOT DP).")
    ] = False,
    cell_metres: Annotated[float, typer.Option(help="Grid cell side z in metres.")] = 500.0,
    window_minutes: Annotated[int, typer.Option(help="Window length in minutes.")] = 60,
    kernel: Annotated[str, typer.Option(help="matern32 | matern52 | rbf.")] = "matern32",
    sensitivity: Annotated[
        float, typer.Option(help="Cap on the kernel variance = per-cell sensitivity (VI-A).")
    ] = 1.0,
    upper: Annotated[
        float | None,
        typer.Option(
            help="Upper bound of the released domain, at least the sensitivity (default: the sensitivity)."
        ),
    ] = None,
    calibration: Annotated[
        str, typer.Option(help="holohan (DP, default) | paper (NOT DP, for comparison).")
    ] = "holohan",
    utility_epsilons: Annotated[
        str, typer.Option(help="Epsilons for the Fig. 6 RMSE CDF ('' = off).")
    ] = "0.5,1,10",
    min_readings: Annotated[
        int, typer.Option(help="Windows with fewer readings get the prior variance.")
    ] = 3,
    budget: Annotated[
        float | None, typer.Option(help="Refuse to spend more than this epsilon in total (default: no cap).")
    ] = None,
    precision: Annotated[int, typer.Option(help="Decimal places of released values.")] = 4,
    value_column: ValueColumn = None,
    dataset: Dataset = None,
    budget_store: BudgetStoreUrl = None,
    start: Annotated[
        str | None,
        typer.Option(
            help="Public start of the time window, ISO date or date-time (default: the first reading, not DP)."
        ),
    ] = None,
    end: Annotated[
        str | None,
        typer.Option(
            help="Public end of the window, exclusive; a date includes that day (default: the last reading, not DP)."
        ),
    ] = None,
    delta: Annotated[
        float,
        typer.Option(
            help="Delta of the optimal composition of a window's cells (Kairouz, Oh, Viswanath): the map is "
            "(epsilon, delta)-DP with epsilon far below cells x epsilon; 0 gives the basic sum at delta 0."
        ),
    ] = 1e-6,
    allow_meaningless_epsilon: AllowMeaninglessEpsilon = False,
    overwrite: Overwrite = False,
) -> None:
    """Differentially private posterior-variance maps (bounded Laplace, Holohan et al.), leakage before/after.

    Publishable (DIR/): dp_grid.csv (cell_id, lat, lon, window, sigma2_dp in standardised units) and
    privacy.json. Data-owner material, NOT DP (owner_only/<name>/ beside DIR): quarantine.csv, input_report.json,
    leakage.csv + leakage_summary.json, dp_sigma2.png (true map and reading locations), rmse_vs_epsilon.csv +
    .png (paper Fig. 6). Without --start/--end the window comes from the data and the release is NOT DP.

    Example: urbandp sensing dp-map ../shared/data/kolkata-pm25/Mobile_Spring.csv --bbox 22.45,88.30,22.65,88.47 --start 2023-04-25 --end 2023-04-27 --epsilon 1 --out out/dpmap
    """
    from urbandp.sensing.dp_map_command import DpMapOptions, parse_utility_epsilons, run_dp_map

    _check_common(cell_metres, window_minutes, kernel)
    opts = DpMapOptions(
        input_path=input_path,
        out=out,
        epsilon=epsilon,
        bbox=_bbox(bbox),
        bbox_from_data_not_private=bbox_from_data_not_private,
        cell_metres=cell_metres,
        window_minutes=window_minutes,
        kernel=kernel,
        sensitivity=sensitivity,
        upper=upper,
        calibration=calibration,
        utility_epsilons=parse_utility_epsilons(utility_epsilons),
        min_readings=min_readings,
        budget=budget,
        precision=precision,
        value_column=value_column,
        dataset=dataset,
        budget_store=budget_store,
        start=start,
        end=end,
        delta=delta,
        allow_meaningless_epsilon=allow_meaningless_epsilon,
    )
    privacy = run_dp_map(opts)
    if opts.calibration == "paper":
        cost = "epsilon: none (paper calibration: NOT differentially private)"
    else:
        cost = (
            f"epsilon per cell {epsilon:g} (per reading / window map {privacy['epsilon_per_window_map']:.6g} at "
            f"delta {privacy['delta_per_reading']:.2g}; per vehicle-day {privacy['epsilon_per_vehicle_day']:.6g}; "
            f"vehicle in every window {privacy['epsilon_vehicle_upper_bound']:.6g})"
        )
    label = privacy["dp_label"]
    print(
        f"{privacy['windows_released']} windows x {privacy['cells_per_window']} cells; {cost}; {label} -> {out} "
        f"(owner-only material, not DP: {out.parent / 'owner_only' / out.name})"
    )


@app.command("pm-map")
@cli_guard
def pm_map(
    input_path: ReadingsCsv,
    out: OutDir,
    bbox: Annotated[str, typer.Option(help="Public box lat_min,lon_min,lat_max,lon_max (the grid).")],
    start: Annotated[str, typer.Option(help="Public start of the time window, ISO date or date-time.")],
    end: Annotated[str, typer.Option(help="Public end of the window, exclusive; a date includes that day.")],
    epsilon: Annotated[
        float, typer.Option(help="Epsilon per privacy unit (per vehicle-window, or per reading; see --unit).")
    ] = 1.0,
    unit: Annotated[
        str | None,
        typer.Option(
            help="vehicle-window | reading (default: vehicle-window when the input has a vehicle column, else "
            "reading)."
        ),
    ] = None,
    vehicle_column: Annotated[
        str | None,
        typer.Option(help="Column of vehicle ids (default: a column named 'vehicle', if the input has one)."),
    ] = None,
    max_readings_per_vehicle_window: Annotated[
        int,
        typer.Option(
            help="Public bound M: a vehicle-window keeps at most M readings (evenly spaced in time); the noise "
            "grows with M."
        ),
    ] = 3,
    clip: Annotated[
        float, typer.Option(help="Public upper bound of a reading; values are clipped to [0, it].")
    ] = 250.0,
    cell_metres: Annotated[float, typer.Option(help="Grid cell side in metres.")] = 1000.0,
    window_minutes: Annotated[int, typer.Option(help="Window length in minutes.")] = 60,
    smoother: Annotated[str, typer.Option(help="gp | idw | none: how the noisy cells become a map.")] = "gp",
    value_column: ValueColumn = None,
    dataset: Dataset = None,
    budget_store: BudgetStoreUrl = None,
    allow_meaningless_epsilon: AllowMeaninglessEpsilon = False,
    overwrite: Overwrite = False,
) -> None:
    """A differentially private map of PM2.5 itself: noisy clipped sums and counts per cell and window, smoothed.

    Publishable (DIR/): pm_cells.csv (noisy count and sum per cell and window, the mean derived from them),
    pm_grid.csv (the map smoothed by --smoother, post-processing) and privacy.json. The unit is one
    vehicle-window (at most M readings) when the readings carry vehicle ids, else one reading; windows compose in
    parallel, so the release costs --epsilon per unit, and privacy.json states what a vehicle pays per window,
    per day and over the release. docs/sensing.md measures its RMSE at the Kolkata static stations.

    Example: urbandp sensing pm-map ../shared/data/kolkata-pm25/Mobile_Autumn.csv --bbox 22.45,88.30,22.65,88.47 --start 2023-09-15 --end 2023-10-31 --window-minutes 1440 --epsilon 4 --out out/pm
    """
    from urbandp.sensing.pm_map_command import PmMapOptions, run_pm_map

    box = _bbox(bbox)
    assert box is not None
    run_pm_map(
        PmMapOptions(
            input_path=input_path,
            out=out,
            bbox=box,
            start=start,
            end=end,
            epsilon=epsilon,
            clip=clip,
            cell_metres=cell_metres,
            window_minutes=window_minutes,
            smoother=smoother,
            value_column=value_column,
            dataset=dataset,
            budget_store=budget_store,
            allow_meaningless_epsilon=allow_meaningless_epsilon,
            unit=unit,
            vehicle_column=vehicle_column,
            max_readings_per_vehicle_window=max_readings_per_vehicle_window,
        )
    )


@app.command()
@cli_guard
def query(
    grid_csv: Annotated[
        Path, typer.Argument(metavar="GRID", help="grid.parquet (or grid.csv) written by `interpolate`.")
    ],
    rect: Annotated[str, typer.Option(help="Obfuscation rectangle lat1,lon1,lat2,lon2 (diagonal vertices).")],
    query_type: Annotated[
        str, typer.Option("--type", help="average|min|max|min-exact|max-exact|count|range.")
    ] = "average",
    window: Annotated[
        str | None, typer.Option(help="Window start as in the grid file (default: the first).")
    ] = None,
    select: Annotated[
        str | None, typer.Option(help="Cells of interest lat1,lon1,lat2,lon2 (default: all of --rect).")
    ] = None,
    cells: Annotated[
        Path | None,
        typer.Option(
            help="File of cells of interest, one cell_id per line as for mpc query (default: every cell of --rect)."
        ),
    ] = None,
    alpha: Annotated[int, typer.Option(help="Server threshold: answer only over >= alpha cells.")] = 5,
    rho: Annotated[float, typer.Option(help="LogSumExp sharpness |rho| for min/max.")] = 1.0,
    theta: Annotated[
        float | None,
        typer.Option(
            help="Threshold for count and lower bound for range (default: none; required for count and range)."
        ),
    ] = None,
    theta2: Annotated[
        float | None, typer.Option(help="Upper bound for range (default: none; required for range).")
    ] = None,
    steepness: Annotated[float, typer.Option(help="Sigmoid steepness k (paper: 1).")] = 1.0,
    epsilon: Annotated[float, typer.Option(help="Epsilon for the noisy squared error (VII-D).")] = 1.0,
    sigma2_min: Annotated[
        float | None, typer.Option(help="Public lower bound of cell variances (default: none; required).")
    ] = None,
    sigma2_max: Annotated[
        float | None, typer.Option(help="Public upper bound of cell variances (default: none; required).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Also write the answer as JSON here (default: stdout only).")
    ] = None,
    overwrite: Overwrite = False,
) -> None:
    """Aggregate query with propagated error (Table III) and a DP squared error (section VII-D).

    Example: urbandp sensing query out/kolkata/grid.parquet --rect 22.50,88.32,22.56,88.37 --type max --rho 0.5 --sigma2-min 0 --sigma2-max 800
    """
    import sys
    import time

    import numpy as np

    from urbandp.privacy.noise import OpenDPNoise
    from urbandp.sensing.queries import (
        QUERY_TYPES,
        answer_json,
        clamp_sigma2,
        privatize_error,
        read_cells_file,
        read_grid_window,
        rectangle_mask,
        run_query,
    )

    if query_type not in QUERY_TYPES:
        raise InputError(f"--type must be one of {', '.join(QUERY_TYPES)}, got {query_type!r}")
    if sigma2_min is None or sigma2_max is None or not (0 <= sigma2_min < sigma2_max):
        raise InputError("give public bounds --sigma2-min and --sigma2-max with 0 <= min < max")
    if not epsilon > 0 or alpha < 1 or rho == 0 or steepness <= 0:
        raise InputError("need --epsilon > 0, --alpha >= 1, --rho != 0 and --steepness > 0")
    if query_type in ("count", "range") and theta is None:
        raise InputError(f"--type {query_type} needs --theta")
    if query_type == "range" and (theta2 is None or not theta < theta2):  # type: ignore[operator]
        raise InputError("--type range needs --theta2 > --theta")
    if out is not None:
        from urbandp.reports.outputs import check_output_file

        check_output_file(out)
    r = _floats(rect, 4, "--rect")
    sel = _floats(select, 4, "--select")
    if cells is not None and sel is not None:
        raise InputError("give at most one of --select and --cells")
    # only the window's cells inside --rect are read (Parquet: one row group; see queries.read_grid_window)
    w, cell_ids, lat, lon, mu, s2_raw = read_grid_window(grid_csv, window, r)  # type: ignore[arg-type]
    if cell_ids.size == 0:
        raise InputError("--rect contains no cell centroid")
    s2 = clamp_sigma2(s2_raw, sigma2_min, sigma2_max)
    n_rect = int(cell_ids.size)
    if cells is not None:
        wanted = set(read_cells_file(cells))
        v = np.isin(cell_ids, sorted(wanted))
        outside = len(wanted) - int(v.sum())
        if outside:
            print(f"note: {outside} cell(s) of {cells} lie outside --rect and are ignored", file=sys.stderr)
    else:
        v = rectangle_mask(lat, lon, sel) if sel is not None else np.ones(n_rect, dtype=bool)
    started = time.perf_counter()
    res = run_query(query_type, mu, s2, v, alpha, rho, theta, theta2, steepness)
    res = privatize_error(res, query_type, epsilon, sigma2_min, sigma2_max, OpenDPNoise(), steepness)
    printed = answer_json(
        query_type, res.value, res.noisy_error2, res.answered, int(v.sum()), time.perf_counter() - started
    )
    answer: dict[str, Any] = {
        **printed,
        "query": query_type,
        "window": w,
        "cells_in_rectangle": n_rect,
        "cells_selected": int(v.sum()),
        "alpha": alpha,
        "answered": res.answered,
        "value_note": "not differentially private (the paper perturbs only the error, section VII-D)",
        "noisy_error2": res.noisy_error2,
        "noisy_error": None if res.noisy_error2 is None else res.noisy_error2**0.5,
        "epsilon": res.epsilon,
        "privacy_unit": "one reading (it moves every cell's sigma^2); cell variances within [sigma2_min, sigma2_max]",
    }
    from urbandp.reports.outputs import atomic_output_file, dumps_strict, write_json

    if out is not None:
        with atomic_output_file(out) as tmp:
            write_json(tmp, answer)
    print(dumps_strict(printed, indent=None))
    if not res.answered:
        print(f"refused: {int(v.sum())} cells selected < alpha = {alpha} (nothing released)", file=sys.stderr)
    else:
        print(
            f"{query_type} over {res.n_selected} cells: value {res.value:.4f} (not DP), "
            f"DP squared error {res.noisy_error2:.4f} (epsilon {res.epsilon:.6g}, per reading)",
            file=sys.stderr,
        )
