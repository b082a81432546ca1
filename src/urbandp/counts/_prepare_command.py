"""``urbandp counts prepare``: a count table of any layout -> ``counts.csv`` and ``domain.json`` for
``urbandp counts release --input-kind counts`` (mounted on the ``urbandp counts`` group; see
:mod:`urbandp.counts._prepare`)."""

from __future__ import annotations

from pathlib import Path

import typer

from urbandp._cli_options import Overwrite
from urbandp._cli_support import cli_guard, cli_text


@cli_guard
def prepare(
    input: Path = typer.Argument(..., help="A count table (CSV or Parquet) with its own column names."),
    out: Path = typer.Option(..., "--out", help="Output folder (counts.csv, domain.json)."),
    column: list[str] | None = typer.Option(
        None,
        "--column",
        help="Column mapping ROLE=NAME, repeatable, e.g. --column day=date --column location=loc; ROLE in "
        "mode,day,tap,bin,location,count (default: the columns have the role names).",
    ),
    taps_as_columns: str | None = typer.Option(
        None,
        "--taps-as-columns",
        help="A wide table whose taps are columns of counts, e.g. on,off: each becomes rows of that tap "
        "(default: a tap column).",
    ),
    bin_minutes: int | None = typer.Option(
        None,
        "--bin-minutes",
        help="Bin width of the domain (default: 1440 without a bin column, else the largest width that "
        "divides every bin found).",
    ),
    places: Path | None = typer.Option(
        None,
        "--places",
        help="A public list of places (CSV or Parquet with mode, location) for the domain (default: the "
        "places found in the input, with a warning).",
    ),
    overwrite: Overwrite = False,
) -> None:
    """Turn a count table of any layout into the long mode,day,tap,bin,location,count table and its domain.

    Days written 20160814 become ISO dates; a table without a bin column is daily (bin 00:00, bin_minutes
    1440); rows with a missing value or a bad count are dropped and counted. The outputs are the owner's raw
    counts (NOT differentially private) and the domain of a release.

    Example (Transport for NSW Opal 2016, mode,date,tap,loc,count):

        urbandp counts prepare location_20160808-14.csv --column day=date --column location=loc --out opal/
        && urbandp counts release opal/counts.csv --input-kind counts --domain opal/domain.json
        --unit card-day --max-events 4 --epsilon 1 --suppress-below 35 --out opal-rel/
    """
    from urbandp._outputs import atomic_output_dir, check_output_path, dumps_strict, write_json
    from urbandp.counts._prepare import prepare as prepare_table
    from urbandp.errors import InvalidParameterError

    if bin_minutes is not None and not (0 < bin_minutes <= 1440 and 1440 % bin_minutes == 0):
        raise InvalidParameterError(f"--bin-minutes must divide 1440, got {bin_minutes}")
    taps = [t.strip() for t in taps_as_columns.split(",")] if taps_as_columns else None
    if taps is not None and (not all(taps) or len(set(taps)) != len(taps)):
        raise InvalidParameterError(f"--taps-as-columns must name distinct columns, got {taps_as_columns!r}")
    check_output_path(out)
    prepared = prepare_table(
        input, column=column, taps_as_columns=taps, bin_minutes=bin_minutes, places=places
    )
    with atomic_output_dir(out) as d:
        prepared.table.write_csv(d.release / "counts.csv")
        write_json(d.release / "domain.json", prepared.domain.to_json())
    for text in prepared.warnings:
        typer.echo(f"urbandp: warning: {cli_text(text)}", err=True)
    summary = {"counts": str(out / "counts.csv"), "domain": str(out / "domain.json"), **prepared.summary()}
    typer.echo(dumps_strict(summary, indent=None))
