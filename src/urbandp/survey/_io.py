"""The columns and declared lists of survey tables (the tables themselves: :mod:`urbandp._table_reader`)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import numpy as np
import polars as pl

from urbandp.errors import InputError


def require_columns(frame: pl.DataFrame, path: Path, *columns: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)} (have: {', '.join(frame.columns)})")


def float_column(frame: pl.DataFrame, name: str) -> np.ndarray:
    """A column as float64 (unparseable -> NaN)."""
    return frame.get_column(name).cast(pl.Float64, strict=False).fill_null(np.nan).to_numpy().astype(float)


def read_list(path: Path) -> list[str]:
    """One non-empty stripped value per line."""
    try:
        values = [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]
    except OSError as err:
        raise InputError(f"cannot read {path}: {err}") from None
    if not values:
        raise InputError(f"{path} lists no values")
    return values


def command_line() -> str:
    return " ".join(shlex.quote(a) for a in ["urbandp", *sys.argv[1:]])
