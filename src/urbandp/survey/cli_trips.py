"""``urbandp survey od-randomize`` and ``urbandp survey perturb-trajectories``: thin callers of
:func:`urbandp.survey.od_randomize` (report eq. 13, section 6.3) and :func:`urbandp.survey.perturb_trajectories`
(report section 6.1, eq. 16)."""

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


@app.command("od-randomize")
@cli_guard
def od_randomize(
    input: Path = typer.Argument(..., help="CSV or Parquet of trips, one origin-destination pair per row."),
    origin: str = typer.Option(..., "--from", help="Origin block column."),
    dest: str = typer.Option(..., "--to", help="Destination block column."),
    blocks_file: Path | None = typer.Option(
        None, "--blocks-file", help="Declared block ids, one per line (default: none; give this or --blocks)."
    ),
    blocks: int | None = typer.Option(
        None, "--blocks", help="Declared blocks are 1..N (default: none; give this or --blocks-file)."
    ),
    p: float | None = typer.Option(
        None,
        "--keep-probability",
        help="Report eq. 13 keep probability p (default: none; give this or --epsilon).",
    ),
    epsilon: float | None = typer.Option(
        None,
        "--epsilon",
        help="Target epsilon per trip instead of p (default: none; give this or --keep-probability).",
    ),
    method: str = typer.Option(
        "rr", "--method", help="'rr' (eq. 13, DP) | 'histogram' | 'histogram-joint' (sec. 6.3, NOT DP)."
    ),
    sampler: str = typer.Option("opendp", "--sampler", help=SAMPLER_HELP),
    separator: str = typer.Option(",", "--separator", help="CSV field separator."),
    budget_epsilon: float | None = typer.Option(
        None, "--budget-epsilon", help="Refuse to spend more than this (default: no cap)."
    ),
    out: Path = typer.Option(..., "--out", help="Output directory (trips.csv + privacy.json)."),
    config: Path | None = config_option("survey.od-randomize"),
    dataset: str | None = typer.Option(None, "--dataset", help=DATASET_HELP),
    budget_store: str | None = typer.Option(None, "--budget-store", help=STORE_HELP),
    survey_date: str | None = typer.Option(None, "--survey-date", help=SURVEY_DATE_HELP),
    id_column: IdColumn = None,
    keep_columns: KeepColumns = None,
    overwrite: Overwrite = False,
) -> None:
    """Randomize origin-destination trips over blocks (report eq. 13 and section 6.3).

    Example: urbandp survey od-randomize out/survey/trips.csv --from from_county --to to_county --blocks 19 --id trip --keep-probability 0.5 --out out/trips-rr

    A trip with a block outside the declared list is released as a uniform draw over all pairs (never dropped).
    """
    import urbandp.survey.api as api

    run_release(
        api.od_randomize,
        input,
        out,
        dataset,
        budget_store,
        origin=origin,
        dest=dest,
        blocks_file=blocks_file,
        blocks=blocks,
        keep_probability=p,
        epsilon=epsilon,
        method=method,
        sampler=sampler,
        separator=separator,
        budget_epsilon=budget_epsilon,
        survey_date=survey_date,
        id_column=id_column,
        keep_columns=keep_columns,
        overwrite=overwrite,
    )


@app.command("perturb-trajectories")
@cli_guard
def perturb_trajectories(
    input: Path = typer.Argument(..., help="CSV or Parquet of GPS points."),
    lat: str = typer.Option(..., "--lat", help="Latitude column."),
    lon: str = typer.Option(..., "--lon", help="Longitude column."),
    trip: str = typer.Option(..., "--trip", help="Trip (trajectory) id column."),
    order: str | None = typer.Option(
        None, "--order", help="Column giving the point order, e.g. time (default: file order)."
    ),
    epsilon: float = typer.Option(..., "--epsilon", help="SSD parameter epsilon (per step, report eq. 16)."),
    max_step_metres: float = typer.Option(..., "--max-step-metres", help="Declared maximum step M (metres)."),
    every: int = typer.Option(
        1, "--every", help="Keep every k-th point of each trip (fewer steps, less epsilon)."
    ),
    max_trips: int | None = typer.Option(
        None, "--max-trips", help="Process only the first K trips (default: all)."
    ),
    separator: str = typer.Option(",", "--separator", help="CSV field separator."),
    budget_epsilon: float | None = typer.Option(
        None, "--budget-epsilon", help="Refuse trips costing more (default: no cap)."
    ),
    out: Path = typer.Option(..., "--out", help="Output directory (trajectories.csv + privacy.json)."),
    config: Path | None = config_option("survey.perturb-trajectories"),
    dataset: str | None = typer.Option(None, "--dataset", help=DATASET_HELP),
    budget_store: str | None = typer.Option(None, "--budget-store", help=STORE_HELP),
    survey_date: str | None = typer.Option(None, "--survey-date", help=SURVEY_DATE_HELP),
    keep_columns: KeepColumns = None,
    overwrite: Overwrite = False,
) -> None:
    """SSD trajectory perturbation (report section 6.1, eq. 16); original-vs-perturbed PNG in owner_only/.

    Example: urbandp survey perturb-trajectories trips.csv --lat Y --lon X --trip trajectory_id --order t --epsilon 50 --out out/trajectories

    Released: --trip, --lat, --lon and --keep-columns. NOT DP (start and end points exact): refuses --dataset.
    """
    import urbandp.survey.api as api

    run_release(
        api.perturb_trajectories,
        input,
        out,
        dataset,
        budget_store,
        lat=lat,
        lon=lon,
        trip=trip,
        order=order,
        epsilon=epsilon,
        max_step_metres=max_step_metres,
        every=every,
        max_trips=max_trips,
        separator=separator,
        budget_epsilon=budget_epsilon,
        survey_date=survey_date,
        keep_columns=keep_columns,
        overwrite=overwrite,
    )
