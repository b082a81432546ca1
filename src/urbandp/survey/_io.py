"""Reading survey tables (CSV / Parquet), their columns and declared lists, for the survey releases and CLI."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import numpy as np
import polars as pl

from urbandp.errors import InputError


def read_table(path: Path, separator: str = ",") -> pl.DataFrame:
    """A CSV (all columns as text) or Parquet file; one clear :class:`InputError` line when unusable."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"input not found: {path}")
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            frame = pl.read_parquet(path)
        elif suffix in (".csv", ".txt", ".gz"):
            frame = pl.read_csv(path, infer_schema=False, separator=separator, truncate_ragged_lines=True)
        else:
            raise InputError(f"unsupported input format '{path.suffix}' for {path} (use .csv or .parquet)")
    except (pl.exceptions.PolarsError, OSError, ValueError) as err:
        raise InputError(f"cannot read {path}: {str(err).splitlines()[0]}") from None
    if frame.height == 0:
        raise InputError(f"{path} has no rows")
    return frame


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
