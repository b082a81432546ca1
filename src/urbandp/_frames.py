"""Input data as the Python API takes it: paths, or a table object, handed to the readers as files.

A release reads its records through the same readers whatever the entry point (the quarantine, the row numbers and
the exact counts of the owner's report come from there), so an in-memory table is written once to a Parquet file
in a private temporary folder and read back like any other input. Accepted:

* a path or a list of paths (files or folders), as on the command line;
* a Polars ``DataFrame`` or ``LazyFrame``;
* a pandas ``DataFrame`` (a GeoPandas ``GeoDataFrame`` of points included: its geometry becomes ``latitude`` and
  ``longitude`` in WGS 84);
* a PyArrow ``Table`` (or anything with ``__arrow_c_stream__``).

Nothing here looks at values: the conversion is column-wise, and what cannot be converted is refused in one line
(:class:`~urbandp.errors.InputDataError`), naming the parameter. A zone-aware timestamp column stays zone-aware
(instants): the release reads it in its own time zone, or refuses it when none is known
(:mod:`urbandp._records.timezones`); a fixed-offset zone (``UTC+05:30``) becomes the same instants in UTC.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from urbandp._arguments import is_paths
from urbandp._records import timezones
from urbandp.errors import InputDataError

TableLike = Any
"""A path, a list of paths, or a table object (Polars, pandas, GeoPandas, PyArrow)."""


def _points_to_columns(frame: Any) -> Any:
    """A GeoPandas frame of points as a pandas frame with ``latitude``/``longitude`` (WGS 84) instead of geometry."""
    geometry = frame.geometry
    if frame.crs is not None and not frame.crs.equals("EPSG:4326"):
        geometry = geometry.to_crs("EPSG:4326")
    kinds = set(geometry.geom_type.dropna())
    if kinds - {"Point"}:
        raise InputDataError(f"data: a GeoDataFrame of points is needed, got {', '.join(sorted(kinds))}")
    plain = frame.drop(columns=[frame.geometry.name])
    return plain.assign(latitude=geometry.y.to_numpy(), longitude=geometry.x.to_numpy())


def to_polars(data: TableLike, parameter: str = "data") -> pl.DataFrame:
    """``data`` (a table object, not paths) as an eager Polars frame."""
    if isinstance(data, pl.LazyFrame):
        return data.collect()
    if isinstance(data, pl.DataFrame):
        return data
    if hasattr(data, "geometry") and hasattr(data, "crs"):
        data = _points_to_columns(data)
    module = type(data).__module__.split(".")[0]
    try:
        # a fixed-offset zone (UTC+05:30), which Polars refuses, is read as the same instants in UTC
        if module == "pandas":
            return pl.from_pandas(timezones.pandas_in_utc(data))
        if module == "pyarrow" or hasattr(data, "__arrow_c_stream__"):
            frame = pl.from_arrow(timezones.arrow_in_utc(data) if module == "pyarrow" else data)
            if isinstance(frame, pl.DataFrame):
                return frame
    except Exception as err:  # a column Polars cannot represent: one line, not a traceback
        raise InputDataError(
            f"{parameter}: cannot convert the table ({type(err).__name__}: {err})", parameters=parameter
        ) from None
    raise InputDataError(
        f"{parameter}: expected paths or a table (Polars, pandas, GeoPandas or PyArrow), got {type(data).__name__}",
        parameters=parameter,
    )


@contextlib.contextmanager
def input_paths(data: TableLike, parameter: str = "data") -> Iterator[list[Path]]:
    """The input files of ``data``: its paths as given, or one temporary Parquet file holding the table
    (:func:`table_file`)."""
    if is_paths(data):
        items = [data] if isinstance(data, (str, os.PathLike)) else list(data)
        yield [Path(p) for p in items]
        return
    with table_file(data, parameter, "records.parquet") as path:
        yield [path]


@contextlib.contextmanager
def table_file(data: TableLike, parameter: str, name: str) -> Iterator[Path]:
    """The table ``data`` written to ``name`` (Parquet, or CSV for a ``.csv`` name) in a private temporary folder
    (``tempfile.mkdtemp``: mode 0700), removed on exit; an empty table is refused."""
    frame = to_polars(data, parameter)
    if frame.height == 0:
        raise InputDataError(f"{parameter}: the table holds no rows")
    with tempfile.TemporaryDirectory(prefix=f"urbandp-{Path(name).stem}-") as tmp:
        path = Path(tmp) / name
        if path.suffix == ".csv":
            frame.write_csv(path)
        else:
            frame.write_parquet(path)
        yield path
