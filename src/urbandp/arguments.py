"""Checks of the Python API's plain arguments (switches, names, paths, sessions), one line each, naming the parameter.

A notebook passes what it has: ``numpy.bool_`` for a switch, a ``Path`` or a string for a file. What is taken is what
means one thing; anything else is refused with :class:`~urbandp.errors.InvalidParameterError` naming the parameter,
never read loosely (``"no"`` is not a switch: a non-empty string would be true).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from urbandp.errors import InvalidParameterError

__all__ = ["check_mapping", "check_name", "check_path", "check_switch"]


def check_switch(value: object, parameter: str) -> bool:
    """A switch: ``True`` or ``False`` (a NumPy bool too); a string, a number or None is refused."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InvalidParameterError(f"{parameter} must be True or False, got {value!r}", parameters=parameter)


def check_name(value: object, parameter: str, *, optional: bool = False) -> str | None:
    """A name (a dataset, an operator): a non-empty string; None only when ``optional``."""
    if value is None and optional:
        return None
    if isinstance(value, str) and value.strip():
        return value
    raise InvalidParameterError(
        f"{parameter} must be a non-empty string, got {value!r}", parameters=parameter
    )


def check_path(value: object, parameter: str, *, optional: bool = False) -> str | None:
    """A path or URL as text (``str`` or ``os.PathLike``); None only when ``optional``."""
    if value is None and optional:
        return None
    if isinstance(value, (str, Path)) and str(value).strip():
        return str(value)
    raise InvalidParameterError(f"{parameter} must be a path, got {value!r}", parameters=parameter)


def check_mapping(value: object, parameter: str) -> dict[str, str] | None:
    """A mapping of names to names (``columns={"vehicle_id": "bus"}``), or None."""
    if value is None:
        return None
    if isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        return dict(value)
    raise InvalidParameterError(
        f"{parameter} must be a dict of names to column names, e.g. {{'vehicle_id': 'bus'}}, got {value!r}",
        parameters=parameter,
    )
