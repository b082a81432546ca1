"""Top-level fleet commands: ``urbandp release`` and ``urbandp explore`` (ITMS report sections II-IV)."""

from __future__ import annotations

import datetime as dt
import tomllib
from pathlib import Path
from typing import Any

import typer

from urbandp.errors import InputError, cli_guard


def _parse_columns(items: list[str] | None, config: dict[str, Any]) -> dict[str, str]:
    columns = {str(k): str(v) for k, v in config.get("columns", {}).items()}
    for item in items or []:
        if "=" not in item:
            raise InputError(f"--column must look like NAME=SOURCE (e.g. vehicle=bus_id), got '{item}'")
        name, source = item.split("=", 1)
        columns[name.strip()] = source.strip()
    return columns


def _parse_unit_switches(items: list[str] | None, config: dict[str, Any]) -> tuple[tuple[dt.date, str], ...]:
    raw = [f"{k}={v}" for k, v in config.get("speed_unit_since", {}).items()] + list(items or [])
    out = []
    for item in raw:
        try:
            day, unit = item.split("=", 1)
            out.append((dt.date.fromisoformat(day.strip()), unit.strip()))
        except ValueError:
            raise InputError(f"--speed-unit-since must look like 2016-01-01=m/s, got '{item}'") from None
    return tuple(out)


def _read_toml(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    if not path.is_file():
        raise InputError(f"config file not found: {path}")
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"bad config {path}: {err}") from None


def _validation_options(
    config: dict[str, Any],
    speed_unit: str | None,
    unit_since: list[str] | None,
    timezone: str | None,
    reject_above: float | None,
):
    from urbandp.records.validation import ValidationOptions

    section = config.get("input", {})
    return ValidationOptions(
        speed_unit=speed_unit or section.get("speed_unit", "km/h"),
        speed_unit_since=_parse_unit_switches(unit_since, section),
        timezone=timezone or section.get("timezone"),
        speed_reject_above_kmh=reject_above or float(section.get("speed_reject_above", 150.0)),
    )


def _date(text: str | None, flag: str) -> dt.date | None:
    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise InputError(f"{flag} must be a date YYYY-MM-DD, got '{text}'") from None


def _bbox(text: str | None) -> tuple[float, float, float, float] | None:
    if text is None:
        return None
    try:
        a, b, c, d = (float(x) for x in text.split(","))
    except ValueError:
        raise InputError(f"--domain-bbox must be min_lat,min_lon,max_lat,max_lon, got '{text}'") from None
    if not (a < c and b < d):
        raise InputError("--domain-bbox needs min_lat < max_lat and min_lon < max_lon")
    return a, b, c, d


