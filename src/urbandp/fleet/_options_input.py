"""The fleet release's options as the library takes them: one mapping from option names (the CLI's flags with
underscores) to the spec (:class:`~urbandp.fleet._options.HatReleaseConfig`), the records' validation options and the
column mapping, shared by ``urbandp release``, ``urbandp plan`` and the Python API (:func:`urbandp.fleet.release`):
a value as the command line writes it or as Python gives it is read and refused by the models' fields (the shared
option mechanism, :mod:`urbandp._release_options`), so the messages agree.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

from urbandp._arguments import check_date, check_texts, runtime_types
from urbandp._config_tables import check_tables, read_document, table_values
from urbandp.errors import InputError, InvalidParameterError
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._options_flags import RecordOptions, keyword_type, release_options

FILE_TABLES = ("release", "input", "columns")
"""The tables of a fleet config file: the release spec's options, the records' options and the column mapping."""

PAIRS = (("noise_scale", "epsilon_per_day"), ("epsilon_per_day", "noise_scale"), ("dates_file", "dates"))
"""(given, dropped): an option given replaces the file's other one of its pair (B or epsilon per day; a day
file or a day list), so that a file is never half-overridden into a conflict."""


def read_config(path: Path | None) -> tuple[dict[str, tuple[str, object]], dict[str, str]]:
    """(keyword -> (how an error names the file's key, value); the ``[columns]`` mapping) of a config file, read
    by the shared reader (:mod:`urbandp._config_tables`): unknown tables and keys, and values of the wrong type,
    are refused in one line naming the file and the key. Options written outside a table, in a file without a
    ``[release]`` table, are the release's."""
    if path is None:
        return {}, {}
    data = read_document(path)
    loose = {k: v for k, v in data.items() if not isinstance(v, dict)} if "release" not in data else {}
    tables = {k: v for k, v in data.items() if k not in loose}
    check_tables(tables, FILE_TABLES, path, "release")
    records = dict(tables.get("input", {}))
    if isinstance(records.get("speed_unit_since"), dict):  # a table of day = unit: the flag's DAY=UNIT items
        records["speed_unit_since"] = [f"{day}={unit}" for day, unit in records["speed_unit_since"].items()]
    found: dict[str, tuple[str, object]] = {}
    for table, section in (("release", loose or tables.get("release", {})), ("input", records)):
        where = f"{path}" if loose and table == "release" else f"{path} [{table}]"
        allowed = {o.name: runtime_types(keyword_type(o)) for o in release_options() if o.table == table}
        values = table_values(section, where, allowed, "release")
        found.update({name: (f"{key} in {where}", value) for name, (key, value) in values.items()})
    columns = tables.get("columns", {})
    for key, value in columns.items():
        if not isinstance(value, str):
            raise InvalidParameterError(f"{key} in {path} [columns] = {value!r} is not a column name")
    return found, columns


def with_file(a: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(the options ``a`` (None: not given), each one not given taken from the ``config`` file and ``column``
    as the mapping; keyword -> how an error names the file's key, for each value taken from the file)."""
    read, columns = read_config(a.get("config"))
    given = {name for name, value in a.items() if value is not None}
    left = given | {other for one, other in PAIRS if one in given}
    taken = {name: item for name, item in read.items() if name not in left}
    values = {**a, **{name: value for name, (_, value) in taken.items()}}
    values["column"] = parse_columns(a.get("column"), columns)
    return values, {name: named for name, (named, _) in taken.items()}


@contextlib.contextmanager
def named_by(names: Mapping[str, str]) -> Iterator[None]:
    """Rename, in an :class:`InputError` raised inside, each parameter found in ``names`` (:func:`with_file`)."""
    try:
        yield
    except InputError as err:
        if not names or not set(err.parameters) & set(names):
            raise
        raise err.renamed(names.get) from None


def parse_columns(items: list[str] | Mapping[str, str] | None, columns: Mapping[str, str]) -> dict[str, str]:
    """The column mapping: the file's ``[columns]`` table, then ``items`` (``NAME=SOURCE`` texts or a mapping)."""
    mapping = {str(k): str(v) for k, v in columns.items()}
    if isinstance(items, Mapping):
        return {**mapping, **items}
    for item in items or []:
        if "=" not in item:
            raise InputError(
                f"column must look like NAME=SOURCE (e.g. vehicle=bus_id), got '{item}'", parameters="column"
            )
        name, source = item.split("=", 1)
        mapping[name.strip()] = source.strip()
    return mapping


def _unit_switches(items: list[str]) -> tuple[tuple[dt.date, str], ...]:
    """The unit switches ``2016-01-01=m/s`` as (day, unit)."""
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


def read_records(values: Mapping[str, Any]) -> RecordOptions:
    """The records' options among ``values``: each one given (not None; the config file's already in it,
    :func:`with_file`), else the field's default."""
    names = set(RecordOptions.model_fields) - {"column"}
    return RecordOptions(**{k: v for k, v in values.items() if k in names and v is not None})


def validation_options(records: RecordOptions):
    """The records' validation options (an option given empty, ``""``, is refused by ``ValidationOptions``,
    never read as "not given")."""
    from urbandp._records.validation import ValidationOptions

    return ValidationOptions(
        speed_unit=records.speed_unit,
        speed_unit_since=_unit_switches(cast(list[str], records.speed_unit_since or [])),
        timezone=records.timezone,
        speed_reject_above_kmh=records.speed_reject_above,
        timestamp_format=records.timestamp_format,
    )


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
    return tuple(sorted({cast(dt.date, check_date(t, parameter)) for t in items}))


def _days(value: object, name: str) -> str | None:
    """A day list as the comma list :func:`_day_list` reads: text, or dates and texts (a list, or one date)."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        value = [_day_text(d, name) if isinstance(d, dt.date) else d for d in value]
    return ",".join(check_texts(_day_text(value, name) if isinstance(value, dt.date) else value, name))


def _day_text(value: dt.date, name: str) -> str:
    return cast(dt.date, check_date(value, name)).isoformat()


def configure(a: Mapping[str, Any]) -> tuple[Any, Any, dict[str, str], dict[str, str]]:
    """(HatReleaseConfig, ValidationOptions, column mapping, keyword -> its key in the config file) from the
    options shared by release and plan, each as text or a Python value (the spec and :class:`RecordOptions` read
    and check them), ``column`` as ``NAME=SOURCE`` items or a mapping, ``config`` the TOML file
    (:func:`read_config`), whose values the given ones replace. The release names a value read from the file by
    its key there (:func:`named_by`)."""
    values, names = with_file(a)
    with named_by(names):  # a value of the file is named by its key there
        records = read_records(values)
        spec = {name: values.get(name) for name in HatReleaseConfig.model_fields}
        spec["dates"] = _day_list(_days(values.get("dates"), "dates"), records.dates_file, "dates")
        spec["holidays"] = _day_list(_days(values.get("holidays"), "holidays"), None, "holidays")
        cfg = HatReleaseConfig(**{name: value for name, value in spec.items() if value is not None})
        options = validation_options(records)
    return cfg, options, values["column"], names
