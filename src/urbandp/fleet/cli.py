"""Top-level fleet commands: ``urbandp release`` and ``urbandp explore`` (ITMS report sections II-IV)."""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from urbandp.cli_options import AllowMeaninglessEpsilon, Overwrite
from urbandp.cli_support import cli_text
from urbandp.errors import InputError
from urbandp.fleet.options import RELEASE_OPTIONS
from urbandp.fleet.spec import (
    parse_columns,
)

_CONSOLE = Console(stderr=True)
DATASET_HELP = "Charge this dataset in the budget store, see urbandp budget (default: no store is charged)."
BUDGET_STORE_HELP = (
    "Budget store path or postgresql:// URL (default: $URBANDP_BUDGET_STORE, else ./urbandp-budget.sqlite)."
)

GTFS_HELP = (
    "GTFS feed (a folder or the gtfs.zip agencies ship): routes and stops drawn on the map (default: none)."
)
TILES_HELP = (
    "Basemap: an XYZ tile URL template such as https://tile.example.org/{z}/{x}/{y}.png, 'osm' (default: "
    "OpenStreetMap's standard tiles, with their attribution) or 'none'. Offline, the map shows the hexagons "
    "without tiles and says so."
)
CONTEXT_HELP = (
    "A GeoJSON file drawn as public context on the map (depots, districts, ...); repeatable (default: none)."
)


TIMESTAMP_FORMAT_HELP = (
    "Timestamp layout: auto (ISO 8601 or epoch seconds/milliseconds, per row), iso, epoch-s, epoch-ms or a "
    'strftime pattern such as "%d/%m/%Y %H:%M" (default: auto).'
)


def check_dataset(name: str | None) -> None:
    """Refuse ``--dataset ""`` before the budget store is opened (it would be created for nothing)."""
    if name is not None and not name.strip():
        raise InputError(
            "--dataset is empty: give the name of a dataset of the budget store, or leave it out"
        )


def quarantine_on_failure(out: Path, run: Any) -> Any:
    """Run ``run()``; when every record was quarantined, write quarantine.csv to owner_only/ and say where."""
    from urbandp.fleet.pipeline import NoValidRecords, write_owner_quarantine

    try:
        return run()
    except NoValidRecords as err:
        path = write_owner_quarantine(out, err.quarantine)
        raise InputError(
            f"{err}; the rows and their reasons are in {path}", parameters=err.parameters
        ) from None


def release(**a: Any) -> None:
    """Release DP average speeds and speeding counts per hexagon and time slot (HAT).

    Example: urbandp release fleet.parquet --out out/release --epsilon-per-day 10
    """
    from urbandp.fleet import api
    from urbandp.fleet.cli_summary import print_summary
    from urbandp.fleet.guardrails import EXIT_USELESS
    from urbandp.session import Session

    check_dataset(a["dataset"])
    if (a["gtfs"] is not None or a["context"] or a["tiles"] is not None) and a["no_map"]:
        raise InputError("--gtfs, --context and --tiles are for the map: they have no effect with --no-map")
    map_options: dict[str, Any] = {}
    if not a["no_map"]:  # checked before any record is read or noise drawn (--no-map: nothing read, 21 ms)
        from urbandp.reports.map import map_inputs

        map_options = map_inputs(a["tiles"], a["gtfs"], a["context"])
    given = {name: a[name] for name in api.OPTION_NAMES}
    budget = Session(
        a["budget_store"], a["dataset"], allow_meaningless_epsilon=a["allow_meaningless_epsilon"]
    )
    with _progress() as step, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # printed below as one-line urbandp: warnings
        # the library's release path: the guards, the charge before noise, the folder, the commit (fleet/api.py)
        rel = api.release(
            a["inputs"],
            config=a["config"],
            columns=dict(parse_columns(a["column"], {})) if a["column"] else None,
            engine=a["engine"],
            spark_master=a["spark_master"],
            session=budget,
            out=a["out"],
            overwrite=a["overwrite"],
            with_map=not a["no_map"],
            map_inputs=map_options,
            step=step,
            **given,
        )
    # only now (the charge is committed): some warnings hold noisy figures, and a failed run shows nothing of its noise
    from urbandp.fleet.guardrails import as_flags

    # the library names parameters, the command line flags: an Advice's parameters, then the fleet's name=value
    for text in [*rel.owner_warnings, *rel.warnings]:
        _CONSOLE.print(
            f"[bold yellow]urbandp: warning:[/] {as_flags(cli_text(text))}", highlight=False, soft_wrap=True
        )
    print_summary(rel.privacy.to_dict(), rel.written, rel.owner["report"])
    if a["strict"] and rel.privacy.model_extra and rel.privacy.model_extra.get("useless_release"):
        raise typer.Exit(EXIT_USELESS)


