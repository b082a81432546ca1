"""``urbandp survey perturb-points`` (a thin caller of :func:`urbandp.survey.perturb_points`, report section 5) and
``urbandp survey escape`` (a simulation on the true locations for the data owner; not a release)."""

from __future__ import annotations

import math
from pathlib import Path

import typer

from urbandp._cli_options import Overwrite
from urbandp._cli_spec import command
from urbandp._cli_support import cli_guard
from urbandp.errors import InputError
from urbandp.survey._cli_common import Separator, SurveyArguments, app, release_arguments
from urbandp.survey._points_release import PointsSpec

MAX_ESCAPE_RUNS = 10_000
"""Monte Carlo runs per point of ``survey escape``: 10,000 gives a standard error below 0.5% on a rate."""
MAX_ESCAPE_GRID = 10_000
"""Cells per side of the escape grid (10^8 cells)."""


@command(
    app,
    release_arguments(
        PointsSpec,
        "CSV or Parquet, one location per row (e.g. home locations).",
        "Output directory (points.csv + privacy.json).",
        "survey.perturb-points",
    ),
    "perturb-points",
)
def perturb_points(a: SurveyArguments) -> None:
    """Perturb point locations: planar Laplace (geo-indistinguishability) or per-axis Laplace (report sec. 5).

    Example: urbandp survey perturb-points out/survey/homes.csv --lat lat --lon lon --id household --epsilon-per-metre 0.005 --out out/homes

    With --bbox a location outside the box is clamped into it before noise (never dropped; this can lengthen a
    distance). Geo-indistinguishability (epsilon per metre), not DP: refuses --dataset.
    """
    import urbandp.survey._api as api

    a.run(api.perturb_points)


def _escape_grid(
    grid: str, bn: str, scale_degrees: str, runs: int
) -> tuple[list[int], list[float], list[float]]:
    """The parsed, bounded simulation grid (the work grows with --runs and --grid)."""
    try:
        grids = [int(g) for g in grid.split(",")]
        bns = [float(b) for b in bn.split(",")]
        scales = [float(s) for s in scale_degrees.split(",")]
    except ValueError:
        raise InputError("--grid, --bn and --scale-degrees take comma-separated numbers") from None
    if any(g < 1 for g in grids) or any(b <= 0 for b in bns) or runs < 1:
        raise InputError("--grid values must be >= 1, --bn values > 0, --runs >= 1")
    return grids, bns, scales


@app.command()
@cli_guard
def escape(
    input: Path = typer.Argument(..., help="CSV or Parquet of true point locations."),
    lat: str = typer.Option(..., "--lat", help="Latitude column."),
    lon: str = typer.Option(..., "--lon", help="Longitude column."),
    grid: str = typer.Option("10,25,50,100", "--grid", help="Grid sizes N (comma list) for N x N blocks."),
    bn: str = typer.Option(
        "0.01,0.03,0.1,0.3,1,3,10,30,100", "--bn", help="Lumped parameters b*N (Laplace scale / spacing)."
    ),
    polygons: Path | None = typer.Option(
        None, "--polygons", help="GeoJSON blocks, lon/lat polygons (default: none; uniform grid blocks)."
    ),
    scale_degrees: str = typer.Option(
        "0.001,0.003,0.01,0.03", "--scale-degrees", help="Scales for --polygons."
    ),
    runs: int = typer.Option(10, "--runs", help="Monte Carlo runs per point of the curve."),
    seed: int = typer.Option(0, "--seed", help="Simulation seed."),
    separator: Separator = ",",
    out: Path = typer.Option(..., "--out", help="Output directory (escape.csv + escape.png, owner only)."),
    overwrite: Overwrite = False,
) -> None:
    """Escape analysis (report section 5): share of points leaving their block vs b*N, uniform/Gaussian grids.

    Example: urbandp survey escape out/survey/homes.csv --lat lat --lon lon --grid 10,25,50 --out out/escape

    A simulation on the TRUE locations: the CSV and the plot go to owner_only/ (not DP).
    """
    import numpy as np
    import polars as pl

    import urbandp.survey._escape as esc
    from urbandp._outputs import atomic_output_dir, check_output_path
    from urbandp._privacy.report import write_privacy_json
    from urbandp._table_reader import read_table
    from urbandp.survey._io import command_line, float_column, require_columns
    from urbandp.survey._report import SurveyPrivacyReport

    grids, bns, scales = _escape_grid(grid, bn, scale_degrees, runs)
    check_output_path(out)
    if runs > MAX_ESCAPE_RUNS or max(grids) > MAX_ESCAPE_GRID or not all(map(math.isfinite, bns + scales)):
        raise InputError(
            f"--runs must be at most {MAX_ESCAPE_RUNS:,} and --grid at most {MAX_ESCAPE_GRID:,} per side (the "
            "work grows with both), and --bn/--scale-degrees finite"
        )
    frame = read_table(input, separator)
    require_columns(frame, input, lat, lon)
    la, lo = float_column(frame, lat), float_column(frame, lon)
    ok = np.isfinite(la) & np.isfinite(lo)
    x, y = esc.normalise(lo[ok], la[ok])
    results = esc.sweep(x, y, grids, bns, runs=runs, seed=seed)
    if polygons is not None:
        polys = esc.load_polygons(polygons)
        results += [esc.polygon_escape(lo[ok], la[ok], polys, s, runs, seed) for s in scales]
    table = pl.DataFrame([r.__dict__ for r in results]).with_columns(
        (pl.col("scale") * pl.col("n")).alias("bn")
    )
    privacy = SurveyPrivacyReport(
        command=command_line(),
        unit="respondent (one location per row); nothing here is protected",
        epsilon=None,
        epsilon_reason="simulation on true locations; nothing in this run is a DP release",
        not_dp_outputs=[f"owner_only/{out.name}/escape.csv", f"owner_only/{out.name}/escape.png"],
        not_dp_reasons=["escape shares are computed from the true locations with simulated (numpy) noise"],
        differentially_private=False,
    )
    with atomic_output_dir(out) as d:
        table.write_csv(d.owner_path("escape.csv"))
        esc.plot_collapse(results, d.owner_path("escape.png"))
        write_privacy_json(d.release, privacy.to_dict())
    with pl.Config(tbl_rows=60, float_precision=3):
        typer.echo(str(table))
