"""Top-level fleet commands: ``urbandp release`` and ``urbandp explore`` (ITMS report sections II-IV)."""

from __future__ import annotations

import contextlib
import datetime as dt
import inspect
import math
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from urbandp.cli_options import AllowMeaninglessEpsilon, Overwrite
from urbandp.cli_support import cli_guard
from urbandp.errors import InputError
from urbandp.fleet.options import RELEASE_OPTIONS
from urbandp.fleet.spec import (
    configure,
    parse_columns,
    parse_date,
    read_toml,
    validation_options,
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


def _check_dataset(name: str | None) -> None:
    """Refuse ``--dataset ""`` before the budget store is opened (it would be created for nothing)."""
    if name is not None and not name.strip():
        raise InputError(
            "--dataset is empty: give the name of a dataset of the budget store, or leave it out"
        )


def _quarantine_on_failure(out: Path, run: Any) -> Any:
    """Run ``run()``; when every record was quarantined, write quarantine.csv to owner_only/ and say where."""
    from urbandp.fleet.pipeline import NoValidRecords, write_owner_quarantine

    try:
        return run()
    except NoValidRecords as err:
        path = write_owner_quarantine(out, err.quarantine)
        raise InputError(f"{err}; the rows and their reasons are in {path}") from None


def release(**a: Any) -> None:
    """Release DP average speeds and speeding counts per hexagon and time slot (HAT).

    Example: urbandp release fleet.parquet --out out/release --epsilon-per-day 10
    """
    from urbandp.fleet import api
    from urbandp.fleet.guardrails import EXIT_USELESS
    from urbandp.session import Session

    _check_dataset(a["dataset"])
    if (a["gtfs"] is not None or a["context"] or a["tiles"] is not None) and a["no_map"]:
        raise InputError("--gtfs, --context and --tiles are for the map: they have no effect with --no-map")
    map_inputs = _map_inputs(
        a["tiles"], a["gtfs"], a["context"]
    )  # checked before any record is read or noise drawn
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
            map_inputs=map_inputs,
            step=step,
            **given,
        )
    # only now (the charge is committed): some warnings hold noisy figures, and a failed run shows nothing of its noise
    for text in [*rel.owner_warnings, *rel.warnings]:
        _CONSOLE.print(f"[bold yellow]urbandp: warning:[/] {text}", highlight=False, soft_wrap=True)
    _print_summary(rel.privacy.to_dict(), rel.written, rel.owner["report"])
    if a["strict"] and rel.privacy.model_extra and rel.privacy.model_extra.get("useless_release"):
        raise typer.Exit(EXIT_USELESS)


