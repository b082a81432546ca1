"""CLI group ``urbandp synth``: synthetic inputs for the demo, the tests and the benchmarks."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Annotated

import typer

from urbandp._cli_options import Overwrite
from urbandp._cli_spec import OptionsOf, command
from urbandp._cli_support import cli_guard
from urbandp._synth.fleet import FleetSpec
from urbandp.errors import InputError

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


def _first_day(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise InputError(f"--start must be a date like 2021-11-15, got {text!r}") from None


@dataclasses.dataclass(frozen=True, kw_only=True)
class FleetArguments:
    """``urbandp synth fleet``: the fleet's options (:class:`~urbandp._synth.fleet.FleetSpec`, ``--start`` as
    text), and where the records and the schedule are written."""

    spec: Annotated[FleetSpec, OptionsOf(leave_out=("speeder_fraction",), parse={"start": _first_day})]
    out: Annotated[Path, typer.Option("--out", help="Output file: .csv, .jsonl, .json or .parquet.")]
    gtfs_out: Annotated[
        Path | None,
        typer.Option(
            "--gtfs-out",
            help="Also write the fleet's public schedule as a GTFS folder (the expected service of the generator, "
            "one block per vehicle, from its parameters only), e.g. for release/plan --domain-gtfs. Default: none.",
        ),
    ] = None
    overwrite: Overwrite = False


@command(app, FleetArguments)
def fleet(a: FleetArguments) -> None:
    """Generate synthetic bus GPS records in the IUDX ITMS shape (Surat-like city, fixed routes).

    Example: urbandp synth fleet --vehicles 500 --days 30 --out out/fleet.parquet --seed 7 --gtfs-out out/gtfs
    """

    from urbandp._outputs import atomic_output_dir, check_output_file, check_output_path
    from urbandp._progress import progress_bar
    from urbandp._synth.fleet import fleet_format, write_fleet_days, write_fleet_gtfs

    out, gtfs_out = a.out, a.gtfs_out
    fleet_format(out)
    check_output_file(out)
    if gtfs_out is not None:
        check_output_path(gtfs_out, "--gtfs-out")
        records, schedule = out.resolve(), gtfs_out.resolve()
        if records == schedule or schedule in records.parents:
            raise InputError(
                f"--gtfs-out {gtfs_out} would hold or replace the --out file {out}; give two separate places"
            )
    spec = a.spec
    with progress_bar("generating days", spec.days) as bar:
        count = 0

        def advance(records: int) -> None:
            nonlocal count
            count += records
            bar(1, f"generating days: {count:,} records")

        try:
            path, written = write_fleet_days(spec, out, progress=advance)
        except OSError as err:
            raise InputError(f"cannot write {out}: {err.strerror or err}") from None
    typer.echo(f"wrote {written:,} records ({spec.vehicles} vehicles x {spec.days} days) to {path}")
    if gtfs_out is not None:
        with atomic_output_dir(gtfs_out, "--gtfs-out") as d:
            rows = write_fleet_gtfs(spec, d.release)
        typer.echo(
            f"wrote the public schedule (GTFS) to {gtfs_out}: {rows['trips.txt']:,} trips, "
            f"{rows['stops.txt']:,} stops, {rows['routes.txt']} routes"
        )


MAX_HOUSEHOLDS = 10_000_000
"""Largest synthetic survey (a national travel survey has well under a million households)."""


@app.command()
@cli_guard
def survey(
    households: int = typer.Option(2000, "--households", help="Number of households."),
    out: Path = typer.Option(..., "--out", help="Output directory for the survey CSV files."),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same files."),
    overwrite: Overwrite = False,
) -> None:
    """Generate a synthetic household travel survey (vehicles, homes, OD trips, trajectories).

    Example: urbandp synth survey --households 2000 --out out/survey
    """
    from urbandp._outputs import atomic_output_dir
    from urbandp.survey._synth import write_survey

    if not 1 <= households <= MAX_HOUSEHOLDS:
        raise InputError(f"--households must be between 1 and {MAX_HOUSEHOLDS:,}, got {households:,}")
    with atomic_output_dir(out) as d:
        counts = write_survey(d.release, households, seed)
    typer.echo(f"wrote synthetic survey to {out}: " + ", ".join(f"{v:,} {k}" for k, v in counts.items()))
