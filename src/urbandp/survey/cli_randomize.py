"""``urbandp survey randomize`` and ``urbandp survey estimate``: thin callers of :func:`urbandp.survey.randomize`
and :func:`urbandp.survey.estimate` (report sections 3.3, 4.1; eqs. 5 and 6)."""

from __future__ import annotations

from pathlib import Path

import typer

from urbandp.cli_config import config_option
from urbandp.cli_options import Overwrite
from urbandp.cli_support import cli_guard
from urbandp.survey.cli_common import (
    DATASET_HELP,
    SAMPLER_HELP,
    STORE_HELP,
    SURVEY_DATE_HELP,
    app,
    run_release,
)
from urbandp.survey.release import IdColumn, KeepColumns


@app.command()
@cli_guard
def randomize(
    input: Path = typer.Argument(..., help="CSV or Parquet file, one respondent answer per row."),
    column: str = typer.Option(..., "--column", help="Column to randomize."),
    categories: str | None = typer.Option(
        None, "--categories", help="Declared list: A,B,C (default: none; give this or --categories-file)."
    ),
    categories_file: Path | None = typer.Option(
        None,
        "--categories-file",
        help="One category per line, or 'group,category' lines with --within (default: none; give this or --categories).",
    ),
    within: str | None = typer.Option(
        None, "--within", help="Sub-category column such as fuel type, kept as is (default: none)."
    ),
    epsilon: float | None = typer.Option(
        None, "--epsilon", help="Epsilon per respondent for k-RR (default: none; give this or --theta)."
    ),
    theta: float | None = typer.Option(
        None,
        "--theta",
        help="Binary RR truth probability, 2 categories only (default: none; give this or --epsilon).",
    ),
    aliases: Path | None = typer.Option(
        None, "--aliases", help="Alias table: 'alias,canonical' lines (default: no aliases)."
    ),
    method: str = typer.Option(
        "krr",
        "--method",
        help="'krr' (default) or 'report-replacement' (report eqs. 8-12, NOT DP; needs --p).",
    ),
    p: float | None = typer.Option(
        None, "--p", help="Keep probability for --method report-replacement (default: none)."
    ),
    sampler: str = typer.Option("opendp", "--sampler", help=SAMPLER_HELP),
    separator: str = typer.Option(",", "--separator", help="CSV field separator."),
    budget_epsilon: float | None = typer.Option(
        None, "--budget-epsilon", help="Refuse to spend more than this (default: no cap)."
    ),
    out: Path = typer.Option(..., "--out", help="Output directory (randomized.csv + privacy.json)."),
    config: Path | None = config_option("survey.randomize"),
    dataset: str | None = typer.Option(None, "--dataset", help=DATASET_HELP),
    budget_store: str | None = typer.Option(None, "--budget-store", help=STORE_HELP),
    survey_date: str | None = typer.Option(None, "--survey-date", help=SURVEY_DATE_HELP),
    id_column: IdColumn = None,
    keep_columns: KeepColumns = None,
    overwrite: Overwrite = False,
) -> None:
    """Randomize one categorical column with randomized response (report sections 3.3, 4.1).

    Example: urbandp survey randomize vehicles.csv --column model --categories-file models.csv --within fuel
    --id household --epsilon 2 --out out/vehicles-rr

    Only --column, --within, --id and --keep-columns are released (the last three declared public).
    """
    import urbandp.survey.api as api

    run_release(
        api.randomize,
        input,
        out,
        dataset,
        budget_store,
        column=column,
        categories=categories,
        categories_file=categories_file,
        within=within,
        epsilon=epsilon,
        theta=theta,
        aliases=aliases,
        method=method,
        p=p,
        sampler=sampler,
        separator=separator,
        budget_epsilon=budget_epsilon,
        survey_date=survey_date,
        id_column=id_column,
        keep_columns=keep_columns,
        overwrite=overwrite,
    )


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

    import urbandp.survey.api as api

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
