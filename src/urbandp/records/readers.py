"""Readers for CSV, JSON (array), JSON Lines and Parquet into one canonical lazy frame.

Every input becomes a Polars ``LazyFrame`` with the raw canonical columns ``source`` (index into the file list), ``record_ok`` (false for a line that could not be
parsed at all), ``row`` (1-based data row in
its file), ``vehicle`` (str), ``timestamp_raw`` (str, or an already typed datetime), ``latitude``, ``longitude`` and
``speed_raw`` (float, in the input's unit; null where absent or unparseable). Parsing and unit conversion happen in
:mod:`urbandp.records.validation`, so a bad value becomes a quarantined row with a reason, never a crash.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import polars as pl

from urbandp.errors import InputError
from urbandp.records.schema import ColumnMapping

SUFFIXES = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
}


def expand_inputs(paths: list[Path]) -> list[Path]:
    """Files named directly, plus the supported files inside any directory named (sorted)."""
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise InputError(f"input not found: {p}")
        if p.is_dir():
            inner = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in SUFFIXES)
            if not inner:
                raise InputError(f"no CSV/JSON/JSON Lines/Parquet files in directory: {p}")
            files.extend(inner)
        else:
            if p.suffix.lower() not in SUFFIXES:
                raise InputError(
                    f"unsupported input format '{p.suffix}' for {p} (use .csv, .json, .jsonl, .parquet)"
                )
            files.append(p)
    for f in files:
        check_readable(f)
    return files


def check_readable(path: Path) -> None:
    """Refuse what is not a readable regular file (a FIFO would block for ever, a device never ends)."""
    try:
        mode = path.stat().st_mode
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror or err}") from None
    if not stat.S_ISREG(mode):
        raise InputError(
            f"cannot read {path}: not a regular file (a pipe, device or socket); save it to a file"
        )
    if not os.access(path, os.R_OK):
        raise InputError(f"cannot read {path}: permission denied")


def timestamp_samples(files: list[Path], column: str, n: int = 200) -> dict[str, pl.Series]:
    """The first ``n`` raw values of the timestamp column of each CSV, Parquet or JSON Lines file (for reporting
    which layout each file uses; validation itself reads every row's own layout). Unreadable samples are skipped."""
    out: dict[str, pl.Series] = {}
    for path in files:
        kind = SUFFIXES[path.suffix.lower()]
        try:
            if kind == "csv":
                lf = pl.scan_csv(path, infer_schema=False, truncate_ragged_lines=True, ignore_errors=True)
            elif kind == "parquet":
                lf = pl.scan_parquet(path)
            elif kind == "jsonl":
                lf = pl.scan_ndjson(path, infer_schema_length=None, ignore_errors=True)
            else:
                continue
            out[path.name] = lf.select(pl.col(column)).head(n).collect().to_series()
        except Exception:  # a sample is only for the report; validation reports every row
            continue
    return out


def _flatten_record(obj: dict[str, object]) -> dict[str, str | None]:
    """One JSON object as text fields; a nested object's fields become ``parent.child`` (ITMS ``location.coordinates``)."""
    flat: dict[str, str | None] = {}
    for key, value in obj.items():
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for child, v in items:
            name = key if child is None else f"{key}.{child}"
            flat[name] = None if v is None else json.dumps(v) if isinstance(v, (list, dict)) else str(v)
    return flat


def tolerant_json_lines(path: Path) -> pl.LazyFrame:
    """JSON Lines read line by line: a line that is not a JSON object is kept as a failed record, not lost.

    Used when Polars' fast reader rejects the file (one malformed line fails it whole). All fields arrive as text
    (``__line`` = line number, ``__record_ok`` = the line parsed); validation turns a failed line into a quarantined
    row with reason ``unparseable_record`` and bad values into their own reasons.
    """
    records: list[dict[str, str | None]] = []
    lines: list[int] = []
    ok: list[bool] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                obj = None
            good = isinstance(obj, dict)
            records.append(_flatten_record(obj) if good else {})  # type: ignore[arg-type]
            lines.append(number)
            ok.append(good)
    names = sorted({k for r in records for k in r})
    frame = pl.DataFrame(
        {n: [r.get(n) for r in records] for n in names}, schema={n: pl.String for n in names}
    )
    return frame.with_columns(
        pl.Series("__line", lines, dtype=pl.UInt32), pl.Series("__record_ok", ok, dtype=pl.Boolean)
    ).lazy()


def _scan_one(path: Path) -> pl.LazyFrame:
    kind = SUFFIXES[path.suffix.lower()]
    try:
        if kind == "csv":
            return pl.scan_csv(path, infer_schema=False, truncate_ragged_lines=True, ignore_errors=True)
        if kind == "parquet":
            return pl.scan_parquet(path)
        if kind == "jsonl":
            lf = pl.scan_ndjson(path, infer_schema_length=None, ignore_errors=True)
            try:
                lf.collect_schema()
            except pl.exceptions.PolarsError:
                return tolerant_json_lines(path)
            return lf
        return pl.read_json(path, infer_schema_length=None).lazy()
    except (pl.exceptions.PolarsError, OSError, ValueError) as err:
        raise InputError(f"cannot read {path}: {str(err).splitlines()[0]}") from None


def _schema(lf: pl.LazyFrame, path: Path) -> pl.Schema:
    try:
        return lf.collect_schema()
    except (pl.exceptions.PolarsError, OSError, ValueError) as err:
        raise InputError(f"cannot read {path}: {str(err).splitlines()[0]}") from None


def _as_float(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    if dtype == pl.String:
        return expr.str.strip_chars().cast(pl.Float64, strict=False)
    if dtype.is_numeric():
        return expr.cast(pl.Float64)
    return pl.lit(None, dtype=pl.Float64)


def _coordinate_pair(expr: pl.Expr, dtype: pl.DataType) -> tuple[pl.Expr, pl.Expr]:
    """(longitude, latitude) from a [lon, lat] pair: nested struct, list, or text like "[72.83, 21.17]"."""
    if isinstance(dtype, pl.Struct):
        fields = {f.name: f.dtype for f in dtype.fields}
        if "coordinates" not in fields:
            return pl.lit(None, pl.Float64), pl.lit(None, pl.Float64)
        return _coordinate_pair(expr.struct.field("coordinates"), fields["coordinates"])
    if isinstance(dtype, (pl.List, pl.Array)):
        lst = (
            expr.cast(pl.List(pl.Float64), strict=False) if isinstance(dtype, pl.List) else expr.arr.to_list()
        )
        return lst.list.get(0, null_on_oob=True).cast(pl.Float64), lst.list.get(1, null_on_oob=True).cast(
            pl.Float64
        )
    if dtype == pl.String:
        parts = expr.str.strip_chars(" []").str.split(",")
        lon = parts.list.get(0, null_on_oob=True).str.strip_chars().cast(pl.Float64, strict=False)
        lat = parts.list.get(1, null_on_oob=True).str.strip_chars().cast(pl.Float64, strict=False)
        return lon, lat
    return pl.lit(None, pl.Float64), pl.lit(None, pl.Float64)


def scan_records(
    paths: list[Path], columns: dict[str, str] | None = None
) -> tuple[pl.LazyFrame, ColumnMapping, list[Path]]:
    """Scan every input file into the raw canonical frame; all files must map to the same columns.

    Raises :class:`InputError` for a missing file, an unreadable file or a missing required column.
    """
    files = expand_inputs(paths)
    frames: list[pl.LazyFrame] = []
    mapping: ColumnMapping | None = None
    for index, path in enumerate(files):
        lf = _scan_one(path)
        schema = _schema(lf, path)
        m = ColumnMapping.resolve(list(schema.names()), columns)
        mapping = mapping or m
        if m.coordinates:
            lon, lat = _coordinate_pair(pl.col(m.coordinates), schema[m.coordinates])
        else:
            lat = _as_float(pl.col(m.latitude), schema[m.latitude])  # type: ignore[index]
            lon = _as_float(pl.col(m.longitude), schema[m.longitude])  # type: ignore[index]
        ts_dtype = schema[m.timestamp]
        ts = pl.col(m.timestamp) if isinstance(ts_dtype, pl.Datetime) else pl.col(m.timestamp).cast(pl.String)
        tolerant = "__line" in schema
        numbered = lf if tolerant else lf.with_row_index("__line", offset=1)
        frames.append(
            numbered.select(
                pl.lit(index, dtype=pl.UInt16).alias("source"),
                pl.col("__line").cast(pl.UInt32).alias("row"),
                (pl.col("__record_ok") if tolerant else pl.lit(True)).alias("record_ok"),
                pl.col(m.vehicle).cast(pl.String).str.strip_chars().alias("vehicle"),
                ts.alias("timestamp_raw"),
                lat.alias("latitude"),
                lon.alias("longitude"),
                _as_float(pl.col(m.speed), schema[m.speed]).alias("speed_raw"),
            )
        )
    assert mapping is not None
    if len(frames) == 1:
        return frames[0], mapping, files
    dtypes = {str(f.collect_schema()["timestamp_raw"]) for f in frames}
    if len(dtypes) > 1:
        frames = [f.with_columns(pl.col("timestamp_raw").cast(pl.String)) for f in frames]
    return pl.concat(frames, how="vertical_relaxed"), mapping, files
