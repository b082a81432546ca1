"""One TOML file of release options, read alike by the command line (:mod:`urbandp._cli_config`) and the Python API
(:func:`takes_config`): one table per release command (:data:`CONFIG_TABLES`), keyed by the options' names
(docs/counts.md, "Options from a file" and "Python API").

A value given directly wins over the file, the file's values go through the same checks as the given ones, and an
error about a value read from the file names the file's key (``epsilon in cfg.toml [counts.release] must be > 0``).
Never read from a file: the data, ``out``, ``overwrite``, the ``session``; a file's ``budget_store`` and
``dataset`` keys (which the CLI reads) must agree with the session passed, so that a file written for the command
line is never half-applied in Python.
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import tomllib
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from urbandp._arguments import did_you_mean, runtime_types
from urbandp.errors import InputDataError, InputError, InvalidParameterError

P = ParamSpec("P")
R = TypeVar("R")

CONFIG_TABLES: tuple[str, ...] = (
    "counts.release",
    "survey.randomize",
    "survey.perturb-points",
    "survey.od-randomize",
    "survey.perturb-trajectories",
    "sensing.dp-map",
    "sensing.pm-map",
    "sensing.query",
)
"""The release commands that take a config file, by table name (group.command, as typed on the command line)."""

CALLER_ONLY = frozenset({"data", "grid", "config", "out", "overwrite", "session", "progress", "command_line"})
"""API keywords a config file cannot set: the data, the output target and the session."""

SESSION_KEYS = {"budget_store": "store", "dataset": "dataset"}
"""File keys that the command line reads into its budget session -> the :class:`urbandp.Session` attribute."""


class _Required:
    """The default of a keyword that a call must give, by keyword or from its config file."""

    def __repr__(self) -> str:
        return "<required: a keyword or a config key>"


REQUIRED: Any = _Required()
"""Default of a required keyword of a :func:`takes_config` function: a type checker lets ``f(data, config=FILE)``
leave it out, and the call is refused in one line naming it when neither the keyword nor the file gives it."""


def read_document(path: Path) -> dict[str, Any]:
    """The TOML document at ``path``; a missing, unreadable or malformed file is refused in one line."""
    if not path.is_file():
        raise InputDataError(f"config {path}: not found", parameters="config")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise InputDataError(f"config {path}: not TOML ({err})", parameters="config") from None
    except OSError as err:
        raise InputDataError(
            f"config {path}: cannot be read ({err.strerror or err})", parameters="config"
        ) from None


def table_of(data: Mapping[str, Any], table: str, path: Path) -> dict[str, Any]:
    """``[table]`` of a parsed file, as a dict; a file without it, or one that is not a table, is refused."""
    group, name = table.split(".", 1)
    outer = data.get(group)
    section = outer.get(name) if isinstance(outer, dict) else None
    if section is None:
        raise InputDataError(f"config {path} has no [{table}] table", parameters="config")
    if not isinstance(section, dict):
        raise InputDataError(f"config {path}: [{table}] must be a table of options", parameters="config")
    return dict(section)


def check_tables(data: Mapping[str, Any], tables: tuple[str, ...], path: Path, table: str) -> None:
    """Every entry of a parsed file is one of ``tables`` (``group.command``, or a table of its own such as the
    fleet's ``release``); a key outside a table or an unknown table is refused, naming the closest one."""
    groups = {t.split(".")[0] for t in tables}
    for group, value in data.items():
        if not isinstance(value, dict):
            raise InputDataError(
                f"config {path}: key '{group}' is outside a table; put the options in a [{table}] table",
                parameters="config",
            )
        if group not in groups:
            hint = did_you_mean(group, sorted(groups), "[{}]")
            raise InputDataError(f"config {path}: unknown table [{group}]{hint}", parameters="config")
        for name in value if group not in tables else ():
            if f"{group}.{name}" not in tables:
                ours = [t.split(".", 1)[1] for t in tables if t.startswith(group + ".")]
                hint = did_you_mean(name, ours, "[" + group + ".{}]")
                raise InputDataError(
                    f"config {path}: unknown table [{group}.{name}]{hint}", parameters="config"
                )


def _runtime_types(fn: Callable[..., object]) -> dict[str, tuple[Any, ...]]:
    """Parameter -> the runtime types its annotation allows (one imported only for the type checker: any)."""
    found: dict[str, tuple[Any, ...]] = {}
    for name, param in inspect.signature(fn).parameters.items():
        holder = type(
            "_Annotation", (), {"__annotations__": {name: param.annotation}, "__module__": fn.__module__}
        )
        try:
            hint = typing.get_type_hints(holder).get(name, Any)
        except (NameError, TypeError):
            hint = Any
        found[name] = runtime_types(hint)
    return found


def file_value(key: str, value: object, allowed: tuple[Any, ...], where: str, takes: str) -> object:
    """The TOML value of ``key`` in ``where`` (the file and the table) as a keyword or option whose runtime types
    are ``allowed`` takes it: the one rule of the Python API's ``config=`` and the command line's ``--config``
    (:mod:`urbandp._cli_config`). A value of another type is refused in one line naming the file, the key and
    ``takes`` (``release's epsilon``, ``--epsilon``): a TOML value is never read loosely, ``"60"`` is not a
    number nor ``"yes"`` a switch.

    A TOML date is given as its ISO text where text is taken; a list where a tuple is; a comma list of numbers
    (``bbox = "30.1,-97.9,30.5,-97.6"``, as the flag takes it) where only a tuple of numbers is."""
    kinds = set(allowed)
    text = bool(kinds & {str, Path, typing.Literal})
    taken = value
    if Any in kinds or (isinstance(value, dt.date) and dt.date in kinds):
        ok = True
    elif isinstance(value, bool):
        ok = bool in kinds
    elif isinstance(value, (int, float)):
        ok = float in kinds or (int in kinds and isinstance(value, int))
    elif isinstance(value, (dt.date, dt.time)):  # a date-time is a date
        ok, taken = str in kinds, value.isoformat()
    elif isinstance(value, str) and tuple in kinds and not text:
        try:
            ok, taken = True, tuple(float(part) for part in value.split(","))
        except ValueError:
            ok = False
    elif isinstance(value, str):
        ok = text
    elif isinstance(value, list):
        ok, taken = bool(kinds & {tuple, list}), tuple(value) if tuple in kinds else value
    else:
        ok = False
    if not ok:
        raise InvalidParameterError(f"{key} in {where} = {value!r} is not a value {takes} takes")
    return taken


def read_options(
    path: Path, table: str, fn: Callable[..., object], aliases: Mapping[str, str], session: object
) -> dict[str, tuple[str, object]]:
    """``[table]`` of ``path`` as ``fn``'s keywords: keyword -> (the file's key, value) (:func:`table_values`);
    keys the caller sets (the data, ``out``, the session) are refused too, naming file and key."""
    where = f"{path} [{table}]"
    section = table_of(read_document(path), table, path)
    for key in list(section):
        name = aliases.get(key.replace("-", "_"), key.replace("-", "_"))
        if name in SESSION_KEYS:
            _check_session_key(key, section.pop(key), SESSION_KEYS[name], session, where)
    allowed = {name: kinds for name, kinds in _runtime_types(fn).items() if name not in CALLER_ONLY}
    return table_values(section, where, allowed, fn.__name__, aliases)


def table_values(
    section: Mapping[str, Any],
    where: str,
    allowed: Mapping[str, tuple[Any, ...]],
    function: str,
    aliases: Mapping[str, str] | None = None,
) -> dict[str, tuple[str, object]]:
    """A table of a config file (``where``: the file and the table) as ``function``'s keywords: keyword -> (the
    file's key, value). ``allowed``: each keyword a file may set -> the runtime types it takes; an unknown key
    (with the closest one) and a value of the wrong type are refused in one line naming file and key."""
    found: dict[str, tuple[str, object]] = {}
    for key, value in section.items():
        name = key.replace("-", "_")
        name = (aliases or {}).get(name, name)
        if name not in allowed:
            said = "is set by the caller, not a config file" if name in CALLER_ONLY else "is not an option"
            raise InvalidParameterError(f"{key} in {where} {said}" + did_you_mean(name, sorted(allowed)))
        found[name] = (key, file_value(key, value, allowed[name], where, f"{function}'s {name}"))
    return found


def _check_session_key(key: str, value: object, attribute: str, session: object, where: str) -> None:
    """A file's ``budget_store`` or ``dataset`` must be what the session passed holds (the CLI charges them)."""
    held = getattr(session, attribute, None) if session is not None else None
    if session is None or held != str(value):
        raise InvalidParameterError(
            f"{key} in {where} = {value!r}: in Python the budget store is charged through "
            f"session=urbandp.Session(store=..., dataset=...); pass a session whose {attribute} is {str(value)!r}"
        )


def takes_config(
    table: str, aliases: Mapping[str, str] | None = None
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Give an API release function the keyword ``config``: a TOML file whose ``[table]`` sets its options.

    Keywords passed win over the file; an :class:`InputError` about a value from the file names the file's key.
    ``aliases``: a file key -> the keyword, where the command line's flag cannot be a Python keyword
    (``from`` -> ``origin``)."""
    if table not in CONFIG_TABLES:
        raise ValueError(f"{table} is not in CONFIG_TABLES")
    names = dict(aliases or {})

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        required = [n for n, p in inspect.signature(fn).parameters.items() if p.default is REQUIRED]

        @functools.wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            path = kwargs.pop("config", None)
            if path is None:
                _check_required(fn.__name__, required, kwargs, None)
                return fn(*args, **kwargs)
            file = Path(str(path))
            read = read_options(file, table, fn, names, kwargs.get("session"))
            from_file = {
                name: f"{key} in {file} [{table}]" for name, (key, _) in read.items() if name not in kwargs
            }
            merged: dict[str, Any] = {name: value for name, (_, value) in read.items()} | kwargs
            _check_required(fn.__name__, required, merged, f"{path} [{table}]")
            try:
                return fn(*args, **merged)
            except InputError as err:
                raise err.renamed(from_file.get) from None

        return call

    return decorate


def _check_required(
    function: str, required: list[str], given: Mapping[str, object], where: str | None
) -> None:
    missing = [name for name in required if given.get(name, REQUIRED) is REQUIRED]
    if missing:
        them, keywords = ("it", "a keyword") if len(missing) == 1 else ("them", "keywords")
        source = f"as {keywords} or in {where}" if where else f"as {keywords} (or in a config file, config=)"
        raise InvalidParameterError(
            f"{function} needs {', '.join(missing)}: give {them} {source}", parameters=missing
        )
