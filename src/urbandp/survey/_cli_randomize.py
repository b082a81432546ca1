"""``urbandp survey randomize`` and ``urbandp survey estimate``: thin callers of :func:`urbandp.survey.randomize`
and :func:`urbandp.survey.estimate` (report sections 3.3, 4.1; eqs. 5 and 6)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer

from urbandp._cli_options import Overwrite
from urbandp._cli_spec import OptionsOf, command
from urbandp.survey._cli_common import SurveyArguments, app, release_arguments
from urbandp.survey._rr_release import ESTIMATE_OPTIONS, RandomizeSpec


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
