"""CLI group ``urbandp survey`` (docs/survey.md): randomized response, location and trajectory perturbation, OD
trips. A release command's flags are its spec's fields (:class:`urbandp._cli_spec.OptionsOf`); it calls its function
of :mod:`urbandp.survey._api` and prints (parse -> library -> print: the guards, the charge and the writing are the
library's). ``escape`` is no release: it simulates an attacker on points already perturbed and writes its own
report here.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from urbandp._cli_config import config_option
from urbandp._cli_options import Overwrite
from urbandp._cli_spec import OptionsOf, command
from urbandp._cli_support import cli_guard, cli_text, quietly
from urbandp._release_options import declared_options
from urbandp.errors import InputError
from urbandp.survey._od_release import ESTIMATE_OPTIONS as OD_ESTIMATE_OPTIONS
from urbandp.survey._od_release import OdSpec
from urbandp.survey._points_release import PointsSpec
from urbandp.survey._rr_release import ESTIMATE_OPTIONS, RandomizeSpec
from urbandp.survey._trajectory_release import TrajectoriesSpec

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)

DATASET_HELP = "Charge this dataset in the budget store, see urbandp budget; needs --survey-date (default: no store is charged)."
STORE_HELP = "Budget store path or postgresql:// URL (default $URBANDP_BUDGET_STORE)."
SURVEY_DATE_HELP = (
    "Day the answers were collected (YYYY-MM-DD): the store books this release's charge on it (a survey has no "
    "per-day structure; its dataset's --epsilon-total composes all its releases). Default: none; required with --dataset."
)

PUBLIC_OPTIONS = ("id_column", "keep_columns")
"""The spec options that name columns copied through (``--id``, ``--keep-columns``): listed after ``--out`` and
the store's options in ``--help``, as they always were."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class SurveyArguments:
    """A survey release command's arguments, in ``--help`` order: :func:`release_command` declares the input,
    the spec's options (those naming public columns in ``public``), ``--out`` and ``--config`` of each command."""

    input: Path
    options: dict[str, Any]
    out: Path
    config: Path | None = None  # read by its callback into the options' defaults
    dataset: Annotated[str | None, typer.Option("--dataset", help=DATASET_HELP)] = None
    budget_store: Annotated[str | None, typer.Option("--budget-store", help=STORE_HELP)] = None
    survey_date: Annotated[str | None, typer.Option("--survey-date", help=SURVEY_DATE_HELP)] = None
    public: dict[str, Any]
    overwrite: Overwrite = False

    def run(self, release: Callable[..., Any]) -> None:
        """Run ``release`` (a function of :mod:`urbandp.survey._api`) charged to ``dataset``; once its charge is
        committed, print its warnings as ``urbandp: warning:`` lines on stderr and its summary."""
        from urbandp._session import Session
        from urbandp.survey._io import command_line

        rel = quietly(
            release,
            self.input,
            session=Session(store=self.budget_store, dataset=self.dataset),
            out=self.out,
            command_line=command_line(),
            survey_date=self.survey_date,
            overwrite=self.overwrite,
            **self.options,
            **self.public,
        )
        for text in (*rel.warnings, *rel.owner_warnings):
            typer.echo(f"urbandp: warning: {cli_text(text)}", err=True)
        typer.echo(f"{rel.summary} -> {self.out}")


def release_command(
    name: str, spec: type, input_help: str, out_help: str
) -> Callable[[Callable[..., None]], Any]:
    """Register the release command ``urbandp survey NAME`` of ``spec``: its input, its options, ``--out`` and the
    ``[survey.NAME]`` table of a ``--config`` file, each with the command's help."""
    names = {o.name for o in declared_options(spec)}
    fields: list[Any] = [
        ("input", Annotated[Path, typer.Argument(help=input_help)]),
        ("options", Annotated[dict[str, Any], OptionsOf(spec, leave_out=PUBLIC_OPTIONS)]),
        ("out", Annotated[Path, typer.Option("--out", help=out_help)]),
        ("config", Annotated[Path | None, config_option(f"survey.{name}")], None),
        (
            "public",
            Annotated[dict[str, Any], OptionsOf(spec, only=[n for n in PUBLIC_OPTIONS if n in names])],
        ),
    ]
    arguments = dataclasses.make_dataclass(
        f"{spec.__name__}Arguments", fields, bases=(SurveyArguments,), frozen=True, kw_only=True
    )
    return command(app, arguments, name)


@release_command(
    "randomize",
    RandomizeSpec,
    "CSV or Parquet file, one respondent answer per row.",
    "Output directory (randomized.csv + privacy.json).",
)
def randomize(a: SurveyArguments) -> None:
    """Randomize one categorical column with randomized response (report sections 3.3, 4.1).

    Example: urbandp survey randomize vehicles.csv --column model --categories-file models.csv --within fuel
    --id household --epsilon 2 --out out/vehicles-rr

    Only --column, --within, --id and --keep-columns are released (the last three declared public).
    """
    import urbandp.survey._api as api

    a.run(api.randomize)


