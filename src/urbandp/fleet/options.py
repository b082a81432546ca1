"""The options of ``urbandp release`` (and ``plan``, and :func:`urbandp.fleet.release`), declared once.

Each :class:`ReleaseOption` states the option's name (the Python keyword; the flag is ``--`` + the name with dashes),
its command-line type, its help and where a TOML ``--config`` takes it (``[release]``, ``[input]`` or
``[columns]``). The defaults shown in ``--help`` are read from the code that applies them
(:class:`~urbandp.fleet.config.HatReleaseConfig` for the release's spec, :data:`INPUT_DEFAULTS` for the records'
validation), so help and behaviour cannot drift; a test checks every option
against the CLI, the TOML reader and the spec.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import typer

from urbandp.fleet.config import MIN_PER_DAY_DEFAULT, HatReleaseConfig

INPUT_DEFAULTS: dict[str, object] = {
    "speed_unit": "km/h",
    "speed_reject_above": 150.0,
    "timestamp_format": "auto",
}
"""Defaults of the records' validation options (:func:`urbandp.fleet.spec.validation_options` applies them)."""
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ReleaseOption:
    """One option of a fleet release: its name, command-line type, help (``{default}`` filled in) and TOML table."""

    name: str
    annotation: Any
    help: str
    toml_table: str | None = "release"

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def default(self) -> object:
        """The default the code applies (None where the help says what happens instead)."""
        if self.name == "min_vehicles_per_day":
            return f"{MIN_PER_DAY_DEFAULT['dp']:g} for DP selection, {MIN_PER_DAY_DEFAULT['public-threshold']:g} for public-threshold"
        if self.name in HatReleaseConfig.model_fields:
            value = HatReleaseConfig.model_fields[self.name].default
            return None if value == () else value
        return INPUT_DEFAULTS.get(self.name)

    def help_text(self) -> str:
        value = self.default
        if isinstance(value, tuple):
            shown = "-".join(str(v) for v in value) if self.name == "hours" else ",".join(map(str, value))
        elif isinstance(value, float):
            shown = f"{value:g}"
        else:
            shown = str(value)
        return self.help.replace("{default}", shown)

    def parameter(self) -> inspect.Parameter:
        """The Typer parameter: not given (None) unless typed, so the spec's default applies."""
        option = typer.Option(None, self.flag, help=self.help_text())
        return inspect.Parameter(
            self.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=self.annotation
        )


