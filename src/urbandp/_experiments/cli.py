"""CLI group `urbandp experiment`: utility experiments (Monte Carlo, not releases)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from urbandp._cli_options import Overwrite
from urbandp._cli_support import cli_guard
from urbandp.errors import InputError

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)

MAX_RUNS = 1_000_000  # Monte Carlo runs per algorithm and epsilon: bounds the work (and memory) of one call


@app.command("mean")
@cli_guard
def mean(
    out: Annotated[Path, typer.Option("--out", help="Output folder (mae.csv, mae.png).")],
    input_file: Annotated[
        Path | None,
        typer.Option(
            "--input", help="One HAT's records, CSV or Parquet (default: none; give this or --synthetic)."
        ),
    ] = None,
    vehicle_col: Annotated[
        str, typer.Option("--vehicle-col", help="Column with the privacy unit (vehicle).")
    ] = "vehicle_id",
    value_col: Annotated[str, typer.Option("--value-col", help="Column with the values (speed).")] = "speed",
    synthetic: Annotated[
        str | None,
        typer.Option(
            "--synthetic",
            help="itms-like | sample-scaling | user-scaling (default: none; give this or --input).",
        ),
    ] = None,
    runs: Annotated[int, typer.Option("--runs", help="Monte Carlo runs per algorithm and epsilon.")] = 10000,
    epsilons: Annotated[str, typer.Option("--epsilons", help="Comma-separated epsilons.")] = "0.5,1,1.5,2",
    upper: Annotated[float, typer.Option("--upper", help="Upper clipping bound U of the values.")] = 65.0,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the synthetic data and of the simulation noise.")
    ] = 0,
    array_m_ub: Annotated[
        str | None,
        typer.Option(
            "--array-m-ub", help="m_UB rule of ARRAY-AVERAGING: median | eq1 (default: as the paper)."
        ),
    ] = None,
    overwrite: Overwrite = False,
) -> None:
    """MAE of BASELINE, ARRAY-AVERAGING, LEVY, FIXEDQUANTILE, EPS-DEPENDENTQUANTILE against epsilon.

    Plus ARRAY-AVERAGING with WRAPAROUND and CLIPPED-MEAN (counts private). A utility experiment with simulated
    (numpy) noise: nothing here is a private release.

    Example: urbandp experiment mean --synthetic sample-scaling --runs 10000 --out out/mean

    Example: urbandp experiment mean --input hat.csv --vehicle-col vehicle_id --value-col speed --out out/hat
    """

    import math

    from rich.console import Console

    from urbandp._experiments.mean_experiment import parse_epsilons
    from urbandp._experiments.synthetic_mean import SETTINGS
    from urbandp._outputs import atomic_output_dir, check_output_path
    from urbandp.estimators._bounds import M_UB_RULES

    console = Console()
    eps = parse_epsilons(epsilons)
    if not 1 <= runs <= MAX_RUNS:
        raise InputError(f"--runs must be between 1 and {MAX_RUNS}, got {runs}")
    if not (upper > 0 and math.isfinite(upper)):
        raise InputError(f"--upper must be a positive finite number, got {upper}")
    if seed < 0:
        raise InputError(f"--seed must be >= 0, got {seed}")
    check_output_path(out)
    if input_file is not None and synthetic is not None:
        raise InputError("give either --input or --synthetic, not both")
    if synthetic is not None and synthetic not in SETTINGS:
        raise InputError(f"--synthetic must be one of {', '.join(SETTINGS)}, got {synthetic!r}")
    if array_m_ub is not None and array_m_ub not in M_UB_RULES:
        raise InputError(f"--array-m-ub must be {' or '.join(M_UB_RULES)}, got {array_m_ub!r}")
    with atomic_output_dir(out) as d:
        _mean_into(
            d, out, input_file, vehicle_col, value_col, synthetic, runs, eps, upper, seed, array_m_ub, console
        )


def _mean_into(
    d, out, input_file, vehicle_col, value_col, synthetic, runs, eps, upper, seed, array_m_ub, console
):
    """Body of `experiment mean`, writing into the temporary directories ``d`` (renamed into ``out`` at the end)."""
    import time

    from rich.table import Table

    from urbandp._experiments.mean_experiment import load_hat, plot_mae, write_csv
    from urbandp._experiments.mean_simulation import all_algorithms, run_mae
    from urbandp._experiments.synthetic_mean import synthetic_dataset
    from urbandp._outputs import owner_dir_for
    from urbandp._progress import progress_bar

    if input_file is not None:
        hat = load_hat(input_file, vehicle_col, value_col, upper, d.owner_path("quarantine.csv"))
        values = hat.values
        source = f"{input_file.name}"
        console.print(
            f"read {hat.n_rows} rows: {hat.n_rows - hat.n_quarantined} used, {hat.n_quarantined} quarantined"
            + (
                f" (see {owner_dir_for(out) / 'quarantine.csv'}, raw rows: not DP)"
                if hat.n_quarantined
                else ""
            )
            + f", {hat.n_clipped} values clipped to {upper:g}; {len(values)} vehicles"
        )
        setting = "input"
    else:
        setting = synthetic or "itms-like"
        values = synthetic_dataset(setting, upper=upper, seed=seed)
        source = f"synthetic {setting}"
    rule = array_m_ub or ("eq1" if setting == "user-scaling" else "median")
    algorithms = all_algorithms(upper, array_m_ub=rule)
    try:
        algorithms[1].estimator.prepare(values)
    except ValueError as err:
        raise InputError(str(err)) from None
    started = time.perf_counter()
    with progress_bar("Monte Carlo", len(algorithms) * len(eps)) as advance:
        try:
            rows = run_mae(algorithms, values, eps, runs, seed, progress=advance)
        except ValueError as err:
            raise InputError(str(err)) from None
    elapsed = time.perf_counter() - started
    write_csv(rows, d.release / "mae.csv")
    n_units = len(values)
    n_samples = sum(v.size for v in values)
    plot_mae(
        rows,
        d.release / "mae.png",
        f"{source}: {n_units} units, {n_samples} samples, U={upper:g}, {runs} runs",
    )
    table = Table(title=f"MAE ({source}, {runs} runs, {elapsed:.1f} s)")
    table.add_column("algorithm")
    for e in eps:
        table.add_column(f"eps={e:g}", justify="right")
    for label in dict.fromkeys(r.algorithm for r in rows):
        table.add_row(label, *[f"{r.mae:.4f}" for r in rows if r.algorithm == label])
    console.print(table)
    console.print(f"wrote {out / 'mae.csv'} and {out / 'mae.png'}")


@app.command("busiest-hat")
@cli_guard
def busiest_hat(
    inputs: Annotated[
        list[Path], typer.Argument(help="AVL CSV files (vehicle_id, timestamp, speed, latitude, longitude).")
    ],
    out: Annotated[Path, typer.Option("--out", help="CSV of the busiest HAT's records.")],
    resolution: Annotated[int, typer.Option("--resolution", help="H3 resolution.")] = 7,
    hours: Annotated[
        str, typer.Option("--hours", help="Local hours kept, start-end (end exclusive).")
    ] = "9-21",
    overwrite: Overwrite = False,
) -> None:
    """Extract the records of the busiest HAT (H3 cell x 1-hour slot, most records) from AVL files.

    Example: urbandp experiment busiest-hat austin-avl/2015-03-*.csv --out hat.csv
    """
    from rich.console import Console

    from urbandp._experiments.busiest_hat import check_arguments, extract_busiest_hat
    from urbandp._grid.slots import parse_hours
    from urbandp._outputs import atomic_output_file
    from urbandp._records.readers import check_readable

    start, end = parse_hours(hours)
    for path in inputs:  # before any output is touched: a FIFO or a directory would block or crash the reader
        if path.exists():
            check_readable(path)
    check_arguments(inputs, resolution, (start, end))  # before --out's folder is made
    with atomic_output_file(out) as tmp:  # renamed onto --out at the end: a failing run leaves no partial CSV
        summary = extract_busiest_hat(inputs, tmp, resolution=resolution, hours=(start, end), final_out=out)
    Console().print(
        f"busiest HAT: cell {summary.h3_cell}, slot {summary.slot}: {summary.n_records} records from "
        f"{summary.n_vehicles} vehicles over {summary.n_days} day(s) (of {summary.n_candidate_records} records "
        f"in {summary.n_hats} HATs); wrote {out}"
    )
    top = ", ".join(f"{k} {v:,}" for k, v in summary.quarantine_reasons.items() if v) or "none"
    Console().print(
        f"records in {summary.records_in:,}: quarantined {summary.records_quarantined:,} ({top}), outside the "
        f"hours {summary.records_outside_hours:,}"
        + (f"; quarantine: {summary.quarantine_path}" if summary.quarantine_path else ""),
        highlight=False,
    )
