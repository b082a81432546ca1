"""Top-level fleet commands: ``urbandp release`` and ``urbandp explore`` (ITMS report sections II-IV)."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from urbandp._cli_options import AllowMeaninglessEpsilon, Overwrite
from urbandp._cli_spec import OptionsOf, typed_command
from urbandp._cli_support import cli_text
from urbandp.errors import InputError
from urbandp.fleet._options_flags import (
    CONTEXT_HELP,
    GTFS_HELP,
    TILES_HELP,
    RunOptions,
    release_options,
)
from urbandp.fleet._options_input import parse_columns

__all__ = ["check_dataset", "map_site", "release"]

_CONSOLE = Console(stderr=True)


def check_dataset(name: str | None) -> None:
    """Refuse ``--dataset ""`` before the budget store is opened (it would be created for nothing)."""
    if name is not None and not name.strip():
        raise InputError(
            "--dataset is empty: give the name of a dataset of the budget store, or leave it out"
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class RecordsArguments:
    """What ``urbandp fleet release`` and ``plan`` share: the records, the folder written, the config file and
    every option of a release (:func:`urbandp.fleet._options_flags.release_options`), as the command line gives
    them (text the library parses, :func:`urbandp.fleet._options_input.configure`)."""

    inputs: Annotated[
        list[Path], typer.Argument(help="Input files or directories (CSV, JSON, JSON Lines, Parquet).")
    ]
    out: Annotated[Path, typer.Option("--out", help="Output directory.")]
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="TOML config with [release], [input] and [columns] tables (default: none; flags only).",
        ),
    ] = None
    options: Annotated[dict[str, Any], OptionsOf(release_options())]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReleaseArguments(RecordsArguments):
    """``urbandp fleet release``: the records' and the release's options, then the run's."""

    run: Annotated[RunOptions, OptionsOf()]
    allow_meaningless_epsilon: AllowMeaninglessEpsilon = False
    overwrite: Overwrite = False


@typed_command(ReleaseArguments)
def release(a: ReleaseArguments) -> None:
    """Release DP average speeds and speeding counts per hexagon and time slot (HAT).

    Example: urbandp release fleet.parquet --out out/release --epsilon-per-day 10
    """
    from urbandp._progress import progress_bar
    from urbandp._session import Session
    from urbandp.fleet import _api as api
    from urbandp.fleet._cli_summary import print_summary
    from urbandp.fleet._guardrails import EXIT_USELESS, as_flags

    run = a.run
    check_dataset(run.dataset)
    if (run.gtfs is not None or run.context or run.tiles is not None) and run.no_map:
        raise InputError("--gtfs, --context and --tiles are for the map: they have no effect with --no-map")
    map_options: dict[str, Any] = {}
    if not run.no_map:  # checked before any record is read or noise drawn (--no-map: nothing read, 21 ms)
        from urbandp._reports.map import map_inputs

        map_options = map_inputs(run.tiles, run.gtfs, run.context)
    given = dict(a.options)
    column = given.pop("column")  # the API's ``columns`` mapping
    budget = Session(run.budget_store, run.dataset, allow_meaningless_epsilon=a.allow_meaningless_epsilon)
    # a spinner on stderr naming the running stage
    with progress_bar("starting") as advance, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # printed below as one-line urbandp: warnings
        # the library's release path: the guards, the charge before noise, the folder, the commit (fleet/_api.py)
        rel = api.release(
            a.inputs,
            config=a.config,
            columns=parse_columns(column, {}) if column else None,
            engine=run.engine,
            spark_master=run.spark_master,
            session=budget,
            out=a.out,
            overwrite=a.overwrite,
            with_map=not run.no_map,
            map_inputs=map_options,
            step=lambda name: advance(0, name),
            **given,
        )
    # only now (the charge is committed): some warnings hold noisy figures, and a failed run shows nothing of its noise
    # the library names parameters, the command line flags: an Advice's parameters, then the fleet's name=value
    for text in [*rel.owner_warnings, *rel.warnings]:
        _CONSOLE.print(
            f"[bold yellow]urbandp: warning:[/] {as_flags(cli_text(text))}", highlight=False, soft_wrap=True
        )
    print_summary(rel.privacy.to_dict(), rel.written, rel.owner["report"])
    if run.strict and rel.privacy.model_extra and rel.privacy.model_extra.get("useless_release"):
        raise typer.Exit(EXIT_USELESS)


def map_site(
    release_dir: Path = typer.Argument(..., help="A release folder (of 'release' or 'sensing pm-map')."),
    out: Path = typer.Option(..., "--out", help="The website folder to write (index.html, GeoJSON, ...)."),
    tiles: str | None = typer.Option(None, "--tiles", help=TILES_HELP),
    gtfs: Path | None = typer.Option(None, "--gtfs", help=GTFS_HELP),
    context: list[Path] | None = typer.Option(None, "--context", help=CONTEXT_HELP),
    no_png: bool = typer.Option(False, "--no-png", help="Skip the PNG per slot."),
    overwrite: Overwrite = False,
) -> None:
    """Export a release as a static website to upload as is (post-processing: no budget is spent).

    Writes index.html (the map, which opens offline), hat_speed.geojson, methodology.html (how the numbers were
    protected, in plain language, from privacy.json), the published files and png/ (a PNG per slot, for reports).

    Example: urbandp map out/rel --out site/ --gtfs gtfs.zip --context depots.geojson
    """
    from urbandp._reports.map import map_inputs
    from urbandp.fleet._map_page import write_site

    options = map_inputs(tiles, gtfs, context)  # the output policy (inputs protected) is set by cli_guard
    # a `sensing pm-map` release: the same page on its square grid
    if (release_dir / "pm_grid.csv").is_file():
        from urbandp.sensing._map_page import write_pm_site

        written, what = write_pm_site(release_dir, out, **options), "PM2.5 map of a sensing pm-map release"
    else:
        written = write_site(release_dir, out, pngs=not no_png, **options)
        what = f"methodology: {out / 'methodology.html'}"
    typer.echo(f"Website: {out / 'index.html'} ({len(written)} files; {what})")