@contextlib.contextmanager
def _progress() -> Iterator[Callable[[str], None]]:
    """A spinner on stderr naming the running stage (:func:`urbandp.progress.progress_bar`); yields the function
    that names it."""
    from urbandp.progress import progress_bar

    with progress_bar("starting") as advance:
        yield lambda name: advance(0, name)


def _release_signature() -> None:
    """``release`` takes the inputs and ``--out``, every release option (declared once in
    :mod:`urbandp.fleet.options`) and the run's own options (map, budget, engine, output)."""
    run: dict[str, Any] = {
        "no_map": (bool, typer.Option(False, "--no-map", help="Skip map.html.")),
        "gtfs": (Path | None, typer.Option(None, "--gtfs", help=GTFS_HELP)),
        "tiles": (str | None, typer.Option(None, "--tiles", help=TILES_HELP)),
        "context": (list[Path] | None, typer.Option(None, "--context", help=CONTEXT_HELP)),
        "strict": (
            bool,
            typer.Option(
                False,
                "--strict",
                help="Exit 3 when the release is useless (nothing released or every interval > U/2).",
            ),
        ),
        "dataset": (str | None, typer.Option(None, "--dataset", help=DATASET_HELP)),
        "budget_store": (str | None, typer.Option(None, "--budget-store", help=BUDGET_STORE_HELP)),
        "engine": (
            str,
            typer.Option(
                "polars",
                "--engine",
                help="Record-level stage: polars (in-process) or spark, see docs/scale-out.md (default: polars).",
            ),
        ),
        "spark_master": (
            str | None,
            typer.Option(
                None,
                "--spark-master",
                help="With --engine spark: master URL, e.g. spark://host:7077 (default: local[*]).",
            ),
        ),
    }
    head = [
        inspect.Parameter(
            "inputs",
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=typer.Argument(..., help="Input files or directories (CSV, JSON, JSON Lines, Parquet)."),
            annotation=list[Path],
        ),
        inspect.Parameter(
            "out",
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(..., "--out", help="Output directory."),
            annotation=Path,
        ),
        inspect.Parameter(
            "config",
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(
                None,
                "--config",
                help="TOML config with [release], [input] and [columns] tables (default: none; flags only).",
            ),
            annotation=Path | None,
        ),
    ]
    params = [
        *head,
        *(option.parameter() for option in RELEASE_OPTIONS),
        *(
            inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=t)
            for n, (t, d) in run.items()
        ),
        inspect.Parameter(
            "allow_meaningless_epsilon",
            inspect.Parameter.KEYWORD_ONLY,
            default=False,
            annotation=AllowMeaninglessEpsilon,
        ),
        inspect.Parameter("overwrite", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Overwrite),
    ]
    release.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    release.__annotations__ = {p.name: p.annotation for p in params}


_release_signature()


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
    from urbandp.fleet.map_page import write_site
    from urbandp.reports.map import map_inputs

    options = map_inputs(tiles, gtfs, context)  # the output policy (inputs protected) is set by cli_guard
    if (
        release_dir / "pm_grid.csv"
    ).is_file():  # a `sensing pm-map` release: the same page on its square grid
        from urbandp.sensing.map_page import write_pm_site

        written, what = write_pm_site(release_dir, out, **options), "PM2.5 map of a sensing pm-map release"
    else:
        written = write_site(release_dir, out, pngs=not no_png, **options)
        what = f"methodology: {out / 'methodology.html'}"
    typer.echo(f"Website: {out / 'index.html'} ({len(written)} files; {what})")
