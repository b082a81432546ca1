"""``urbandp explore``: the data owner's look at the TRUE data to choose parameters (ITMS report III A-C; not DP)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import typer

from urbandp._cli_options import Overwrite
from urbandp._cli_support import cli_text
from urbandp.errors import InputError
from urbandp.fleet._options import HatReleaseConfig, read_day, read_hours
from urbandp.fleet._options_flags import help_of
from urbandp.fleet._options_input import named_by, read_records, validation_options, with_file


def explore(
    inputs: list[Path] = typer.Argument(..., help="Input files or directories."),
    out: Path = typer.Option(Path("out/explore"), "--out", help="Output directory for the table and PNGs."),
    config: Path | None = typer.Option(
        None,
        "--config",
        help="TOML config: its input and columns tables (and start, end, hours) are used (default: none).",
    ),
    hours: str | None = typer.Option(None, help=help_of("hours")),
    start: str | None = typer.Option(None, help="First day YYYY-MM-DD (default: first day in data)."),
    end: str | None = typer.Option(None, help="Last day YYYY-MM-DD (default: last day in data)."),
    slot_minutes: int = typer.Option(60, help="Time-slot length in minutes."),
    min_vehicles_per_day: float = typer.Option(10.0, help="Threshold used for the share-of-cells column."),
    speed_unit: str | None = typer.Option(None, help=help_of("speed_unit")),
    speed_unit_since: list[str] | None = typer.Option(None, help=help_of("speed_unit_since")),
    timezone: str | None = typer.Option(
        None,
        help="Time zone of the hour slots (IANA, e.g. America/Chicago): timestamps with a known instant are "
        "converted to it; needed for a zone-aware timestamp column (default: wall-clock time as written).",
    ),
    speed_reject_above: float | None = typer.Option(None, help=help_of("speed_reject_above")),
    timestamp_format: str | None = typer.Option(None, help=help_of("timestamp_format")),
    column: list[str] | None = typer.Option(None, help=help_of("column")),
    overwrite: Overwrite = False,
) -> None:
    """Explore TRUE data to choose parameters (report III A-C). FOR THE DATA OWNER ONLY: not private.

    Reads records like `urbandp release` (same input options); rejected rows go to owner_only/<name>/quarantine.csv.

    Example: urbandp explore fleet.parquet --out out/explore --start 2016-11-24 --end 2016-11-27
    """
    from rich.console import Console

    from urbandp._grid.slots import SlotSpec
    from urbandp._outputs import OWNER_README, atomic_output_dir, check_output_path, owner_dir_for
    from urbandp.fleet import _pipeline
    from urbandp.fleet._explore import (
        OWNER_ONLY,
        check_min_vehicles_per_day,
        comparison_table,
        in_window,
        write_histograms,
    )
    from urbandp.fleet._explore import explore as run_explore

    check_output_path(out)
    check_min_vehicles_per_day(min_vehicles_per_day)
    given: dict[str, Any] = {
        "config": config,
        "hours": hours,
        "start": start,
        "end": end,
        "speed_unit": speed_unit,
        "speed_unit_since": speed_unit_since,
        "timezone": timezone,
        "speed_reject_above": speed_reject_above,
        "timestamp_format": timestamp_format,
        "column": column,
    }
    window_hours, first, last, options, columns = _read(given)
    slots = SlotSpec(slot_minutes, *window_hours)
    console = Console()
    err = Console(stderr=True)
    with console.status("reading, validating and aggregating at resolutions 6, 7, 8"):
        loaded = _pipeline.load_records(inputs, columns, options)
        with _pipeline.quarantine_on_failure(out):
            loaded.require_valid()
        clean, outside = in_window(loaded.clean, slots, first, last)
        if clean.height == 0:
            where = _pipeline.write_owner_quarantine(out, loaded.quarantine)
            raise InputError(
                f"none of the {outside:,} valid records lies inside the window {first or 'first day'}.."
                f"{last or 'last day'}, hours {window_hours[0]}-{window_hours[1]} ({loaded.quarantine.height:,} other "
                f"records quarantined: {_pipeline.top_reasons(loaded.reasons)}, in {where}); widen --start/--end or --hours"
            )
        result = run_explore(clean, slots=slots, min_vehicles_per_day=min_vehicles_per_day)
    # data-owner material (true data), as its README.txt says; written atomically, so a rerun leaves no stale file
    with atomic_output_dir(out) as d:
        (d.release / "README.txt").write_text(OWNER_README)
        result.table.write_csv(d.release / "resolution_comparison.csv")
        names = [p.name for p in write_histograms(result, d.release)]
        loaded.quarantine.write_csv(d.owner_path("quarantine.csv"))
    pngs = [out / name for name in names]
    for text in loaded.warnings:
        err.print(f"[bold yellow]urbandp: warning:[/] {cli_text(text)}", highlight=False, soft_wrap=True)
    console.print(f"[bold red]{OWNER_ONLY}[/]")
    console.print(
        f"records in {loaded.records_in:,}: used {clean.height:,}, quarantined {loaded.quarantine.height:,} "
        f"({_pipeline.top_reasons(loaded.reasons, 10)}), valid but outside the window {outside:,}",
        highlight=False,
    )
    console.print(comparison_table(result.table))
    console.print(f"wrote {out / 'resolution_comparison.csv'}, " + ", ".join(str(p) for p in pngs))
    console.print(f"quarantine: {owner_dir_for(out) / 'quarantine.csv'}")


def _read(
    given: dict[str, Any],
) -> tuple[tuple[int, ...], dt.date | None, dt.date | None, Any, dict[str, str]]:
    """The hour window, the first and last day, the validation options and the column mapping explore reads: the
    flags ``given``, else the config file's (an error about a value of the file names its key there)."""
    values, keys = with_file(given)
    with named_by(keys):
        first, last = read_day(values.get("start"), "start"), read_day(values.get("end"), "end")
        if first and last and first > last:
            raise InputError(f"--start {first} is after --end {last}")
        hours = values.get("hours")
        window_hours = HatReleaseConfig.model_fields["hours"].default if hours is None else read_hours(hours)
        return tuple(window_hours), first, last, validation_options(read_records(values)), values["column"]