@dataclasses.dataclass(frozen=True, kw_only=True)
class EstimateArguments:
    """``urbandp survey estimate``: the randomized file, the options of ``randomize`` that de-biasing reads (as
    :func:`urbandp.survey.estimate` takes them), and the output."""

    perturbed: Annotated[
        Path, typer.Argument(help="Randomized file (randomized.csv from 'survey randomize').")
    ]
    options: Annotated[dict[str, Any], OptionsOf(RandomizeSpec, only=ESTIMATE_OPTIONS)]
    out: Annotated[Path, typer.Option("--out", help="Output CSV: category, estimate, ci_low, ci_high.")]
    overwrite: Overwrite = False


@command(app, EstimateArguments)
def estimate(a: EstimateArguments) -> None:
    """De-biased frequencies with 95 % CIs from randomized answers (report eq. 6; post-processing, no budget).

    Example: urbandp survey estimate out/vehicles-rr/randomized.csv --column model --categories-file models.csv --within fuel --epsilon 2 --out est.csv

    With --within the estimate is the share of all respondents (the sub-category share times the de-biased share
    inside it).
    """
    import polars as pl

    import urbandp.survey._api as api

    table = api.estimate(a.perturbed, out=a.out, overwrite=a.overwrite, **a.options)
    with pl.Config(tbl_rows=200, float_precision=4):
        typer.echo(str(table))


MAX_ESCAPE_RUNS = 10_000
"""Monte Carlo runs per point of ``survey escape``: 10,000 gives a standard error below 0.5% on a rate."""
MAX_ESCAPE_GRID = 10_000
"""Cells per side of the escape grid (10^8 cells)."""


@release_command(
    "perturb-points",
    PointsSpec,
    "CSV or Parquet, one location per row (e.g. home locations).",
    "Output directory (points.csv + privacy.json).",
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
    separator: str = typer.Option(",", "--separator", help="CSV field separator."),
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


@release_command(
    "od-randomize",
    OdSpec,
    "CSV or Parquet of trips, one origin-destination pair per row.",
    "Output directory (trips.csv + privacy.json).",
)
def od_randomize(a: SurveyArguments) -> None:
    """Randomize origin-destination trips over blocks (report eq. 13 and section 6.3).

    Example: urbandp survey od-randomize out/survey/trips.csv --from from_county --to to_county --blocks 19 --id trip --keep-probability 0.5 --out out/trips-rr

    A trip with a block outside the declared list is released as a uniform draw over all pairs (never dropped).
    With --person and --max-trips-per-person K each person keeps at most K trips and privacy.json states the loss
    per person (K x epsilon per trip); the release then charges a 'person' dataset.
    """
    import urbandp.survey._api as api

    a.run(api.od_randomize)


@dataclasses.dataclass(frozen=True, kw_only=True)
class OdEstimateArguments:
    """``urbandp survey od-estimate``: the released trips, the options of ``od-randomize`` that de-biasing reads (as
    :func:`urbandp.survey.od_estimate` takes them), and the output."""

    released: Annotated[Path, typer.Argument(help="Released trips (trips.csv from 'survey od-randomize').")]
    options: Annotated[dict[str, Any], OptionsOf(OdSpec, only=OD_ESTIMATE_OPTIONS)]
    out: Annotated[
        Path,
        typer.Option(
            "--out", help="Output CSV: from, to, released, estimate, sd, ci_low, ci_high (one row per pair)."
        ),
    ]
    overwrite: Overwrite = False


@command(app, OdEstimateArguments, "od-estimate")
def od_estimate(a: OdEstimateArguments) -> None:
    """De-biased OD counts with 95 % intervals from released trips (inverse of report eq. 13; post-processing).

    Example: urbandp survey od-estimate out/trips-rr/trips.csv --from from_county --to to_county --blocks 19 --keep-probability 0.5 --out od.csv

    The estimate is unbiased (left unclipped, so it can be negative); the interval is estimate +- 1.96 x the
    estimator's analytic standard deviation, clipped to [0, trips].
    """
    import polars as pl

    import urbandp.survey._api as api

    table = api.od_estimate(a.released, out=a.out, overwrite=a.overwrite, **a.options)
    top = table.sort("estimate", descending=True).head(10)
    with pl.Config(tbl_rows=20, float_precision=2):
        typer.echo(f"de-biased {table.height:,} pairs from {int(table['released'].sum()):,} trips -> {a.out}")
        typer.echo(str(top))


@release_command(
    "perturb-trajectories",
    TrajectoriesSpec,
    "CSV or Parquet of GPS points.",
    "Output directory (trajectories.csv + privacy.json).",
)
def perturb_trajectories(a: SurveyArguments) -> None:
    """SSD trajectory perturbation (report section 6.1, eq. 16); original-vs-perturbed PNG in owner_only/.

    Example: urbandp survey perturb-trajectories trips.csv --lat Y --lon X --trip trajectory_id --order t --epsilon 50 --out out/trajectories

    Released: --trip, --lat, --lon and --keep-columns. NOT DP (start and end points exact): refuses --dataset.
    """
    import urbandp.survey._api as api

    a.run(api.perturb_trajectories)
