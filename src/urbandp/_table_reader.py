"""The one reader of an input table file for the count, survey and experiment commands and their Python API."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from urbandp.errors import InputError


def read_table(path: Path, separator: str = ",", *, allow_empty: bool = False) -> pl.DataFrame:
    """``path`` as a frame: Parquet (``.parquet``, ``.pq``) with its own types, any other file as CSV with every
    column as text (each caller parses its columns and quarantines what does not parse; a short row is padded).
    One :class:`InputError` line for a file that is missing, not a regular file (a FIFO would block), unreadable
    or, unless ``allow_empty``, without rows."""
    from urbandp._records.readers import check_readable

    path = Path(path)
    if not path.exists():
        raise InputError(f"input not found: {path}")
    check_readable(path)
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            frame = pl.read_parquet(path)
        else:
            frame = pl.read_csv(path, infer_schema=False, separator=separator, truncate_ragged_lines=True)
    except Exception as err:  # Polars raises many error types for an unreadable file
        raise InputError(f"cannot read {path}: {str(err).splitlines()[0]}") from None
    if frame.height == 0 and not allow_empty:
        raise InputError(f"{path} has no rows")
    return frame
