"""Read published tables for auditing: tolerant of junk lines (quarantined with a reason, never a crash).

The Opal daily file ends with two XML lines (``<?xml ...?>`` and ``<result>...</result>``): real-world parse
hazards. Rows with the wrong number of fields or a count that is not a number are quarantined; an empty count is
read as a suppressed cell (null). Opal column names are mapped to urbandp's: ``loc`` -> ``location``,
``date`` -> ``day``, ``time`` -> ``bin``.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from urbandp.errors import InputError

ALIASES = {"loc": "location", "date": "day", "time": "bin"}
QUARANTINE_SCHEMA = {"line": pl.Int64, "raw": pl.String, "reason": pl.String}
"""A table's rejected lines: the line number, the raw line and why."""


@dataclass
class PublishedTable:
    table: pl.DataFrame  # string key columns + Float64 ``count`` (null = suppressed)
    quarantine: pl.DataFrame  # line, raw, reason
    path: Path | None  # None: a table given in Python

    @property
    def keys(self) -> list[str]:
        return [c for c in self.table.columns if c != "count"]


def read_published_table(path: Path) -> PublishedTable:
    """Read a CSV (or Parquet) table with a count column; junk rows go to quarantine."""
    if not path.is_file():
        raise InputError(f"table not found: {path}")
    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            df = pl.read_parquet(path)
        except Exception as err:
            raise InputError(f"cannot read {path}: {str(err).splitlines()[0]}") from None
        return published_table_from_frame(df, path)
    try:
        text = path.read_text(errors="replace")
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror or err}") from None
    if "\x00" in text:
        raise InputError(f"{path} is not a text table (it contains NUL bytes: a binary file?)")
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(f"table {path} is empty") from None
    except csv.Error as err:
        raise InputError(f"{path}: not a CSV table ({err})") from None
    header = [ALIASES.get(h.strip(), h.strip()) for h in header]
    if "count" not in header:
        raise InputError(f"{path} has no 'count' column (columns: {', '.join(header)})")
    ci = header.index("count")
    keep = [i for i, h in enumerate(header) if h and i != ci and h not in ("lat", "lon", "latlon")]
    rows: list[list[object]] = []
    bad: list[tuple[int, str, str]] = []
    try:
        records = list(reader)
    except csv.Error as err:
        raise InputError(f"{path}: not a CSV table ({err})") from None
    for lineno, rec in enumerate(records, start=2):
        raw = ",".join(rec)
        if len(rec) != len(header):
            bad.append((lineno, raw, f"expected {len(header)} fields, found {len(rec)} (not a data row)"))
            continue
        cell = rec[ci].strip()
        if cell in ("", "NA", "null"):
            value: float | None = None
        else:
            try:
                value = float(cell)
            except ValueError:
                bad.append((lineno, raw, f"count {cell!r} is not a number"))
                continue
        rows.append([rec[i] for i in keep] + [value])
    if not rows:
        raise InputError(f"table {path} has no usable rows")
    names = [header[i] for i in keep] + ["count"]
    table = pl.DataFrame(
        rows, schema={**{n: pl.String for n in names[:-1]}, "count": pl.Float64}, orient="row"
    )
    return PublishedTable(table, pl.DataFrame(bad, schema=QUARANTINE_SCHEMA, orient="row"), path)


def published_table_from_frame(df: pl.DataFrame, path: Path | None = None) -> PublishedTable:
    """A typed table (read from Parquet, or handed over in Python) as a :class:`PublishedTable`.

    Opal column names are mapped as for CSV; key columns become strings and the count Float64 (null = suppressed).
    ``path`` only names the source in error messages (``None``: a table given in Python, named ``table``).
    """
    name = str(path) if path is not None else "table"
    df = df.rename({c: ALIASES[c] for c in df.columns if c in ALIASES and ALIASES[c] not in df.columns})
    if "count" not in df.columns:
        raise InputError(f"{name} has no 'count' column")
    keys = [c for c in df.columns if c != "count" and c != ""]
    try:
        table = df.select([pl.col(k).cast(pl.String) for k in keys] + [pl.col("count").cast(pl.Float64)])
    except pl.exceptions.PolarsError as err:
        raise InputError(f"{name}: the 'count' column is not numeric ({str(err).splitlines()[0]})") from None
    return PublishedTable(table, pl.DataFrame(schema=QUARANTINE_SCHEMA), path)


def read_privacy(candidate: Path, *, required: bool) -> dict[str, object] | None:
    """The ``privacy.json`` object at ``candidate`` (given, or lying next to a table: urbandp releases write one);
    None where an optional one is absent."""
    if required and not candidate.is_file():
        raise InputError(f"privacy file not found: {candidate}")
    if candidate.is_file():
        try:
            value = json.loads(candidate.read_bytes().decode("utf-8"))
        except UnicodeDecodeError:
            raise InputError(f"{candidate} is not UTF-8 text (a binary file?)") from None
        except json.JSONDecodeError as err:
            raise InputError(f"{candidate} is not valid JSON: {err}") from None
        except OSError as err:
            raise InputError(f"cannot read {candidate}: {err.strerror or err}") from None
        if not isinstance(value, dict):
            raise InputError(f"{candidate} is not a privacy.json object")
        return value
    return None