@contextlib.contextmanager
def _progress() -> Iterator[Callable[[str], None]]:
    """A spinner on stderr naming the running stage; yields the function that names it."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=_CONSOLE, transient=True) as progress:
        task = progress.add_task("starting", total=None)
        yield lambda name: progress.update(task, description=name)


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


def _map_inputs(tiles: str | None, gtfs: Path | None, context: list[Path] | None) -> dict[str, Any]:
    """--tiles, --gtfs and --context, read and checked now (one-line errors, exit 2), as map options."""
    from urbandp.reports.map import gtfs_overlay, parse_tiles, read_context

    if gtfs is not None:
        gtfs_overlay(gtfs)
    for path in context or []:
        read_context(path)
    return {"tiles": parse_tiles(tiles), "gtfs": gtfs, "context": list(context or [])}


def _print_summary(p: dict[str, Any], paths: dict[str, Path], owner: dict[str, Any]) -> None:
    """The run's summary on the owner's terminal: the exact record counts (owner material, marked so) and the
    published figures."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title="urbandp release", show_header=False)
    eps = p["epsilon_per_day"]
    scales = p["noise_scale"]

    def num(value: Any) -> str:
        return "none" if value is None or value == float("inf") else f"{value:.6g}"

    rows = [
        (
            "privacy",
            p["dp_label"] + ("" if p["differentially_private"] else ": " + "; ".join(p["not_dp_reasons"])),
        ),
        ("neighbouring / unit / noise", f"{p['neighbouring']} / {p['privacy_unit']} / {p['mechanism']}"),
        (
            "records in / quarantined (owner only, exact)",
            f"{owner['records_in']:,} / {owner['records_quarantined']:,}",
        ),
        (
            "records used / outside (owner only, exact)",
            f"{owner['records_used']:,} / {owner['records_outside_window']:,} outside the window, "
            f"{owner['records_outside_domain']:,} outside --domain-bbox",
        ),
        (
            "quarantine reasons (owner only)",
            ", ".join(f"{k}={v}" for k, v in owner["quarantine_reasons"].items() if v) or "none",
        ),
        (
            "HATs released",
            f"{p['hats_released']:,} (selection: {p['selection']['method']}, threshold "
            f"{num(p['selection']['threshold_vehicle_days'])} vehicle-days)",
        ),
        (
            f"noise scale ({p['noise_scale_kind']})",
            f"speed {num(scales['speed'])}"
            + (f", speeding {num(scales['speeding'])}" if "speeding" in p["queries"] else "")
            + ("" if p["hats_released"] else " (no HAT passed: no query noise drawn)"),
        ),
        (
            "K (max HATs per vehicle-day)",
            f"{p['max_hats_per_vehicle_day']} ({p['max_hats_per_vehicle_day_source']})",
        ),
        (
            "epsilon per day",
            f"speed {num(eps['speed'])}"
            + (f", speeding {num(eps['speeding'])}" if "speeding" in p["queries"] else "")
            + f", count/selection {num(eps['selection'])}",
        ),
        (
            "cumulative epsilon per day",
            f"{num(p['cumulative_epsilon_per_day'])} (delta {p['delta_per_day']:.3g})",
        ),
        (
            "epsilon per window",
            f"{num(p['epsilon_per_window'])} (delta {p['delta_per_window']:.3g}) over {p['days']} days",
        ),
    ]
    if "coarsen" in p:  # --coarsen: HATs per level
        levels = ", ".join(f"{lv['level']} {lv['hats_released']}" for lv in p["coarsen"]["levels"])
        rows.append(("HATs per level", f"{levels} (rule {p['coarsen']['rule']})"))
    if "clip_bound" in p:  # --clip-bound dp-quantile
        rows.append(
            ("speed clip bound (DP)", f"{num(p['clip_bound']['bound'])} km/h (U = {num(p['speed_max'])})")
        )
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    for name, path in paths.items():
        console.print(f"  {name:10s} {path}")


