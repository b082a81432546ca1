"""What a plain Python value may be, for every parameter of the public API: switches, numbers, names, dates,
sequences, paths, tables, sessions' keywords. One line each, naming the parameter.

A notebook passes what it has: ``numpy.bool_`` for a switch, ``numpy.int64`` or ``numpy.float64`` for a number,
a ``Path`` or a string for a file, a list where a tuple is documented, a ``datetime.date`` where a day is written
``YYYY-MM-DD``. What is taken is what means one thing; anything else is refused with
:class:`~urbandp.errors.InvalidParameterError` naming the parameter (in the message and in ``parameters``),
never read loosely: ``"no"`` is not a switch (a non-empty string would be true), ``"4"`` is not a number,
``True`` is not 1, and NaN, infinity or ``10**400`` (which no float holds) are not amounts.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import inspect
import math
import numbers
import os
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

import numpy as np

from urbandp.errors import InputDataError, InvalidParameterError

__all__ = [
    "check_date",
    "check_keywords",
    "check_mapping",
    "check_name",
    "check_number",
    "check_numbers",
    "check_path",
    "check_switch",
    "check_table",
    "check_texts",
]

P = ParamSpec("P")
R = TypeVar("R")


def _bad(message: str, parameter: str) -> InvalidParameterError:
    return InvalidParameterError(message, parameters=parameter)


def check_switch(value: object, parameter: str) -> bool:
    """A switch: ``True`` or ``False`` (a NumPy bool too); a string, a number or None is refused."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise _bad(f"{parameter} must be True or False, got {value!r}", parameter)


def check_number(
    value: object, parameter: str, *, integer: bool = False, minimum: float | None = None
) -> float:
    """A finite real number (an integer when ``integer``: ``2.0`` is taken, ``2.5`` is not), returned as a float
    (an ``int`` when ``integer``), ``>= minimum`` when given. A bool, a string, None, NaN, infinity and an
    integer too large for a float are refused: each would be read as some other number."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        kind = "an integer" if integer else "a number"
        raise _bad(f"{parameter} must be {kind}, got {value!r}", parameter)
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    bound = "" if minimum is None else f" >= {minimum:g}"
    if not math.isfinite(number) or (minimum is not None and number < minimum):
        raise _bad(f"{parameter} must be a finite number{bound}, got {shown(value)}", parameter)
    if integer:
        if not number.is_integer():
            raise _bad(f"{parameter} must be an integer, got {value!r}", parameter)
        return int(value) if isinstance(value, numbers.Integral) else int(number)
    return number


def check_numbers(
    value: object, parameter: str, *, length: int | None = None, integer: bool = False
) -> tuple[float, ...]:
    """A sequence of finite numbers (a tuple, a list or a 1-D NumPy array), of ``length`` items when given."""
    items = _sequence(value)
    if items is None or (length is not None and len(items) != length):
        what = f"{length} numbers" if length is not None else "a sequence of numbers"
        raise _bad(f"{parameter} must be {what}, got {value!r}", parameter)
    try:
        return tuple(check_number(v, parameter, integer=integer) for v in items)
    except InvalidParameterError:
        kind = "integers" if integer else "finite numbers"
        raise _bad(f"{parameter} must hold {kind}, got {value!r}", parameter) from None


def check_texts(value: object, parameter: str) -> tuple[str, ...]:
    """One text or a sequence of texts (a list or a tuple of ``str``): returned as a tuple of texts."""
    if isinstance(value, str):
        return (value,)
    items = _sequence(value)
    if items is None or not items or not all(isinstance(v, str) for v in items):
        raise _bad(f"{parameter} must be a string or a list of strings, got {value!r}", parameter)
    return tuple(str(v) for v in items)


def check_name(value: object, parameter: str, *, optional: bool = False) -> str | None:
    """A name (a dataset, an operator, a column): a non-empty string; None only when ``optional``."""
    if value is None and optional:
        return None
    if isinstance(value, str) and value.strip():
        return value
    raise _bad(f"{parameter} must be a non-empty string, got {value!r}", parameter)


def check_date(value: object, parameter: str, *, optional: bool = False) -> dt.date | None:
    """A day: a ``datetime.date``, a ``datetime`` at midnight, or text ``YYYY-MM-DD``; None only when
    ``optional``. A ``datetime`` with a time of day is refused (which day it means depends on a zone)."""
    if value is None and optional:
        return None
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0) and value.tzinfo is None:
            return value.date()
        raise _bad(f"{parameter} must be a day (a date or YYYY-MM-DD), got {value!r}", parameter)
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise _bad(f"{parameter} must be a date YYYY-MM-DD, got {value!r}", parameter)


def check_path(value: object, parameter: str, *, optional: bool = False) -> str | None:
    """A path or URL as text (``str`` or ``os.PathLike``); None only when ``optional``."""
    if value is None and optional:
        return None
    if isinstance(value, (str, os.PathLike)) and str(os.fspath(value)).strip():
        return str(os.fspath(value))
    raise _bad(f"{parameter} must be a path, got {value!r}", parameter)


def check_mapping(value: object, parameter: str) -> dict[str, str] | None:
    """A mapping of names to names (``columns={"vehicle_id": "bus"}``), or None."""
    if value is None:
        return None
    if isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        return dict(value)
    raise _bad(
        f"{parameter} must be a dict of names to column names, e.g. {{'vehicle_id': 'bus'}}, got {value!r}",
        parameter,
    )


def check_table(value: object, parameter: str = "data") -> None:
    """An input: a path, a list of paths, or a table (Polars eager or lazy, pandas, GeoPandas, PyArrow). A column
    alone (a Series) or any other object is refused naming ``parameter`` (:class:`InputDataError`); the
    table's own content is checked where it is read."""
    if is_paths(value):
        return
    kind = type(value).__name__
    module = type(value).__module__.split(".")[0]
    if kind in ("Series", "ChunkedArray", "Array") or module not in (
        "polars",
        "pandas",
        "geopandas",
        "pyarrow",
    ):
        hint = " (one column: pass the whole table, or series.to_frame())" if kind == "Series" else ""
        raise InputDataError(
            f"{parameter} must be paths or a table (Polars, pandas, GeoPandas or PyArrow), got {kind}{hint}",
            parameters=parameter,
        )


