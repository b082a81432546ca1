"""A :class:`CountRelease` as long tables (CSV or Parquet): the tables ``CountsRelease.write`` writes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from urbandp.counts._domain import CountDomain
from urbandp.counts._table_release import CountRelease


def _with_counts(frame: pl.DataFrame, values: np.ndarray, suppressed: np.ndarray | None) -> pl.DataFrame:
    vals = values.ravel()
    series = pl.Series("count", vals)
    if np.all(np.mod(vals, 1) == 0):
        series = series.cast(pl.Int64)
    frame = frame.with_columns(series)
    if suppressed is not None:
        frame = frame.with_columns(
            pl.when(pl.Series(suppressed.ravel())).then(None).otherwise(pl.col("count")).alias("count")
        )
    return frame


def _long(
    sizes: tuple[int, ...],
    columns: Mapping[str, tuple[int, Sequence[str]]],
    values: np.ndarray,
    suppressed: np.ndarray | None = None,
    index: np.ndarray | None = None,
) -> pl.DataFrame:
    """One row per cell of an array of shape ``sizes`` (C order), or per flat ``index`` only (the published cells
    of sparse sampling), with its ``count``; ``columns`` maps each column to (its axis, the label of each
    position on that axis)."""
    cells = np.arange(math.prod(sizes)) if index is None else index
    at = np.unravel_index(cells, sizes)
    frame = pl.DataFrame(
        {
            n: pl.Series(n, list(labels), dtype=pl.String).gather(at[axis])
            for n, (axis, labels) in columns.items()
        }
    )
    return _with_counts(frame, values, suppressed)


def release_tables(release: CountRelease, domain: CountDomain) -> dict[str, pl.DataFrame]:
    """``joint``, ``time`` and ``location`` tables; the non-DP Data61 method omits suppressed rows (as Opal did)."""
    modes = [m for m, _ in domain.places]
    locs = [loc for _, loc in domain.places]
    when = {"day": (0, domain.days), "tap": (1, domain.taps)}
    joint_columns = {"mode": (3, modes), **when, "bin": (2, domain.bins), "location": (3, locs)}
    if release.cells is not None:  # sparse sampling: every cell not listed is suppressed
        joint = _long(domain.shape, joint_columns, release.cells.values, index=release.cells.index)
    else:
        assert release.joint is not None
        joint = _long(domain.shape, joint_columns, release.joint, release.suppressed)
    d, t, b, p = domain.shape
    time_columns = {"mode": (3, domain.modes), **when, "bin": (2, domain.bins)}
    time = _long((d, t, b, len(domain.modes)), time_columns, release.time, release.time_suppressed)
    location_columns = {"mode": (2, modes), **when, "location": (2, locs)}
    loc = _long((d, t, p), location_columns, release.location, release.location_suppressed)
    tables = {"joint": joint, "time": time, "location": loc}
    if release.privacy.get("method") == "data61-2016":
        tables = {k: v.filter(pl.col("count").is_not_null()) for k, v in tables.items()}
    if release.top_k is not None:
        tables["top_k"] = pl.DataFrame(
            {
                "rank": list(range(1, len(release.top_k) + 1)),
                "mode": [modes[i] for i in release.top_k],
                "location": [locs[i] for i in release.top_k],
            }
        )
    return tables


def write_tables(tables: dict[str, pl.DataFrame], directory: Path, fmt: str) -> dict[str, Path]:
    """Each table as ``<name>.<fmt>`` (``csv`` or ``parquet``) in ``directory``; the files by table name."""
    written: dict[str, Path] = {}
    for name, table in tables.items():
        written[name] = path = directory / f"{name}.{fmt}"
        if fmt == "parquet":
            table.write_parquet(path)
        else:
            table.write_csv(path)
    return written