def release(
    inputs: list[Path] = typer.Argument(
        ..., help="Input files or directories (CSV, JSON, JSON Lines, Parquet)."
    ),
    out: Path = typer.Option(..., "--out", help="Output directory."),
    config: Path | None = typer.Option(None, "--config", help="TOML config ([release], [input], [columns])."),
    resolution: int | None = typer.Option(None, help="H3 resolution [default: 7]."),
    slot_minutes: int | None = typer.Option(None, help="Time-slot length in minutes [default: 60]."),
    hours: str | None = typer.Option(None, help="Daily hour window START-END [default: 9-21]."),
    start: str | None = typer.Option(
        None, help="First day YYYY-MM-DD (public window; default: first day in data)."
    ),
    end: str | None = typer.Option(
        None, help="Last day YYYY-MM-DD (public window; default: last day in data)."
    ),
    speed_max: float | None = typer.Option(
        None, help="U: speeds clipped to [0, U] km/h for Query 1 [default: 65]."
    ),
    speed_limit: float | None = typer.Option(None, help="Query 2 threshold in km/h [default: 35]."),
    noise_scale: float | None = typer.Option(
        None, help="Laplace scale B for both queries (or --epsilon-per-day)."
    ),
    epsilon_per_day: float | None = typer.Option(
        None, help="Cumulative epsilon per vehicle-day; B is derived."
    ),
    budget_per_day: float | None = typer.Option(
        None, help="Refuse the release if epsilon per day would exceed this."
    ),
    selection: str | None = typer.Option(
        None, help="HAT selection: dp (default) or public-threshold (not DP)."
    ),
    domain_bbox: str | None = typer.Option(
        None, help="Public extent min_lat,min_lon,max_lat,max_lon: pure-DP selection."
    ),
    selection_epsilon: float | None = typer.Option(
        None, help="Epsilon per day for DP selection when B is given [1.0]."
    ),
    delta: float | None = typer.Option(None, help="Target delta per vehicle-day of DP selection [1e-6]."),
    min_vehicles_per_day: float | None = typer.Option(None, help="Threshold: vehicles per day per HAT [10]."),
    max_hats_per_vehicle_day: str | None = typer.Option(
        None, help="K, public bound enforced by truncation [96], or 'observed' (report, not DP)."
    ),
    speed_share: float | None = typer.Option(
        None,
        help="Share of the query budget for Query 1 (default: report's shared B under replace-one, 0.5 under add-remove).",
    ),
    neighbouring: str | None = typer.Option(
        None, help="add-remove (default; N protected) or replace-one (report; N public)."
    ),
    speed_estimator: str | None = typer.Option(
        None, help="Query 1 estimator: report (default), baseline, array-averaging, levy, quantile."
    ),
    precision: int | None = typer.Option(None, help="Decimal places of released values [2]."),
    speed_unit: str | None = typer.Option(None, help="Speed unit of the input: km/h (default), mph or m/s."),
    speed_unit_since: list[str] | None = typer.Option(
        None, help="Unit switch on a date, e.g. 2016-01-01=m/s (repeatable)."
    ),
    timezone: str | None = typer.Option(
        None, help="Convert timestamps to this zone (default: wall-clock time as written)."
    ),
    speed_reject_above: float | None = typer.Option(
        None, help="Quarantine speeds above this many km/h [150]."
    ),
    column: list[str] | None = typer.Option(
        None,
        help="Column mapping NAME=SOURCE, NAME in vehicle,timestamp,latitude,longitude,speed,coordinates.",
    ),
    no_map: bool = typer.Option(False, "--no-map", help="Skip map.html."),
    dataset: str | None = typer.Option(
        None, help="Charge this dataset in the budget store (urbandp budget)."
    ),
    budget_store: str | None = typer.Option(None, help="Budget store path or postgresql:// URL."),
) -> None:
    """Release DP average speeds and speeding counts per hexagon and time slot (HAT).

    Example: urbandp release fleet.parquet --out out/release --epsilon-per-day 10
    """
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from urbandp.fleet.config import build_config
    from urbandp.fleet.pipeline import release_fleet, write_release
    from urbandp.grid.slots import parse_hours
    from urbandp.privacy.budget_store import release_budget

    toml = _read_toml(config)
    k: int | str | None = max_hats_per_vehicle_day
    if k is not None and k != "observed":
        try:
            k = int(k)
        except ValueError:
            raise InputError("--max-hats-per-vehicle-day must be a whole number or 'observed'") from None
    overrides = {
        "resolution": resolution,
        "slot_minutes": slot_minutes,
        "hours": parse_hours(hours) if hours else None,
        "start": _date(start, "--start"),
        "end": _date(end, "--end"),
        "speed_max": speed_max,
        "speed_limit": speed_limit,
        "noise_scale": noise_scale,
        "epsilon_per_day": epsilon_per_day,
        "budget_per_day": budget_per_day,
        "selection": selection,
        "domain_bbox": _bbox(domain_bbox),
        "selection_epsilon": selection_epsilon,
        "delta": delta,
        "min_vehicles_per_day": min_vehicles_per_day,
        "max_hats_per_vehicle_day": k,
        "neighbouring": neighbouring,
        "speed_share": speed_share,
        "speed_estimator": speed_estimator,
        "precision": precision,
    }
    cfg = build_config(toml, overrides)
    options = _validation_options(toml, speed_unit, speed_unit_since, timezone, speed_reject_above)
    columns = _parse_columns(column, toml)
    console = Console(stderr=True)
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("starting", total=None)
        release_result, loaded = release_fleet(
            inputs,
            cfg,
            columns=columns,
            options=options,
            step=lambda name: progress.update(task, description=name),
        )
        progress.update(task, description="writing outputs")
        pw = release_result.privacy
        with release_budget(
            dataset, budget_store, "vehicle-day", pw["window"]["start"], pw["window"]["end"],  # type: ignore[index]
            float(pw["cumulative_epsilon_per_day"]), "fleet-hat", {"epsilon_per_day": pw["epsilon_per_day"]},  # type: ignore[arg-type]
        ) as budget:  # fmt: skip
            paths = write_release(out, release_result, loaded, with_map=not no_map)
            if budget is not None:
                budget.set_output(out)
    _print_summary(release_result.privacy, paths)