def is_paths(value: object) -> bool:
    """Whether ``value`` is a path (``str`` or ``os.PathLike``) or a non-empty sequence of them."""
    if isinstance(value, (str, os.PathLike)):
        return True
    return (
        isinstance(value, Sequence) and bool(value) and all(isinstance(p, (str, os.PathLike)) for p in value)
    )


def check_keywords(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` refusing a keyword it does not take with :class:`InvalidParameterError` naming it (and the
    closest keyword it takes), as every other bad argument, instead of Python's ``TypeError``. The signature
    (``help()``, an editor's completion) is the function's own."""
    signature = inspect.signature(function)
    takes = [n for n, p in signature.parameters.items() if p.kind is not p.VAR_POSITIONAL and n != "self"]
    name = function.__name__ if function.__name__ != "__init__" else function.__qualname__.split(".")[0]

    @functools.wraps(function)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        unknown = sorted(set(kwargs) - set(takes))
        if unknown:
            raise unknown_keywords(name, unknown, takes)
        return function(*args, **kwargs)

    return checked


def did_you_mean(word: str, choices: list[str], form: str = "'{}'") -> str:
    """`` (did you mean 'x'?)`` for the choice closest to ``word`` (written as ``form`` says), or nothing."""
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {form.format(close[0])}?)" if close else ""


def unknown_keywords(function: str, unknown: Sequence[str], takes: Sequence[str]) -> InvalidParameterError:
    """The error for keywords ``function`` does not take, each with the closest one it takes."""
    hints = [word + did_you_mean(word, list(takes), "{}") for word in unknown]
    return InvalidParameterError(f"{function}() has no option {', '.join(hints)}", parameters=tuple(unknown))


def runtime_types(hint: Any) -> tuple[Any, ...]:
    """The runtime types an annotation allows, a generic as its origin (``float | None`` -> ``(float, NoneType)``,
    ``tuple[float, ...] | None`` -> ``(tuple, NoneType)``)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return tuple(t for arg in typing.get_args(hint) for t in runtime_types(arg))
    return (typing.get_origin(hint) or hint,)


def _sequence(value: object) -> list[object] | None:
    """``value``'s items when it is a list, a tuple or a 1-D NumPy array; else None (a string is one value)."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return list(value.tolist())
    if isinstance(value, (list, tuple)):
        return list(value)
    return None


def shown(value: object) -> str:
    """``value`` for a message: an integer too large for a float by its digits, not its 400 digits."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**20:
        return f"an integer of {len(str(abs(value)))} digits"
    return repr(value)
