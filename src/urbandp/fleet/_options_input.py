"""The fleet release's options as the library takes them: one mapping from option names (the CLI's flags with
underscores) to the spec (:class:`~urbandp.fleet._options.HatReleaseConfig`), the records' validation options and the
column mapping, shared by ``urbandp release``, ``urbandp plan`` and the Python API (:func:`urbandp.fleet.release`).

Values may be given as the command line writes them (text: ``"2021-11-15"``, ``"6-22"``, ``"a,b,c,d"``) or as
Python values (dates, tuples, lists, dicts): :func:`read_option` reads either into the spec's form, so the
messages agree.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

from urbandp._arguments import (
    check_date,
    check_name,
    check_number,
    check_numbers,
    check_path,
    check_texts,
    did_you_mean,
)
from urbandp._config_tables import in_file, read_document
from urbandp.errors import InputError
from urbandp.fleet._options import HatReleaseConfig, build_config, file_values, parse_bbox
from urbandp.fleet._options_flags import INPUT_KEYS, OPTION_NAMES, RecordOptions, release_options


def file_keys(a: Mapping[str, Any], toml: dict[str, Any] | None = None) -> dict[str, str]:
    """Parameter -> its key in the config file (``start in cfg.toml [release]``), for each value the release
    (options ``a``, as :func:`configure` takes them) reads from its ``config`` file (``toml``, once read) rather
    than from a parameter."""
    path = a.get("config")
    if path is None:
        return {}
    toml = read_toml(path) if toml is None else toml
    table, values = file_values(toml, dict(a))
    names = {k: in_file(path, table)(k) for k in values}
    names.update({k: in_file(path, "input")(k) for k in toml.get("input", {}) if a.get(k) is None})
    return names


@contextlib.contextmanager
def named_by(names: Mapping[str, str]) -> Iterator[None]:
    """Rename, in an :class:`InputError` raised inside, each parameter found in ``names`` (:func:`file_keys`)."""
    try:
        yield
    except InputError as err:
        if not names or not set(err.parameters) & set(names):
            raise
        raise err.renamed(names.get) from None


def parse_columns(items: list[str] | Mapping[str, str] | None, config: dict[str, Any]) -> dict[str, str]:
    """The column mapping: the file's ``[columns]`` table, then ``items`` (``NAME=SOURCE`` texts or a mapping)."""
    columns = {str(k): str(v) for k, v in config.get("columns", {}).items()}
    if isinstance(items, Mapping):
        return {**columns, **items}
    for item in items or []:
        if "=" not in item:
            raise InputError(
                f"column must look like NAME=SOURCE (e.g. vehicle=bus_id), got '{item}'", parameters="column"
            )
        name, source = item.split("=", 1)
        columns[name.strip()] = source.strip()
    return columns


def _parse_unit_switches(
    items: list[str] | None, config: dict[str, Any], file: Path | None = None
) -> tuple[tuple[dt.date, str], ...]:
    """The file's ``[input.speed_unit_since]`` table, then the ``speed_unit_since`` items (``2016-01-01=m/s``);
    a bad entry of the file is named by its key in ``file``."""
    from_file = [f"{k}={v}" for k, v in config.get("speed_unit_since", {}).items()]
    with named_by({"speed_unit_since": in_file(file, "input")("speed_unit_since")} if file else {}):
        first = _unit_switches(from_file)
    return first + _unit_switches(list(items or []))


def _unit_switches(items: list[str]) -> tuple[tuple[dt.date, str], ...]:
    out = []
    for item in items:
        try:
            day, unit = item.split("=", 1)
            out.append((dt.date.fromisoformat(day.strip()), unit.strip()))
        except ValueError:
            raise InputError(
                f"speed_unit_since must look like 2016-01-01=m/s, got '{item}'", parameters="speed_unit_since"
            ) from None
    return tuple(out)


SECTIONS = ("release", "input", "columns")