RELEASE_OPTIONS: tuple[ReleaseOption, ...] = (
    ReleaseOption("resolution", int | None, "H3 resolution (default: {default})."),
    ReleaseOption("slot_minutes", int | None, "Time-slot length in minutes (default: {default})."),
    ReleaseOption("hours", str | None, "Daily hour window START-END (default: {default})."),
    ReleaseOption("start", str | None, "First day YYYY-MM-DD (public window; default: first day in data)."),
    ReleaseOption("end", str | None, "Last day YYYY-MM-DD (public window; default: last day in data)."),
    ReleaseOption(
        "dates",
        str | None,
        "Public day set: comma-separated YYYY-MM-DD days to release; D is their number, the window spans them (default: every day of --start..--end).",
    ),
    ReleaseOption(
        "dates_file",
        Path | None,
        "Public day set from a file, one YYYY-MM-DD per line, # comments (default: none).",
        toml_table=None,
    ),
    ReleaseOption(
        "weekdays",
        str | None,
        "Public day set: these weekdays within --start..--end, e.g. mon-fri or sat,sun (default: all).",
    ),
    ReleaseOption(
        "holidays",
        str | None,
        "Days left out of the public day set: comma-separated dates or a file of dates (default: none).",
    ),
    ReleaseOption(
        "speed_max", float | None, "U: speeds clipped to [0, U] km/h for Query 1 (default: {default})."
    ),
    ReleaseOption("speed_limit", float | None, "Query 2 threshold in km/h (default: {default})."),
    ReleaseOption(
        "noise_scale",
        float | None,
        "Laplace scale B for both queries (default: none; give this or --epsilon-per-day).",
    ),
    ReleaseOption(
        "epsilon_per_day",
        float | None,
        "Cumulative epsilon per vehicle-day; the noise is calibrated from it (default: none; give this or --noise-scale).",
    ),
    ReleaseOption(
        "budget_per_day",
        float | None,
        "Refuse the release if epsilon per day would exceed this (default: no cap).",
    ),
    ReleaseOption(
        "selection", str | None, "HAT selection: dp or public-threshold (not DP) (default: {default})."
    ),
    ReleaseOption(
        "domain_bbox",
        str | None,
        "Public extent min_lat,min_lon,max_lat,max_lon: pure-DP selection (default: no extent; approximate-DP selection).",
    ),
    ReleaseOption(
        "domain_gtfs",
        Path | None,
        "Public domain from the agency's GTFS feed (zip or folder): the cells its shapes pass through x the slots "
        "with scheduled service on the public days; every domain HAT released with noise (default: none).",
    ),
    ReleaseOption(
        "domain_geojson",
        Path | None,
        "Public domain from a GeoJSON of routes or corridors: the cells they pass through x every slot; every "
        "domain HAT released with noise (default: none).",
    ),
    ReleaseOption(
        "domain_cells",
        Path | None,
        "Public domain from a file of H3 cells (one per line or an h3_cell column) x every slot (default: none).",
    ),
    ReleaseOption(
        "domain_ring",
        int | None,
        "Widen a GTFS or GeoJSON domain by this many rings of neighbouring cells (default: {default}).",
    ),
    ReleaseOption(
        "contribution_bounding",
        str | None,
        "auto (l2 where the release allows it, else truncate), truncate (K HATs per vehicle-day) or l2 (every "
        "domain HAT, weights 1/sqrt(m); Gaussian over a public domain) (default: {default}).",
    ),
    ReleaseOption(
        "borrow_strength",
        str | None,
        "auto (parent where the release allows it, else none), none, or parent: also publish robust empirical "
        "Bayes means and intervals pooled with the other HATs of the H3 parent (post-processing, no privacy "
        "cost; 95% coverage on average over HATs) (default: {default}).",
    ),
    ReleaseOption(
        "target_width",
        float | None,
        "Usefulness target: a mean is useful when its 95% interval is at most this wide, km/h (default: {default}).",
    ),
    ReleaseOption(
        "selection_epsilon",
        float | None,
        "Epsilon per day for DP selection when B is given (default: {default}).",
    ),
    ReleaseOption(
        "delta", float | None, "Target delta per vehicle-day of DP selection (default: {default})."
    ),
    ReleaseOption(
        "min_vehicles_per_day",
        float | None,
        "Floor of the selection threshold: vehicles per day per HAT, 0 allowed; the DP threshold may be higher (default: {default}).",
    ),
    ReleaseOption(
        "max_hats_per_vehicle_day",
        str | None,
        "K, public bound enforced by truncation, or 'observed' as in the report, not DP (default: {default}).",
    ),
    ReleaseOption(
        "speed_share",
        float | None,
        "With --queries speed,speeding: share of the two queries' budget for Query 1 (default: the report's shared B under presence-public; under add-remove speeding gets a third of the budget).",
    ),
    ReleaseOption(
        "queries",
        str | None,
        "What to release: speed, or speed,speeding to add Query 2 (vehicles over --speed-limit per day) (default: {default}).",
    ),
    ReleaseOption(
        "selection_fraction",
        float | None,
        "Share of the budget for DP selection under presence-public or a user-level estimator (default: {default}; under add-remove the split is computed).",
    ),
    ReleaseOption(
        "neighbouring",
        str | None,
        "add-remove (presence protected) or presence-public (the report's replace-one: DP for speeds, presence public) (default: {default}).",
    ),
    ReleaseOption(
        "mechanism",
        str | None,
        "Noise: gaussian (zCDP, default with --epsilon-per-day) or laplace (pure DP; default with --noise-scale).",
    ),
    ReleaseOption(
        "speed_estimator",
        str | None,
        "Query 1 estimator: report, baseline, array-averaging, levy, quantile, clipped-mean (default: {default}).",
    ),
    ReleaseOption("precision", int | None, "Decimal places of released values (default: {default})."),
    ReleaseOption(
        "speed_unit",
        str | None,
        "Speed unit of the input: km/h, mph or m/s (default: {default}).",
        toml_table="input",
    ),
    ReleaseOption(
        "speed_unit_since",
        list[str] | None,
        "Unit switch on a date, e.g. 2016-01-01=m/s, repeatable (default: one unit throughout).",
        toml_table="input",
    ),
    ReleaseOption(
        "timezone",
        str | None,
        "The release's time zone (IANA, e.g. America/Chicago): the hour slots are its local hours, and every "
        "timestamp with a known instant is converted to it; needed for a zone-aware timestamp column (default: "
        "the --domain-gtfs feed's agency_timezone, else the wall-clock time written in the timestamps).",
        toml_table="input",
    ),
    ReleaseOption(
        "speed_reject_above",
        float | None,
        "Quarantine speeds above this many km/h (default: {default}).",
        toml_table="input",
    ),
    ReleaseOption(
        "timestamp_format",
        str | None,
        'Timestamp layout: auto (ISO 8601 or epoch seconds/milliseconds, per row), iso, epoch-s, epoch-ms or a strftime pattern such as "%d/%m/%Y %H:%M" (default: {default}).',
        toml_table="input",
    ),
    ReleaseOption(
        "column",
        list[str] | None,
        "Column mapping NAME=SOURCE, NAME in vehicle,timestamp,latitude,longitude,speed,coordinates (default: the ITMS names).",
        toml_table="columns",
    ),
    ReleaseOption(
        "clip_bound",
        str | None,
        "Clip bound of HAT mean speeds: public (--speed-max U) or dp-quantile (a DP quantile U' <= U) (default: {default}).",
    ),
    ReleaseOption(
        "clip_quantile",
        float | None,
        "Quantile of the vehicle-days' largest HAT mean speed for dp-quantile (default: {default}).",
    ),
    ReleaseOption(
        "clip_share", float | None, "Share of the budget for the dp-quantile bound (default: {default})."
    ),
    ReleaseOption(
        "coarsen",
        str | None,
        "Where the finest HAT does not pass, release a coarser one: none, parent1, parent2, slot2, auto (default: {default}).",
    ),
    ReleaseOption(
        "coarsen_share", float | None, "Share of the budget for the coarser level(s) (default: {default})."
    ),
    ReleaseOption(
        "coarsen_rule",
        str | None,
        "fill (a coarser HAT stands for the part no finer level released) or exclusive (only where no finer HAT inside it was released) (default: {default}).",
    ),
)
"""Every option of a fleet release, in ``--help`` order."""

OPTION_NAMES: tuple[str, ...] = tuple(o.name for o in RELEASE_OPTIONS if o.name != "column")
"""The release options as keywords of :func:`urbandp.fleet.release` (``columns`` there is ``--column``)."""


def api_signature(fn: F) -> F:
    """Give :func:`urbandp.fleet.release` (which takes ``**options``) every option of :data:`RELEASE_OPTIONS` as
    a keyword, with the default the code applies and the type the command line takes, in the signature that
    ``help()`` and editors read; None where the default depends on other options (the help says which)."""
    from urbandp.release_options import with_keywords

    fn.__signature__ = with_keywords(  # type: ignore[attr-defined]
        fn,
        [
            (
                o.name,
                o.default
                if isinstance(o.default, (int, float, str, tuple)) and o.name != "min_vehicles_per_day"
                else None,
                o.annotation,
            )
            for o in RELEASE_OPTIONS
            if o.name in OPTION_NAMES
        ],
    )
    return fn
