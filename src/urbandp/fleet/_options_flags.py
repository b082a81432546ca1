"""The options of ``urbandp fleet release`` (and ``plan``, and :func:`urbandp.fleet.release`), each declared once
as a field (:mod:`urbandp._release_options`): the release spec's on
:class:`~urbandp.fleet._options.HatReleaseConfig` (the ``[release]`` table), the records' on :class:`RecordOptions`
(``[input]``, ``[columns]`` and the day file), the run's own (map, budget store, engine) on :class:`RunOptions`.
The flags, the TOML keys, the signature (:func:`api_signature`) and the generated keyword types
(:mod:`urbandp._option_types`) are built from the fields.
"""

from __future__ import annotations

import datetime as dt
import functools
import operator
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, field_validator

from urbandp._arguments import check_date, check_name, check_path, check_texts
from urbandp._release_options import (
    BUDGET_STORE_HELP,
    DATASET_HELP,
    DeclaredOption,
    ReleaseOptions,
    declared_options,
    given_kinds,
    option,
)
from urbandp.fleet._options import HatReleaseConfig

F = TypeVar("F", bound=Callable[..., Any])


class RecordOptions(ReleaseOptions):
    """The records' options: how the input's speeds, times and columns are read (the ``[input]`` and ``[columns]``
    tables of a ``--config`` file) and the public day set's file. A flag left out is None, so the file's value or
    the field's default applies (:func:`urbandp.fleet._options_input.read_records`)."""

    dates_file: Path | None = option(
        None,
        help="Public day set from a file, one YYYY-MM-DD per line, # comments (default: none).",
        cli_default=None,
    )
    speed_unit: str = option(
        "km/h",
        help="Speed unit of the input: km/h, mph or m/s (default: {default}).",
        cli_type=str | None,
        cli_default=None,
        table="input",
    )
    speed_unit_since: list[str] | dict[dt.date | str, str] | None = option(
        None,
        help="Unit switch on a date, e.g. 2016-01-01=m/s, repeatable (default: one unit throughout).",
        cli_type=list[str] | None,
        cli_default=None,
        table="input",
    )
    timezone: str | None = option(
        None,
        help="The release's time zone (IANA, e.g. America/Chicago): the hour slots are its local hours, and every "
        "timestamp with a known instant is converted to it; needed for a zone-aware timestamp column (default: "
        "the --domain-gtfs feed's agency_timezone, else the wall-clock time written in the timestamps).",
        cli_default=None,
        table="input",
    )
    speed_reject_above: float = option(
        150.0,
        help="Quarantine speeds above this many km/h (default: {default}).",
        cli_type=float | None,
        cli_default=None,
        gt=0,
        table="input",
    )
    timestamp_format: str = option(
        "auto",
        help="Timestamp layout: auto (ISO 8601 or epoch seconds/milliseconds, per row), iso, epoch-s, epoch-ms or a "
        'strftime pattern such as "%d/%m/%Y %H:%M" (default: {default}).',
        cli_type=str | None,
        cli_default=None,
        table="input",
    )
    column: list[str] | None = option(
        None,
        help="Column mapping NAME=SOURCE, NAME in vehicle,timestamp,latitude,longitude,speed,coordinates (default: "
        "the ITMS names).",
        cli_default=None,
        table="columns",
    )

    @field_validator("dates_file", mode="before")
    @classmethod
    def _path(cls, value: object) -> Path | None:
        path = check_path(value, "dates_file", optional=True)
        return None if path is None else Path(path)

    @field_validator("speed_unit_since", mode="before")
    @classmethod
    def _unit_switches(cls, value: object) -> list[str] | None:
        """Unit switches as ``DAY=UNIT`` texts, from texts or a mapping of day to unit."""
        name = "speed_unit_since"
        if value is None:
            return None
        if isinstance(value, Mapping):
            return [f"{check_date(day, name)}={check_name(unit, name)}" for day, unit in value.items()]
        return list(check_texts(value, name))


def release_options() -> tuple[DeclaredOption, ...]:
    """Every option of a fleet release, in ``--help`` order: the spec's, with the day file after ``dates`` and the
    records' options after ``precision`` (before the clip bound and coarser levels)."""
    spec = list(declared_options(HatReleaseConfig))
    records = list(declared_options(RecordOptions))
    names = [o.name for o in spec]
    day, after = names.index("dates") + 1, names.index("precision") + 1
    return (*spec[:day], records[0], *spec[day:after], *records[1:], *spec[after:])


OPTION_NAMES: tuple[str, ...] = tuple(o.name for o in release_options() if o.name != "column")
"""The release options as keywords of :func:`urbandp.fleet.release` (``columns`` there is ``--column``)."""


def help_of(name: str) -> str:
    """An option's ``--help`` text, for a command that reads records without releasing (``explore``)."""
    return next(o.help for o in release_options() if o.name == name)


def keyword_type(declared: DeclaredOption) -> Any:
    """The type :func:`urbandp.fleet.release` takes for an option: the field's Python value or the command line's
    text (``hours=(6, 22)`` or ``"6-22"``, ``start=date(...)`` or ``"2021-11-15"``), or None; a word of declared
    choices as its ``Literal``."""
    kinds = [*given_kinds(declared.type)]
    if not all(typing.get_origin(k) is typing.Literal for k in kinds):
        kinds += [k for k in given_kinds(declared.cli_type) if k not in kinds]
    return functools.reduce(operator.or_, [*kinds, None])


def api_signature(fn: F) -> F:
    """Give :func:`urbandp.fleet.release` (which takes ``**options``) every option as a keyword, with the field's
    default (an empty tuple as None, nothing given) and :func:`keyword_type`, in the signature that ``help()``
    and editors read."""
    from urbandp._release_options import with_keywords

    defaults = {o.name: None if o.default == () else o.default for o in release_options()}
    keywords = [(name, defaults[name], kind) for name, kind in keyword_types()]
    fn.__signature__ = with_keywords(fn, keywords)  # type: ignore[attr-defined]
    return fn


def keyword_types() -> list[tuple[str, Any]]:
    """(keyword, type) of every option :func:`urbandp.fleet.release` takes (:mod:`urbandp._option_types_gen`)."""
    return [(o.name, keyword_type(o)) for o in release_options() if o.name in OPTION_NAMES]


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


class RunOptions(BaseModel):
    """The options of ``urbandp fleet release`` that are the run's, not the release's: the map, the exit status,
    the budget store charged and the engine of the record-level stage. The command gets them as this typed
    object (:class:`urbandp.fleet._cli.ReleaseArguments`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    no_map: bool = option(False, help="Skip map.html.")
    gtfs: Path | None = option(None, help=GTFS_HELP)
    tiles: str | None = option(None, help=TILES_HELP)
    context: list[Path] | None = option(None, help=CONTEXT_HELP)
    strict: bool = option(
        False, help="Exit 3 when the release is useless (nothing released or every interval > U/2)."
    )
    dataset: str | None = option(None, help=DATASET_HELP)
    budget_store: str | None = option(None, help=BUDGET_STORE_HELP)
    engine: str = option(
        "polars",
        help="Record-level stage: polars (in-process) or spark, see docs/scale-out.md (default: {default}).",
    )
    spark_master: str | None = option(
        None, help="With --engine spark: master URL, e.g. spark://host:7077 (default: local[*])."
    )