def read_toml(path: Path | None) -> dict[str, Any]:
    """Parse a TOML config (:func:`urbandp._config_tables.read_document`, the one TOML reader); unknown sections
    or [input] keys are refused naming the closest valid one."""
    if path is None:
        return {}
    data = read_document(path)  # the one TOML reader: a missing, unreadable or malformed file in one line
    for key, value in data.items():
        if isinstance(value, dict) and key not in SECTIONS:
            raise InputError(f"unknown config section [{key}]" + did_you_mean(key, list(SECTIONS), "[{}]"))
    for name in ("input", "columns"):
        if name in data and not isinstance(data[name], dict):
            raise InputError(f'config: [{name}] must be a table, e.g. [{name}] speed_unit = "mph"')
    for key, value in data.get("input", {}).items():
        if key not in INPUT_KEYS:
            raise InputError(f"unknown config key 'input.{key}'" + did_you_mean(key, list(INPUT_KEYS)))
        if key == "speed_unit_since":
            if not isinstance(value, dict):
                raise InputError(
                    'config: [input.speed_unit_since] must be a table, e.g. "2016-01-01" = "m/s"'
                )
        elif key == "speed_reject_above":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError("bad config value for input.speed_reject_above: a number of km/h, e.g. 150")
        elif not isinstance(value, str):
            example = {"speed_unit": '"mph"', "timestamp_format": '"epoch-s"'}.get(key, '"Asia/Kolkata"')
            raise InputError(f"bad config value for input.{key}: a string, e.g. {key} = {example}")
    for key, value in data.get("columns", {}).items():
        if not isinstance(value, str):
            raise InputError(f'bad config value for columns.{key}: a column name, e.g. {key} = "bus_id"')
    return data


def validation_options(config: dict[str, Any], given: Mapping[str, Any], *, file: Path | None = None):
    """The records' validation options: each value ``given`` (not None), else the ``[input]`` table's, else the
    default. With ``file`` (the config's path), a bad unit switch of the file is named by its key there."""
    from urbandp._records.validation import ValidationOptions

    section = config.get("input", {})
    value = {
        k: given[k] if given.get(k) is not None else section.get(k, RecordOptions.model_fields[k].default)
        for k in ("speed_unit", "timezone", "speed_reject_above", "timestamp_format")
    }
    limit = float(value["speed_reject_above"])
    if not (math.isfinite(limit) and limit > 0):
        raise InputError(
            f"speed_reject_above must be a finite number of km/h above 0, got {limit:g}",
            parameters="speed_reject_above",
        )
    # an option given empty ("") is refused by ValidationOptions, never read as "not given"
    return ValidationOptions(
        speed_unit=value["speed_unit"],
        speed_unit_since=_parse_unit_switches(given.get("speed_unit_since"), section, file),
        timezone=value["timezone"],
        speed_reject_above_kmh=limit,
        timestamp_format=value["timestamp_format"],
    )


def parse_date(text: str | None, parameter: str) -> dt.date | None:
    """``YYYY-MM-DD`` to a date; an error names ``parameter`` (a parameter's name, listed in the error's
    ``parameters``, or a text such as ``start in cfg.toml [release]``, left as it is)."""
    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise InputError(
            f"{parameter} must be a date YYYY-MM-DD, got '{text}'",
            parameters=(parameter,) if parameter.isidentifier() else (),
        ) from None


def _day_list(text: str | None, path: Path | None, parameter: str) -> tuple[dt.date, ...] | None:
    """Dates from a comma list or a file (one YYYY-MM-DD per line, # comments, a UTF-8 BOM allowed); a list that
    names an existing file is read as that file (an agency holiday list).

    ``parameter`` names the list (``dates``; its file is ``dates_file``). An empty list (``dates=""``) or an empty item (``2021-11-15,,2021-11-16``) is refused, never read as "no day
    set" or skipped: a missing date would silently change D.
    """
    file = f"{parameter}_file"
    if text is not None and path is not None:
        raise InputError(
            f"give {parameter} or {file}, not both (one would be dropped)", parameters=(parameter, file)
        )
    if text is not None and Path(text).is_file():
        path, text = Path(text), None
    items: list[str] = []
    if text is not None:
        items = [t.strip() for t in text.split(",")]
        if not text.strip() or "" in items:
            raise InputError(
                f"{parameter} {text!r} holds an empty date: give comma-separated YYYY-MM-DD days, e.g. "
                "2021-11-15,2021-11-16",
                parameters=parameter,
            )
    if path is not None:
        if not path.is_file():
            raise InputError(f"{file} not found: {path}", parameters=file)
        try:
            content = path.read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is not part of a date
        except UnicodeDecodeError:
            raise InputError(f"{path} is not UTF-8 text: give one YYYY-MM-DD date per line") from None
        for line in content.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                items += [t.strip() for t in line.split(",") if t.strip()]
        if not items:
            raise InputError(f"{path} holds no date")
    if not items:
        return None
    return tuple(sorted({parse_date(t, parameter) for t in items}))  # type: ignore[misc]


