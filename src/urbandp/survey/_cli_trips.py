"""``urbandp survey od-randomize``, ``od-estimate`` and ``perturb-trajectories``: thin callers of
:func:`urbandp.survey.od_randomize` (report eq. 13, section 6.3), :func:`urbandp.survey.od_estimate` (its inverse)
and :func:`urbandp.survey.perturb_trajectories` (report section 6.1, eq. 16)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer

from urbandp._cli_options import Overwrite
from urbandp._cli_spec import OptionsOf, command
from urbandp.survey._cli_common import SurveyArguments, app, release_arguments
from urbandp.survey._od_release import ESTIMATE_OPTIONS, OdSpec
from urbandp.survey._trajectory_release import TrajectoriesSpec


@command(
    app,
    release_arguments(
        OdSpec,
        "CSV or Parquet of trips, one origin-destination pair per row.",
        "Output directory (trips.csv + privacy.json).",
        "survey.od-randomize",
    ),
    "od-randomize",
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
    options: Annotated[dict[str, Any], OptionsOf(OdSpec, only=ESTIMATE_OPTIONS)]
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


@command(
    app,
    release_arguments(
        TrajectoriesSpec,
        "CSV or Parquet of GPS points.",
        "Output directory (trajectories.csv + privacy.json).",
        "survey.perturb-trajectories",
    ),
    "perturb-trajectories",
)
def perturb_trajectories(a: SurveyArguments) -> None:
    """SSD trajectory perturbation (report section 6.1, eq. 16); original-vs-perturbed PNG in owner_only/.

    Example: urbandp survey perturb-trajectories trips.csv --lat Y --lon X --trip trajectory_id --order t --epsilon 50 --out out/trajectories

    Released: --trip, --lat, --lon and --keep-columns. NOT DP (start and end points exact): refuses --dataset.
    """
    import urbandp.survey._api as api

    a.run(api.perturb_trajectories)
