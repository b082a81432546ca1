"""CLI group `urbandp sensing`: GP interpolation, DP variance maps, aggregate queries, synthetic readings."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from urbandp.cli_options import AllowMeaninglessEpsilon, BudgetStoreUrl, Dataset, Overwrite
from urbandp.cli_support import cli_guard
from urbandp.errors import InputError

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


ReadingsCsv = Annotated[
    Path, typer.Argument(metavar="INPUT", help="CSV of readings: lat, lon|long, time, value|pm.")
]
OutDir = Annotated[Path, typer.Option("--out", help="Output directory.")]
ValueColumn = Annotated[
    str | None,
    typer.Option(help="Name of the value column (default: the first of value, pm, pm25, pm2_5, pm2.5)."),
]


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

    from urbandp.outputs import check_output_file
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

    Example: urbandp sensing interpolate kolkata-pm25/Mobile_Spring.csv --cell-metres 500 --out out/kolkata
    """
    options = {k: v for k, v in locals().items() if k not in ("bbox", "overwrite")}
    from urbandp.sensing.interpolate_tool import run_interpolate
    from urbandp.sensing.options import InterpolateOptions, parse_box

    print(run_interpolate(InterpolateOptions(bbox=parse_box(bbox), **options)).summary())


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

    Example: urbandp sensing dp-map kolkata-pm25/Mobile_Spring.csv --bbox 22.45,88.30,22.65,88.47 --start 2023-04-25 --end 2023-04-27 --epsilon 1 --out out/dpmap
    """
    flags = dict(locals())
    from urbandp.sensing.dp_map_command import run

    run(**flags)


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

    Example: urbandp sensing pm-map kolkata-pm25/Mobile_Autumn.csv --bbox 22.45,88.30,22.65,88.47 --start 2023-09-15 --end 2023-10-31 --window-minutes 1440 --epsilon 4 --out out/pm
    """
    flags = dict(locals())
    from urbandp.sensing.pm_map_command import run

    run(**flags)


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
    allow_meaningless_epsilon: AllowMeaninglessEpsilon = False,
    overwrite: Overwrite = False,
) -> None:
    """Aggregate query with propagated error (Table III) and a DP squared error (section VII-D).

    Example: urbandp sensing query out/kolkata/grid.parquet --rect 22.50,88.32,22.56,88.37 --type max --rho 0.5 --sigma2-min 0 --sigma2-max 800
    """
    flags = dict(locals())
    from urbandp.sensing.query_command import run_query_command

    run_query_command(**flags)