def _bbox(value: object) -> tuple[float, ...]:
    """A public extent as text ``min_lat,min_lon,max_lat,max_lon`` or four numbers, each finite, min < max."""
    if not isinstance(value, str):
        box = check_numbers(value, "domain_bbox", length=4)
    else:
        try:
            box = parse_bbox(value)
        except ValueError as err:
            raise InputError(f"domain_bbox {err}", parameters="domain_bbox") from None
        if not all(math.isfinite(x) for x in box):
            raise InputError(
                f"domain_bbox must hold four finite numbers, got '{value}'", parameters="domain_bbox"
            )
    a, b, c, d = box
    if not (a < c and b < d):
        raise InputError(
            "domain_bbox needs min_lat < max_lat and min_lon < max_lon", parameters="domain_bbox"
        )
    return box


def _hats_bound(value: object) -> int | str:
    """K: a whole number, as a number or text, or ``observed``."""
    if not isinstance(value, str):
        return int(check_number(value, "max_hats_per_vehicle_day", integer=True))
    if value == "observed":
        return value
    try:
        return int(value)
    except ValueError:
        raise InputError(
            "max_hats_per_vehicle_day must be a whole number or 'observed'",
            parameters="max_hats_per_vehicle_day",
        ) from None


def _days(value: object, name: str) -> str:
    """A day list as the comma list :func:`_day_list` reads: text, or dates and texts (a list, or one date)."""
    if isinstance(value, (list, tuple)):
        value = [_day_text(d, name) if isinstance(d, dt.date) else d for d in value]
    return ",".join(check_texts(_day_text(value, name) if isinstance(value, dt.date) else value, name))


def _day_text(value: dt.date, name: str) -> str:
    return cast(dt.date, check_date(value, name)).isoformat()


_KIND = {o.name: str(o.cli_type).replace("pathlib.", "") for o in release_options()}
"""Each option's type on the command line (:func:`urbandp.fleet._options_flags.release_options`), read as
``int | None``, ..."""


def read_option(name: str, value: object) -> object:
    """One option as the command line gives it (text, or the number Typer read) or as Python gives it, checked
    for what its declared type takes (:mod:`urbandp._arguments`) and read into the form the spec takes: numbers
    as numbers (``"4"``, NaN, ``True`` refused), a day as a date (from a date or ``YYYY-MM-DD``), ``hours`` as
    ``"6-22"`` or two integers, ``domain_bbox`` as text or four numbers, lists as lists of texts, files as
    paths."""
    from urbandp._grid.slots import parse_hours  # polars: not imported by the command line's start

    kind = _KIND[name]
    if name in ("start", "end"):
        return check_date(value, name)
    if name in ("dates", "holidays"):
        return _days(value, name)
    if name == "hours":
        return (
            parse_hours(value)
            if isinstance(value, str)
            else check_numbers(value, name, length=2, integer=True)
        )
    if name == "domain_bbox":
        return _bbox(value)
    if name == "max_hats_per_vehicle_day":
        return _hats_bound(value)
    if name == "speed_unit_since" and isinstance(value, Mapping):
        return [f"{check_date(k, name)}={check_name(v, name)}" for k, v in value.items()]
    if isinstance(value, str) and kind.startswith("str"):
        return value
    if name == "queries" or kind.startswith("list"):
        return list(check_texts(value, name))
    if kind.startswith(("int", "float")):
        return check_number(value, name, integer=kind.startswith("int"))
    if kind.startswith("Path"):
        return Path(cast(str, check_path(value, name)))
    return check_name(value, name)


def configure(a: Mapping[str, Any]) -> tuple[Any, Any, dict[str, str]]:
    """(HatReleaseConfig, ValidationOptions, column mapping) from the options shared by release and plan: each
    option (:func:`read_option`) as text or a Python value, ``column`` as ``NAME=SOURCE`` items or a mapping,
    ``config`` the TOML file (:func:`read_toml`), whose values the given ones replace."""
    given: dict[str, Any] = {
        n: read_option(n, v) for n, v in a.items() if v is not None and n in OPTION_NAMES
    }
    toml = read_toml(a["config"])
    overrides: dict[str, object] = {name: given.get(name) for name in HatReleaseConfig.model_fields}
    overrides["dates"] = _day_list(given.get("dates"), given.get("dates_file"), "dates")
    overrides["holidays"] = _day_list(given.get("holidays"), None, "holidays")
    with named_by(file_keys({**a, **overrides}, toml)):  # a value of the file is named by its key there
        cfg = build_config(toml, overrides)
        options = validation_options(toml, given, file=a["config"])
    return cfg, options, parse_columns(a.get("column"), toml)


def toml_date(value: Any) -> str | None:
    return None if value is None else str(value)
