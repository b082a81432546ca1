"""Readers for CSV, JSON (array), JSON Lines and Parquet into one canonical lazy frame.

Every input becomes a Polars ``LazyFrame`` with the raw canonical columns ``source`` (index into the file list), ``record_ok`` (false for a line that could not be
parsed at all), ``row`` (1-based data row in
its file), ``vehicle`` (str), ``timestamp_raw`` (str, or an already typed datetime), ``latitude``, ``longitude`` and
``speed_raw`` (float, in the input's unit; null where absent or unparseable). Parsing and unit conversion happen in
:mod:`urbandp.records.validation`, so a bad value becomes a quarantined row with a reason, never a crash.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
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
    return files


JSON_BLOCK_BYTES = 16 << 20
"""JSON Lines are parsed in blocks of about this many bytes (cut at a line end): bounded work per parse call, and a
malformed line costs a bisection of its own block only."""
JSON_SAMPLE_RECORDS = 1000
"""Records (JSON objects) sampled from the start of a file to choose the reading schema."""
_BOM = b"\xef\xbb\xbf"
_BISECT_LEAF = 16


def _json_dtype(values: list[object]) -> pl.DataType:
    """Reading type of one JSON field from sampled values: an object anywhere makes it a struct (a record whose value
    is not an object, such as ``"location": "unknown"``, then reads as null for that record only); all numbers
    make it Float64, all lists of numbers List(Float64); anything else is read as text (JSON text for nested)."""
    present = [v for v in values if v is not None]
    objects = [v for v in present if isinstance(v, dict)]
    if objects:
        keys = list(dict.fromkeys(k for o in objects for k in o))
        return pl.Struct({k: _json_dtype([o.get(k) for o in objects]) for k in keys})

    def number(v: object) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if present and all(number(v) for v in present):
        return pl.Float64
    if present and all(isinstance(v, list) and all(number(e) for e in v) for v in present):
        return pl.List(pl.Float64)
    return pl.String


def _json_reading_schema(
    sample: list[dict[str, object]], columns: dict[str, str] | None, path: Path
) -> dict[str, pl.DataType]:
    """Schema of the columns the release needs (projection: other fields are skipped by the parser).

    The vehicle and timestamp are read as text whatever their JSON type (an epoch number arrives as its digits).
    """
    if not sample:
        raise InputError(f"cannot read {path}: no JSON object in its first records")
    names = list(dict.fromkeys(k for rec in sample for k in rec))
    m = ColumnMapping.resolve(names, columns)
    schema: dict[str, pl.DataType] = {}
    for name in (m.vehicle, m.timestamp):
        schema[name] = pl.String
    for name in (m.coordinates, m.latitude, m.longitude, m.speed):
        if name is not None and name not in schema:
            schema[name] = _json_dtype([rec.get(name) for rec in sample])
    pair = schema.get(m.coordinates) if m.coordinates else None
    if isinstance(pair, pl.Struct) and "coordinates" in {f.name for f in pair.fields}:
        schema[m.coordinates] = pl.Struct({"coordinates": pair.to_schema()["coordinates"]})  # type: ignore[index]
    return schema


def _sample_records(lines: list[bytes]) -> list[dict[str, object]]:
    sample: list[dict[str, object]] = []
    for line in lines:
        if len(sample) >= JSON_SAMPLE_RECORDS:
            break
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            sample.append(obj)
    return sample


def _numbered(frame: pl.DataFrame, lines: np.ndarray | range, ok: bool = True) -> pl.DataFrame:
    return frame.with_columns(
        pl.Series("__line", lines, dtype=pl.UInt32), pl.lit(ok, dtype=pl.Boolean).alias("__record_ok")
    )


def _parse_lines(
    numbered: list[tuple[int, bytes]],
    schema: dict[str, pl.DataType],
    out: list[pl.DataFrame],
    known_bad: bool = False,
) -> bool:
    """Parse (line number, line) pairs; a segment the parser rejects is bisected until its bad lines are isolated.

    A bad line (not one JSON object: invalid JSON, trailing text, two objects on a line) becomes a failed record
    (``__record_ok`` false, validation reason ``unparseable_record``); every other line in the segment is parsed
    by Polars in bulk. ``known_bad`` skips the attempt on a segment already known to fail (when the first half of a
    failing segment parses, the second half must hold the bad line). Cost: about one extra parse of the block per
    bad line, not a line-by-line read. Returns whether every line parsed.
    """
    if not numbered:
        return True
    frame: pl.DataFrame | None = None
    if not known_bad:
        try:
            frame = pl.read_ndjson(
                io.BytesIO(b"\n".join(line for _, line in numbered)), schema=schema, ignore_errors=True
            )
        except pl.exceptions.PolarsError:
            frame = None
    if frame is not None and frame.height == len(numbered):
        out.append(_numbered(frame, [n for n, _ in numbered]))
        return True
    if len(numbered) == 1:
        out.append(_numbered(pl.DataFrame(schema=schema).clear(1), [numbered[0][0]], ok=False))
        return False
    if len(numbered) <= _BISECT_LEAF:
        for pair in numbered:
            _parse_lines([pair], schema, out)
        return False
    half = len(numbered) // 2
    first_ok = _parse_lines(numbered[:half], schema, out)
    _parse_lines(numbered[half:], schema, out, known_bad=first_ok)
    return False


def _parse_block(
    block: bytes, first_line: int, n_lines: int, schema: dict[str, pl.DataType]
) -> list[pl.DataFrame]:
    """One block of whole lines starting at line ``first_line``: one bulk parse when it is clean.

    The bulk result is trusted when it parsed without error, has one row per line (no blank line shifted the
    numbering) and no all-null row (Polars reads a line holding a JSON array, number or string as an all-null
    record). Otherwise the block is split into lines: blank lines are skipped, lines that do not start with ``{``
    are failed records, and the rest go through :func:`_parse_lines`.
    """
    try:
        frame = pl.read_ndjson(io.BytesIO(block), schema=schema, ignore_errors=True)
    except pl.exceptions.PolarsError:
        frame = None
    if frame is not None and frame.height == n_lines:
        all_null = pl.all_horizontal(pl.all().is_null())
        if not frame.select(all_null.any()).item():
            return [_numbered(frame, np.arange(first_line, first_line + n_lines))]
    known_bad = frame is None
    out: list[pl.DataFrame] = []
    objects: list[tuple[int, bytes]] = []
    failed: list[int] = []
    for number, line in enumerate(block.split(b"\n"), start=first_line):
        text = line.strip()
        if not text:
            continue
        if text[:1] == b"{":
            objects.append((number, line))
        else:
            failed.append(number)
    _parse_lines(objects, schema, out, known_bad=known_bad and not failed)
    if failed:
        out.append(_numbered(pl.DataFrame(schema=schema).clear(len(failed)), failed, ok=False))
    return [pl.concat(out, how="vertical").sort("__line")] if out else []


def _line_blocks(path: Path) -> Iterator[tuple[bytes, int, int]]:
    """(block, number of its first line, number of lines in it); blocks end at a line end, the BOM is dropped."""
    first = 1
    carry = b""
    with path.open("rb") as handle:
        head = True
        while True:
            chunk = handle.read(JSON_BLOCK_BYTES)
            if head:
                chunk = chunk.removeprefix(_BOM)
                head = False
            if not chunk:
                break
            data = carry + chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                carry = data
                continue
            block, carry = data[: cut + 1], data[cut + 1 :]
            n = block.count(b"\n")
            yield block, first, n
            first += n
    if carry.strip():
        yield carry, first, 1


def read_json_lines(path: Path, columns: dict[str, str] | None = None) -> pl.DataFrame:
    """JSON Lines into a frame of the needed columns, with ``__line`` (line number) and ``__record_ok``.

    Fast path: each block of :data:`JSON_BLOCK_BYTES` is parsed by Polars in one call with a fixed schema chosen
    from the first records (:func:`_json_reading_schema`; nested ITMS ``location.coordinates`` stays a struct).
    A malformed line is quarantined (``unparseable_record``) by bisecting only its block (:func:`_parse_lines`); a
    value of the wrong type (``"location": "unknown"``) is null in that record only; a UTF-8 BOM is skipped.
    """
    blocks = _line_blocks(path)
    first = next(blocks, None)
    if first is None:
        raise InputError(f"cannot read {path}: the file is empty")
    schema = _json_reading_schema(_sample_records(first[0].split(b"\n", 50_000)[:50_000]), columns, path)
    frames: list[pl.DataFrame] = []
    for block, start, n in itertools.chain([first], blocks):
        frames.extend(_parse_block(block, start, n, schema))
    frames = [f for f in frames if f.height]
    if not frames:
        return _numbered(pl.DataFrame(schema=schema), [])
    return pl.concat(frames, how="vertical", rechunk=False) if len(frames) > 1 else frames[0]


def read_json_array(path: Path, columns: dict[str, str] | None = None) -> pl.DataFrame:
    """A JSON array of records: element ``i`` is row ``i``; an element that is not an object is a failed record.

    Parsed by Python's ``json`` (a BOM is accepted) and then by Polars with the same fixed schema as JSON Lines, so a
    badly typed element nulls that element's value only instead of rejecting the file.
    """
    try:
        data = json.loads(path.read_bytes().removeprefix(_BOM))
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read {path}: not valid JSON ({str(err).splitlines()[0]})") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise InputError(f"cannot read {path}: expected a JSON array of records")
    schema = _json_reading_schema(
        [r for r in data if isinstance(r, dict)][:JSON_SAMPLE_RECORDS], columns, path
    )
    wanted = list(schema)
    numbered = [
        (i, json.dumps({k: r.get(k) for k in wanted}).encode())
        for i, r in enumerate(data, start=1)
        if isinstance(r, dict)
    ]
    failed = [i for i, r in enumerate(data, start=1) if not isinstance(r, dict)]
    frames: list[pl.DataFrame] = []
    _parse_lines(numbered, schema, frames)
    if failed:
        frames.append(_numbered(pl.DataFrame(schema=schema).clear(len(failed)), failed, ok=False))
    frames = [f for f in frames if f.height]
    if not frames:
        return _numbered(pl.DataFrame(schema=schema), [])
    return pl.concat(frames, how="vertical").sort("__line")


def _scan_one(path: Path, columns: dict[str, str] | None = None) -> pl.LazyFrame:
    kind = SUFFIXES[path.suffix.lower()]
    try:
        if kind == "csv":
            return pl.scan_csv(path, infer_schema=False, truncate_ragged_lines=True, ignore_errors=True)
        if kind == "parquet":
            return pl.scan_parquet(path)
        if kind == "jsonl":
            return read_json_lines(path, columns).lazy()
        return read_json_array(path, columns).lazy()
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
        lf = _scan_one(path, columns)
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
