"""``urbandp survey randomize`` and ``urbandp survey estimate``: thin callers of :func:`urbandp.survey.randomize`
and :func:`urbandp.survey.estimate` (report sections 3.3, 4.1; eqs. 5 and 6)."""

from __future__ import annotations

from pathlib import Path

import typer

from urbandp._cli_options import Overwrite
from urbandp._cli_spec import typed_command
from urbandp._cli_support import cli_guard
from urbandp.survey._cli_common import SurveyArguments, app, release_arguments
from urbandp.survey._rr_release import RandomizeSpec


@app.command()
@cli_guard
@typed_command(
    release_arguments(
        RandomizeSpec,
        "CSV or Parquet file, one respondent answer per row.",
        "Output directory (randomized.csv + privacy.json).",
        "survey.randomize",
    )
)
def randomize(a: SurveyArguments) -> None:
    """Randomize one categorical column with randomized response (report sections 3.3, 4.1).

    Example: urbandp survey randomize vehicles.csv --column model --categories-file models.csv --within fuel
    --id household --epsilon 2 --out out/vehicles-rr

    Only --column, --within, --id and --keep-columns are released (the last three declared public).
    """
    import urbandp.survey._api as api

    a.run(api.randomize)


@app.command()
@cli_guard
def estimate(
    perturbed: Path = typer.Argument(..., help="Randomized file (randomized.csv from 'survey randomize')."),
    column: str = typer.Option(..., "--column", help="Randomized column."),
    categories: str | None = typer.Option(
        None, "--categories", help="Declared list: A,B,C (default: none; give this or --categories-file)."
    ),
    categories_file: Path | None = typer.Option(
        None, "--categories-file", help="As for 'randomize' (default: none; give this or --categories)."
    ),
    within: str | None = typer.Option(
        None, "--within", help="Sub-category column used by 'randomize' (default: none)."
    ),
    epsilon: float | None = typer.Option(
        None, "--epsilon", help="Epsilon used by 'randomize' (default: none; give this or --theta)."
    ),
    theta: float | None = typer.Option(
        None, "--theta", help="Binary RR theta used by 'randomize' (default: none; give this or --epsilon)."
    ),
    separator: str = typer.Option(",", "--separator", help="CSV field separator."),
    out: Path = typer.Option(..., "--out", help="Output CSV: category, estimate, ci_low, ci_high."),
    overwrite: Overwrite = False,
) -> None:
    """De-biased frequencies with 95 % CIs from randomized answers (report eq. 6; post-processing, no budget).

    Example: urbandp survey estimate out/vehicles-rr/randomized.csv --column model --categories-file models.csv --within fuel --epsilon 2 --out est.csv

    With --within the estimate is the share of all respondents (the sub-category share times the de-biased share
    inside it).
    """
    import polars as pl

    import urbandp.survey._api as api

    table = api.estimate(
        perturbed,
        column=column,
        categories=categories,
        categories_file=categories_file,
        within=within,
        epsilon=epsilon,
        theta=theta,
        separator=separator,
        out=out,
        overwrite=overwrite,
    )
    with pl.Config(tbl_rows=200, float_precision=4):
        typer.echo(str(table))
