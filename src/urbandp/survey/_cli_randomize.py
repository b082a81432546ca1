"""``urbandp survey randomize`` and ``urbandp survey estimate``: thin callers of :func:`urbandp.survey.randomize`
and :func:`urbandp.survey.estimate` (report sections 3.3, 4.1; eqs. 5 and 6)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from urbandp._cli_options import Overwrite
from urbandp._cli_spec import command, keywords
from urbandp.survey._cli_common import Separator, SurveyArguments, app, release_arguments
from urbandp.survey._rr_release import RandomizeSpec


@command(
    app,
    release_arguments(
        RandomizeSpec,
        "CSV or Parquet file, one respondent answer per row.",
        "Output directory (randomized.csv + privacy.json).",
        "survey.randomize",
    ),
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
    """``urbandp survey estimate``: the randomized file, then the keywords of :func:`urbandp.survey.estimate`."""

    perturbed: Annotated[
        Path, typer.Argument(help="Randomized file (randomized.csv from 'survey randomize').")
    ]
    column: Annotated[str, typer.Option("--column", help="Randomized column.")]
    categories: Annotated[
        str | None,
        typer.Option(
            "--categories", help="Declared list: A,B,C (default: none; give this or --categories-file)."
        ),
    ] = None
    categories_file: Annotated[
        Path | None,
        typer.Option(
            "--categories-file", help="As for 'randomize' (default: none; give this or --categories)."
        ),
    ] = None
    within: Annotated[
        str | None, typer.Option("--within", help="Sub-category column used by 'randomize' (default: none).")
    ] = None
    epsilon: Annotated[
        float | None,
        typer.Option("--epsilon", help="Epsilon used by 'randomize' (default: none; give this or --theta)."),
    ] = None
    theta: Annotated[
        float | None,
        typer.Option(
            "--theta", help="Binary RR theta used by 'randomize' (default: none; give this or --epsilon)."
        ),
    ] = None
    separator: Separator = ","
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

    table = api.estimate(a.perturbed, **keywords(a, "perturbed"))
    with pl.Config(tbl_rows=200, float_precision=4):
        typer.echo(str(table))