def _print_summary(p: dict[str, Any], paths: dict[str, Path]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title="urbandp release", show_header=False)
    eps = p["epsilon_per_day"]
    rows = [
        (
            "differentially private",
            "yes" if p["differentially_private"] else "NO: " + "; ".join(p["not_dp_reasons"]),
        ),
        ("neighbouring / unit", f"{p['neighbouring']} / {p['privacy_unit']}"),
        ("records in / quarantined", f"{p['records_in']:,} / {p['records_quarantined']:,}"),
        (
            "quarantine reasons",
            ", ".join(f"{k}={v}" for k, v in p["quarantine_reasons"].items() if v) or "none",
        ),
        ("HATs released", f"{p['hats_released']:,} (selection: {p['selection']['method']})"),
        (
            "noise scale",
            f"speed {p['noise_scale']['speed']:.6g}, speeding {p['noise_scale']['speeding']:.6g}",
        ),
        (
            "K (max HATs per vehicle-day)",
            f"{p['max_hats_per_vehicle_day']} ({p['max_hats_per_vehicle_day_source']})",
        ),
        (
            "epsilon per day",
            f"speed {eps['speed']:.6g}, speeding {eps['speeding']:.6g}, selection {eps['selection']:.6g}",
        ),
        (
            "cumulative epsilon per day",
            f"{p['cumulative_epsilon_per_day']:.6g} (delta {p['delta_per_day']:.3g})",
        ),
        ("epsilon per window", f"{p['epsilon_per_window']:.6g} over {p['days']} days"),
    ]
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    for name, path in paths.items():
        console.print(f"  {name:10s} {path}")


def explore(
    inputs: list[Path] = typer.Argument(..., help="Input files or directories."),
    out: Path = typer.Option(Path("out/explore"), "--out", help="Output directory for the table and PNGs."),
    hours: str = typer.Option("9-21", help="Daily hour window START-END."),
    slot_minutes: int = typer.Option(60, help="Time-slot length in minutes."),
    min_vehicles_per_day: float = typer.Option(10.0, help="Threshold used for the share-of-cells column."),
    speed_unit: str | None = typer.Option(None, help="Speed unit of the input: km/h, mph or m/s."),
    column: list[str] | None = typer.Option(None, help="Column mapping NAME=SOURCE (repeatable)."),
) -> None:
    """Explore TRUE data to choose parameters (report III A-C). FOR THE DATA OWNER ONLY: not private.

    Example: urbandp explore fleet.parquet --out out/explore
    """
    from rich.console import Console

    from urbandp.fleet.explore import OWNER_ONLY, comparison_table, write_histograms
    from urbandp.fleet.explore import explore as run_explore
    from urbandp.fleet.pipeline import load_records
    from urbandp.grid.slots import SlotSpec, parse_hours

    options = _validation_options({}, speed_unit, None, None, None)
    console = Console()
    with console.status("reading, validating and aggregating at resolutions 6, 7, 8"):
        loaded = load_records(inputs, _parse_columns(column, {}), options)
        result = run_explore(
            loaded.clean,
            slots=SlotSpec(slot_minutes, *parse_hours(hours)),
            min_vehicles_per_day=min_vehicles_per_day,
        )
    out.mkdir(parents=True, exist_ok=True)
    result.table.write_csv(out / "resolution_comparison.csv")
    pngs = write_histograms(result, out)
    console.print(f"[bold red]{OWNER_ONLY}[/]")
    console.print(comparison_table(result.table))
    console.print(f"wrote {out / 'resolution_comparison.csv'}, " + ", ".join(str(p) for p in pngs))


def register(app: typer.Typer) -> None:
    """Add the fleet commands to the main app."""
    app.command("release")(cli_guard(release))
    app.command("explore")(cli_guard(explore))