def explore(
    inputs: list[Path] = typer.Argument(..., help="Input files or directories."),
    out: Path = typer.Option(Path("out/explore"), "--out", help="Output directory for the table and PNGs."),
    config: Path | None = typer.Option(
        None,
        "--config",
        help="TOML config: its input and columns tables (and start, end, hours) are used (default: none).",
    ),
    hours: str | None = typer.Option(None, help="Daily hour window START-END (default: 9-21)."),
    start: str | None = typer.Option(None, help="First day YYYY-MM-DD (default: first day in data)."),
    end: str | None = typer.Option(None, help="Last day YYYY-MM-DD (default: last day in data)."),
    slot_minutes: int = typer.Option(60, help="Time-slot length in minutes."),
    min_vehicles_per_day: float = typer.Option(10.0, help="Threshold used for the share-of-cells column."),
    speed_unit: str | None = typer.Option(None, help="Speed unit of the input: km/h (default), mph or m/s."),
    speed_unit_since: list[str] | None = typer.Option(
        None, help="Unit switch on a date, e.g. 2016-01-01=m/s, repeatable (default: one unit throughout)."
    ),
    timezone: str | None = typer.Option(
        None, help="Convert timestamps to this zone (default: wall-clock time as written)."
    ),
    speed_reject_above: float | None = typer.Option(
        None, help="Quarantine speeds above this many km/h (default: 150)."
    ),
    timestamp_format: str | None = typer.Option(None, help=TIMESTAMP_FORMAT_HELP),
    column: list[str] | None = typer.Option(
        None, help="Column mapping NAME=SOURCE, repeatable (default: the ITMS names)."
    ),
    overwrite: Overwrite = False,
) -> None:
    """Explore TRUE data to choose parameters (report III A-C). FOR THE DATA OWNER ONLY: not private.

    Reads records like `urbandp release` (same input options); rejected rows go to owner_only/<name>/quarantine.csv.

    Example: urbandp explore fleet.parquet --out out/explore --start 2016-11-24 --end 2016-11-27
    """
    from rich.console import Console

    from urbandp.fleet.explore import (
        OWNER_ONLY,
        check_min_vehicles_per_day,
        comparison_table,
        in_window,
        write_histograms,
    )
    from urbandp.fleet.explore import explore as run_explore
    from urbandp.fleet.pipeline import load_records, top_reasons, write_owner_quarantine
    from urbandp.grid.slots import SlotSpec, parse_hours
    from urbandp.outputs import check_output_path

    check_output_path(out)
    check_min_vehicles_per_day(min_vehicles_per_day)
    toml = read_toml(config)
    section = toml.get("release", {}) if isinstance(toml.get("release"), dict) else toml
    hours_text = hours if hours is not None else section.get("hours")
    window_hours = parse_hours(hours_text) if isinstance(hours_text, str) else tuple(hours_text or (9, 21))
    first = parse_date(start, "--start") or parse_date(_toml_date(section.get("start")), "start")
    last = parse_date(end, "--end") or parse_date(_toml_date(section.get("end")), "end")
    if first and last and first > last:
        raise InputError(f"--start {first} is after --end {last}")
    options = validation_options(
        toml, speed_unit, speed_unit_since, timezone, speed_reject_above, timestamp_format
    )
    slots = SlotSpec(slot_minutes, *window_hours)
    console = Console()
    err = Console(stderr=True)
    with console.status("reading, validating and aggregating at resolutions 6, 7, 8"):
        loaded = load_records(inputs, parse_columns(column, toml), options)
        _quarantine_on_failure(out, loaded.require_valid)
        clean, outside = in_window(loaded.clean, slots, first, last)
        if clean.height == 0:
            where = write_owner_quarantine(out, loaded.quarantine)
            raise InputError(
                f"none of the {outside:,} valid records lies inside the window {first or 'first day'}.."
                f"{last or 'last day'}, hours {window_hours[0]}-{window_hours[1]} ({loaded.quarantine.height:,} other "
                f"records quarantined: {top_reasons(loaded.reasons)}, in {where}); widen --start/--end or --hours"
            )
        result = run_explore(clean, slots=slots, min_vehicles_per_day=min_vehicles_per_day)
    from urbandp.outputs import OWNER_README, atomic_output_dir, owner_dir_for

    # The whole exploration is data-owner material (true data): the directory says so in its README.txt. It is
    # written atomically like every output, so a rerun never leaves stale files.
    with atomic_output_dir(out) as d:
        (d.release / "README.txt").write_text(OWNER_README)
        result.table.write_csv(d.release / "resolution_comparison.csv")
        names = [p.name for p in write_histograms(result, d.release)]
        loaded.quarantine.write_csv(d.owner_path("quarantine.csv"))
    pngs = [out / name for name in names]
    for text in loaded.warnings:
        err.print(f"[bold yellow]urbandp: warning:[/] {text}", highlight=False, soft_wrap=True)
    console.print(f"[bold red]{OWNER_ONLY}[/]")
    console.print(
        f"records in {loaded.records_in:,}: used {clean.height:,}, quarantined {loaded.quarantine.height:,} "
        f"({top_reasons(loaded.reasons, 10)}), valid but outside the window {outside:,}",
        highlight=False,
    )
    console.print(comparison_table(result.table))
    console.print(f"wrote {out / 'resolution_comparison.csv'}, " + ", ".join(str(p) for p in pngs))
    console.print(f"quarantine: {owner_dir_for(out) / 'quarantine.csv'}")


def _toml_date(value: Any) -> str | None:
    return None if value is None else str(value)


def plan(**a: Any) -> None:
    """Plan a release before spending budget: expected noise per HAT, selection, what reaches a target error.

    Takes the options of `urbandp release`. Spends nothing and reads only public parameters unless
    --histogram-epsilon is given (then a DP histogram of vehicle-days per HAT, charged and reported).

    Example: urbandp plan fleet.parquet --out out/plan --epsilon-per-day 10 --start 2021-11-15 --end 2021-12-15
    --domain-bbox 21.09,72.75,21.25,72.91 --target-error 2
    """

    from rich.console import Console

    from urbandp.fleet.pipeline import public_window, window_days
    from urbandp.fleet.planner import cfg_k, check_target_error, dp_histogram, make_plan, per_hat_counts
    from urbandp.outputs import atomic_output_dir, dumps_strict, write_json
    from urbandp.privacy.loss import Loss
    from urbandp.privacy.session import Session
    from urbandp.records.readers import expand_inputs

    cfg, options, columns = configure(a)
    check_target_error(a["target_error"])
    first, last, day_set = public_window(cfg)
    if first is None or last is None:
        raise InputError(
            "plan needs the public window: give --start and --end, or --dates (D sets the noise)"
        )
    expand_inputs(a["inputs"])  # read only with --histogram-epsilon, but a wrong path is said now
    public_days = window_days(first, last, day_set)
    days = len(public_days)
    histogram = None
    spent = 0.0
    # The plan itself reads only public parameters and never charges; only its optional DP histogram of the true
    # data spends budget, so only that is charged (with --dataset), reserved before its noise.
    _check_dataset(a["dataset"])
    charged = a["dataset"] if a["histogram_epsilon"] is not None else None
    with Session(charged, a["budget_store"], unit="vehicle-day", out=a["out"]) as session:
        if a["histogram_epsilon"] is not None:
            eps_h = float(a["histogram_epsilon"])
            if not (math.isfinite(eps_h) and eps_h > 0):
                raise InputError("--histogram-epsilon must be a finite number above 0")
            from urbandp.contributions import ContributionSpec, get_backend
            from urbandp.fleet.pipeline import load_records
            from urbandp.grid.slots import SlotSpec

            spec = ContributionSpec(
                cfg.resolution,
                SlotSpec(cfg.slot_minutes, *cfg.hours),
                first,
                last,
                cfg.speed_max,
                days=day_set,
            )
            loaded = load_records(a["inputs"], columns, options, window=spec)
            _quarantine_on_failure(a["out"], loaded.require_valid)
            contributions = get_backend("polars").contributions(loaded.clean_lazy, spec)
            k = cfg_k(cfg)
            session.reserve(
                Loss.pure(eps_h),
                list(public_days),
                "fleet-plan-histogram-laplace",
                {"epsilon": eps_h, "k": k},
            )
            histogram, spent = dp_histogram(
                per_hat_counts(contributions, k, cfg.slot_minutes), k, eps_h, session.noise
            )
        result = make_plan(
            cfg, days, target_error=a["target_error"], histogram=histogram, histogram_epsilon=spent
        )
        result["command_line"] = " ".join(["urbandp", *sys.argv[1:]])
        result["generated"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        with atomic_output_dir(a["out"]) as d:
            write_json(d.release / "plan.json", result)
        session.set_output(a["out"])
        # plain stdout, never Rich: Rich wraps long lines at 80 columns when piped, which broke the JSON
        session.later(lambda: print(dumps_strict(result), flush=True))
        session.later(lambda: Console(stderr=True).print(f"wrote {a['out'] / 'plan.json'}"))


def _plan_signature() -> None:
    """``plan`` takes release's options (minus the output-only ones) plus its own."""
    import inspect

    # the output-only options, and the engine: the planner reads no record (its histogram runs in-process), so
    # --engine/--spark-master would be silently ignored
    skip = {"no_map", "gtfs", "tiles", "context", "strict", "engine", "spark_master"}
    params = [p for p in inspect.signature(release).parameters.values() if p.name not in skip]
    extra = {
        "target_error": typer.Option(
            None,
            "--target-error",
            help="Target sd of a released mean in km/h (default: none; no search for settings).",
        ),
        "histogram_epsilon": typer.Option(
            None,
            "--histogram-epsilon",
            help="Spend this epsilon on a DP histogram of vehicle-days per HAT (default: off, spends nothing).",
        ),
    }
    for name, default in extra.items():
        params.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=float | None)
        )
    plan.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    plan.__annotations__ = {p.name: p.annotation for p in params}


_plan_signature()


def map_site(
    release_dir: Path = typer.Argument(..., help="The --out folder of 'urbandp release'."),
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

    options = _map_inputs(tiles, gtfs, context)  # the output policy (inputs protected) is set by cli_guard
    written = write_site(release_dir, out, pngs=not no_png, **options)
    typer.echo(
        f"Website: {out / 'index.html'} ({len(written)} files; methodology: {out / 'methodology.html'})"
    )


def register(app: typer.Typer) -> None:
    """Add the fleet commands to the main app."""
    app.command("release")(cli_guard(release))
    app.command("map")(cli_guard(map_site))
    app.command("plan")(cli_guard(plan))
    app.command("explore")(cli_guard(explore))
