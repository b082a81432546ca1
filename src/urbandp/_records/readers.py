"""Readers for CSV, JSON (array), JSON Lines, Parquet (GeoParquet points included) and GTFS-realtime snapshots
(:mod:`urbandp._records.gtfs_realtime`) into one canonical lazy frame.

Every input becomes a Polars ``LazyFrame`` with the raw canonical columns ``source`` (index into the file list),
``record_ok`` (false for a line that could not be parsed at all), ``row`` (1-based data row in its file),
``vehicle`` (str), ``timestamp_raw`` (str, or an already typed datetime), ``latitude``, ``longitude`` and
``speed_raw`` (float, in the input's unit; null where absent or unparseable). Parsing and unit conversion happen in
:mod:`urbandp._records.validation`, so a bad value becomes a quarantined row with a reason, never a crash.
"""

from __future__ import annotations

import io
import itertools
import json
import mmap
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from polars.datatypes import DataTypeClass

from urbandp._records import geoparquet, gtfs_realtime, timezones
from urbandp._records.schema import ColumnMapping
from urbandp.errors import InputError, one_line

if TYPE_CHECKING:
    import pyarrow as pa

DType = pl.DataType | DataTypeClass
"""A Polars data type as an instance (``pl.List(pl.Float64)``) or a class (``pl.Float64``)."""

SUFFIXES = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
    gtfs_realtime.SNAPSHOT_SUFFIX: gtfs_realtime.KIND,
}


COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}
"""Compressed text inputs as agencies ship them (``trips.csv.gz``, ``avl.jsonl.zst``): decompressed once to a
temporary file (removed at exit) and then read like the plain file."""


def input_kind(path: Path) -> str | None:
    """``csv``, ``jsonl``, ``json``, ``parquet`` or ``gtfs-realtime`` for a supported file name (compressed text
    too; a ``.zip``/``.tar`` archive of snapshots, or a folder as :func:`expand_inputs` lists it), else None."""
    if gtfs_realtime.is_archive(path) or Path(path).is_dir():
        return gtfs_realtime.KIND
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in COMPRESSIONS:
        inner = SUFFIXES.get(suffixes[-2]) if len(suffixes) > 1 else None
        return inner if inner in ("csv", "jsonl", "json") else None
    return SUFFIXES.get(Path(path).suffix.lower())


def skipped_inputs(paths: list[Path]) -> list[Path]:
    """The files inside directories named in ``paths`` that are not read (not a supported format), sorted."""
    folders = [p for p in map(Path, paths) if p.is_dir()]
    return [f for p in folders for f in sorted(p.iterdir()) if f.is_file() and _folder_kind(f) is None]


def _folder_kind(f: Path) -> str | None:
    """The kind of a file found inside an input folder (an archive there is not opened: None)."""
    return None if gtfs_realtime.is_archive(f) else input_kind(f)


def expand_inputs(paths: list[Path]) -> list[Path]:
    """Files named directly, plus the supported files inside any directory named (sorted).

    The GTFS-realtime snapshots (``.pb``) of a directory are one input, the directory itself (its snapshots are
    de-duplicated together); other files inside a directory are not read, and :func:`skipped_inputs` lists them.
    """
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise InputError(f"input not found: {p}")
        if p.is_dir():
            inner = sorted(f for f in p.iterdir() if f.is_file() and _folder_kind(f) is not None)
            tables = [f for f in inner if _folder_kind(f) != gtfs_realtime.KIND]
            if not inner:
                raise InputError(
                    f"no CSV/JSON/JSON Lines/Parquet files (plain, .gz or .zst) or GTFS-realtime snapshots (.pb) "
                    f"in directory: {p}"
                )
            files.extend(tables + ([p] if len(tables) < len(inner) else []))
        else:
            if input_kind(p) is None:
                raise InputError(
                    f"unsupported input format '{''.join(p.suffixes) or p.name}' for {p} (use .csv, .json, .jsonl, "
                    ".parquet, .csv/.json/.jsonl compressed as .gz or .zst, or GTFS-realtime .pb snapshots, a "
                    "folder or a .zip/.tar of them)"
                )
            files.append(p)
    for f in files:
        if not f.is_dir():
            check_readable(f)
    return files


_DECOMPRESSED: dict[Path, Path] = {}


def readable_path(path: Path) -> Path:
    """``path`` itself, or for a compressed file its decompressed copy (made once per run, removed at exit)."""
    path = Path(path)
    compression = COMPRESSIONS.get(path.suffix.lower())
    if compression is None:
        return path
    if path not in _DECOMPRESSED:
        import atexit
        import shutil
        import tempfile

        import pyarrow as pa

        folder = Path(tempfile.mkdtemp(prefix="urbandp-input-"))
        atexit.register(shutil.rmtree, folder, True)
        target = folder / path.with_suffix("").name
        try:
            with pa.input_stream(str(path), compression=compression) as source, target.open("wb") as sink:
                shutil.copyfileobj(source, sink, 8 << 20)
        except (OSError, pa.ArrowException) as err:
            raise InputError(
                f"cannot read {path}: not valid {compression} data ({one_line(str(err))})"
            ) from None
        _DECOMPRESSED[path] = target
    return _DECOMPRESSED[path]


def read_error_line(err: Exception) -> str:
    """One line for a reading error, without Polars internals (column names such as ``__line``, hints)."""
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    if "utf-8" in text.lower() or "utf8" in text.lower():
        return "the file is not UTF-8 text; convert it first (e.g. iconv -f latin1 -t utf-8 in.csv > out.csv)"
    if "__" in text or "broadcast" in text:
        return "malformed content (rows of different shapes)"
    return text


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
    for given in files:
        kind = input_kind(given)
        if kind not in ("csv", "parquet", "jsonl"):
            continue  # a GTFS-realtime input's timestamps are typed (UTC) instants
        path = readable_path(given)
        try:
            if kind == "jsonl":  # a Polars scan would infer its schema from the whole file
                out[given.name] = _json_lines_head(path, column, n)
                continue
            lf = _scan_csv(path) if kind == "csv" else _scan_parquet(path, points=False)
            out[given.name] = lf.select(pl.col(column)).head(n).collect().to_series()
        except Exception:  # a sample is only for the report; validation reports every row
            continue
    return out


def _json_lines_head(path: Path, column: str, n: int) -> pl.Series:
    """``column`` of the first ``n`` JSON objects in the file's first megabyte, as text (non-objects skipped)."""
    values = [rec.get(column) for rec in _sample_records(_head_lines(path))[:n]]
    return pl.Series(column, [None if v is None else str(v) for v in values], dtype=pl.String)


JSON_BLOCK_BYTES = 16 << 20
"""JSON Lines are parsed in blocks of about this many bytes (cut at a line end): bounded work per parse call, and a
malformed line costs a bisection of its own block only."""
JSON_SAMPLE_RECORDS = 1000
"""Records (JSON objects) sampled from the start of a file to choose the reading schema."""
_BOM = b"\xef\xbb\xbf"
JSON_RUN_LINES = 256
"""A block the bulk parse rejects is re-parsed in runs of this many lines; a failing run is checked line by line."""


def _json_dtype(values: list[object]) -> DType:
    """Reading type of one JSON field from sampled values: an object anywhere makes it a struct (a record whose value
    is not an object, such as ``"location": "unknown"``, then reads as null for that record only); all numbers
    make it Float64, any list of numbers List(Float64); anything else is read as text (JSON text for nested)."""
    present = [v for v in values if v is not None]
    objects = [v for v in present if isinstance(v, dict)]
    if objects:
        keys = list(dict.fromkeys(k for o in objects for k in o))
        return pl.Struct({k: _json_dtype([o.get(k) for o in objects]) for k in keys})

    def number(v: object) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if present and all(number(v) for v in present):
        return pl.Float64
    if any(isinstance(v, list) and v and all(number(e) for e in v) for v in present):
        return pl.List(pl.Float64)  # a list that is not all numbers then reads as null for its record only
    return pl.String


def _json_keys(path: Path, columns: dict[str, str] | None) -> list[str]:
    """Field names of the file's objects, read line by line until every needed column is found (or the end).

    Used only when the first records lack a needed field (a feed that adds ``speed`` after its first 1,000 fixes),
    so the common case never pays for it.
    """
    names: dict[str, None] = {}
    with path.open("rb") as handle:
        for obj in _objects(handle):
            if any(k not in names for k in obj):
                names.update(dict.fromkeys(obj))
                try:
                    ColumnMapping.resolve(list(names), columns)
                    break
                except InputError:
                    continue
    return list(names)


def _json_reading_schema(
    sample: list[dict[str, object]],
    columns: dict[str, str] | None,
    path: Path,
    names: list[str] | None = None,
) -> dict[str, DType]:
    """Schema of the columns the release needs (projection: other fields are skipped by the parser).

    The vehicle and timestamp are read as text whatever their JSON type (an epoch number arrives as its digits).
    ``names``: the field names to map, when the sample does not hold them all (:func:`_json_keys`).
    """
    if not sample:
        raise InputError(f"cannot read {path}: no JSON object in its first records")
    names = names or list(dict.fromkeys(k for rec in sample for k in rec))
    m = ColumnMapping.resolve(names, columns)
    schema: dict[str, DType] = dict.fromkeys((m.vehicle, m.timestamp), pl.String)
    for optional in (m.coordinates, m.latitude, m.longitude, m.speed):
        if optional is not None and optional not in schema:
            values = [rec.get(optional) for rec in sample]
            numeric = optional in (m.latitude, m.longitude, m.speed) and all(v is None for v in values)
            # absent from the sample: a number
            schema[optional] = pl.Float64 if numeric else _json_dtype(values)
    pair = schema.get(m.coordinates) if m.coordinates else None
    if isinstance(pair, pl.Struct) and "coordinates" in {f.name for f in pair.fields}:
        schema[m.coordinates] = pl.Struct({"coordinates": pair.to_schema()["coordinates"]})  # type: ignore[index]
    return schema


def _object(line: bytes) -> dict[str, object] | None:
    """``line`` parsed as a JSON object; None for a line that does not parse or holds another JSON value."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _objects(lines: Iterable[bytes]) -> Iterator[dict[str, object]]:
    """The JSON objects among ``lines``, in order (lines that do not parse, and other JSON values, skipped)."""
    return (obj for line in lines if (obj := _object(line)) is not None)


def _sample_records(lines: list[bytes]) -> list[dict[str, object]]:
    return list(itertools.islice(_objects(lines), JSON_SAMPLE_RECORDS))


def _numbered(frame: pl.DataFrame, lines: np.ndarray | range | list[int], ok: bool = True) -> pl.DataFrame:
    return frame.with_columns(
        pl.Series("__line", lines, dtype=pl.UInt32), pl.lit(ok, dtype=pl.Boolean).alias("__record_ok")
    )


def _bulk(data: bytes, schema: dict[str, DType]) -> pl.DataFrame | None:
    """One Polars parse of whole lines with the fixed schema; None when the parser rejects the bytes.

    A struct column (the ITMS ``location``) is read as its JSON text and decoded afterwards with
    ``str.json_decode``: measured on 155 k ITMS records, 0.49 s + 0.17 s against 0.83 s for the nested parse. A value
    that is not an object (``"unknown"``) decodes to null; if decoding fails (a coordinate that is not a number),
    the block is parsed again with the nested schema, where such a value is null for its record only.
    """

    def parse(reading: dict[str, DType]) -> pl.DataFrame | None:
        try:
            return pl.read_ndjson(io.BytesIO(data), schema=reading, ignore_errors=True)
        except pl.exceptions.PolarsError:
            return None

    nested = {k: v for k, v in schema.items() if isinstance(v, pl.Struct)}
    frame = parse({k: pl.String if k in nested else v for k, v in schema.items()})
    if not nested or frame is None:
        return frame
    try:
        return frame.with_columns(
            pl.when(pl.col(k).str.starts_with("{")).then(pl.col(k)).str.json_decode(dtype).alias(k)
            for k, dtype in nested.items()
        )
    except pl.exceptions.PolarsError:
        return parse(schema)


def _trusted(frame: pl.DataFrame | None, n_lines: int) -> bool:
    """A bulk result is trusted when it parsed, has one row per line (no blank line shifted the numbering) and no
    all-null row (Polars reads a line holding a JSON array, number, string or null as an all-null record)."""
    if frame is None or frame.height != n_lines:
        return False
    return not frame.select(pl.all_horizontal(pl.all().is_null()).any()).item()


def _parse_line_by_line(lines: list[bytes], first_line: int, schema: dict[str, DType]) -> list[pl.DataFrame]:
    """A small run of lines the bulk parse rejected: each line checked by Python's ``json``; the objects then parsed
    by Polars in one call (line by line only if even that fails). Blank lines are skipped."""
    good: list[bytes] = []
    good_at: list[int] = []
    failed: list[int] = []
    for number, line in enumerate(lines, start=first_line):
        if not line.strip():
            continue
        if _object(line) is not None:
            good.append(line)
            good_at.append(number)
        else:
            failed.append(number)
    out: list[pl.DataFrame] = []
    frame = _bulk(b"\n".join(good), schema) if good else None
    if frame is not None and frame.height == len(good):
        out.append(_numbered(frame, good_at))
    else:
        for number, line in zip(good_at, good, strict=True):
            single = _bulk(line, schema)
            if single is not None and single.height == 1:
                out.append(_numbered(single, [number]))
            else:
                failed.append(number)
    if failed:
        out.append(_numbered(pl.DataFrame(schema=schema).clear(len(failed)), failed, ok=False))
    return out


def _parse_block(block: bytes, first_line: int, n_lines: int, schema: dict[str, DType]) -> list[pl.DataFrame]:
    """One block of whole lines starting at line ``first_line``: one bulk parse when it is clean.

    Otherwise the block is cut into runs of :data:`JSON_RUN_LINES` lines, each parsed in bulk again; only a run that
    still fails is checked line by line (:func:`_parse_line_by_line`). A malformed line therefore costs one re-parse
    of its block and a Python check of its run, never a line-by-line read of the file; it becomes a failed record
    (``__record_ok`` false, validation reason ``unparseable_record``) with its line number.
    """
    frame = _bulk(block, schema)
    if _trusted(frame, n_lines):
        return [_numbered(frame, np.arange(first_line, first_line + n_lines))]  # type: ignore[arg-type]
    ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10) + 1
    if len(ends) < n_lines:
        ends = np.append(ends, len(block))
    starts = np.concatenate([[0], ends[:-1]])
    out: list[pl.DataFrame] = []
    for lo in range(0, n_lines, JSON_RUN_LINES):
        hi = min(lo + JSON_RUN_LINES, n_lines)
        run = block[int(starts[lo]) : int(ends[hi - 1])]
        part = _bulk(run, schema)
        if _trusted(part, hi - lo):
            out.append(_numbered(part, np.arange(first_line + lo, first_line + hi)))  # type: ignore[arg-type]
        else:
            out.extend(_parse_line_by_line(run.split(b"\n")[: hi - lo], first_line + lo, schema))
    return [pl.concat(out, how="vertical").sort("__line")] if out else []


def _line_blocks(path: Path) -> Iterator[tuple[bytes, int, int]]:
    """(block, number of its first line, number of lines in it); blocks end at a line end, the BOM is dropped.

    The file is memory-mapped, so a block is one copy of its bytes (no re-joining of partial reads).
    """
    if path.stat().st_size == 0:
        return
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        size = len(mm)
        pos = len(_BOM) if mm[: len(_BOM)] == _BOM else 0
        first = 1
        while pos < size:
            cut = mm.rfind(b"\n", pos, min(pos + JSON_BLOCK_BYTES, size))
            if cut < 0:  # a line longer than a block: extend the block to its end
                cut = mm.find(b"\n", pos)
            end = size if cut < 0 else cut + 1
            block = mm[pos:end]
            n = block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
            if block.strip():
                yield block, first, n
            first += n
            pos = end


def _check_utf8(mm: mmap.mmap, path: Path, chunk: int = 8 << 20) -> None:
    """Refuse a file that is not UTF-8 text, naming the first bad line (the same rule as for CSV).

    Only files with a byte >= 0x80 get here (:func:`_line_layout` notes it in its pass): ASCII is UTF-8.
    """
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    size = len(mm)
    for at in range(0, size, chunk):
        try:
            decoder.decode(mm[at : at + chunk], final=at + chunk >= size)
        except UnicodeDecodeError as err:
            line = mm[: at + max(err.start, 0)].count(b"\n") + 1
            raise InputError(
                f"cannot read {path}: line {line:,} is not UTF-8 text; convert the file first (e.g. iconv -f "
                "latin1 -t utf-8 in.jsonl > out.jsonl)"
            ) from None


def _line_layout(mm: mmap.mmap, chunk: int = 8 << 20) -> tuple[int, bool, bool]:
    """(line ends, whether every line is one bare object: starts with ``{`` and ends with ``}``, whether every byte
    is ASCII), by NumPy in chunks.

    A whole-file parse is trusted only on such a layout with one row per line: Arrow's reader skips blank lines and
    splits ``{...}{...}`` into two rows, so a blank line plus a doubled line would keep the count and shift every
    later line number. Costs 1.3 s on 5.3 GB (0.9 s of it the count itself); no copy of the file is made.
    """
    size, total, clean, ascii_only = len(mm), 0, True, True
    for at in range(0, size, chunk):
        n = min(chunk, size - at)
        lo, hi = max(at - 2, 0), min(at + n + 1, size)  # two bytes back (for "}\r\n") and one ahead
        view = np.frombuffer(mm, dtype=np.uint8, count=hi - lo, offset=lo)
        ascii_only = ascii_only and int(view.max()) < 0x80
        ends = np.flatnonzero(view[at - lo : at - lo + n] == 10) + (at - lo)
        total += int(ends.size)
        if clean and ends.size:
            after = ends[ends + 1 < view.size] + 1
            before = ends - 1
            if before[0] < 0:
                clean = False
            else:
                prev = view[before]
                cr = prev == 13
                cr_before = before[cr] - 1
                clean = bool(
                    np.all(view[after] == 123)
                    and np.all(prev[~cr] == 125)
                    and (cr_before.size == 0 or (cr_before.min() >= 0 and np.all(view[cr_before] == 125)))
                )
        del view, ends  # the mapping cannot close while a view exports it
    return total, clean, ascii_only


def _arrow_type(dtype: DType) -> pa.DataType:
    """The Arrow type of a reading-schema type (text, Float64, List(Float64) or a struct of those)."""
    import pyarrow as pa

    if isinstance(dtype, pl.Struct):
        return pa.struct([(f.name, _arrow_type(f.dtype)) for f in dtype.fields])
    if isinstance(dtype, pl.List):
        return pa.list_(_arrow_type(dtype.inner))
    return pa.float64() if dtype == pl.Float64 else pa.string()


def _arrow_block(path: Path) -> int:
    """Arrow's parse block: a sixteenth of the file, 1-32 MB (on 5.3 GB of ITMS JSON: 32 MB 11.8 s, 64 MB 15.0 s,
    4 MB 15.4 s; on 154 MB: 16 MB 0.29 s, 4 MB 0.31-0.37 s)."""
    return int(min(32 << 20, max(1 << 20, path.stat().st_size // 16)))


def _arrow_whole_file(path: Path, schema: dict[str, DType]) -> pl.DataFrame | None:
    """The whole file parsed by Arrow's multi-threaded JSON reader with the fixed schema (other fields skipped).

    Measured on 2 M ITMS records: 1.1-1.3 s against 1.5-1.8 s for Polars' scan. Arrow is strict: a malformed line
    or a value of another type (``"location": "unknown"``, a number where text is expected) fails the whole read,
    and None sends the caller to the lenient Polars paths, which null that value in its record only.
    """
    import pyarrow as pa  # imported here: 0.17 s that only JSON Lines input pays
    import pyarrow.json as pa_json

    arrow_schema = pa.schema([(name, _arrow_type(dtype)) for name, dtype in schema.items()])
    try:
        table = pa_json.read_json(
            path,
            read_options=pa_json.ReadOptions(block_size=_arrow_block(path), use_threads=True),
            parse_options=pa_json.ParseOptions(
                explicit_schema=arrow_schema, unexpected_field_behavior="ignore", newlines_in_values=False
            ),
        )
        frame = pl.from_arrow(table)
    except (pa.ArrowException, pl.exceptions.PolarsError, ValueError):
        return None
    if not isinstance(frame, pl.DataFrame) or frame.schema != pl.Schema(schema):
        return None
    return frame


def _whole_file(path: Path, schema: dict[str, DType]) -> pl.DataFrame | None:
    """The whole file in one multi-threaded parse (Arrow's reader, else one Polars scan: on 600 k ITMS records
    0.51 s against 0.90 s for 16 MB blocks), tried only when every line is one bare object (:func:`_line_layout`)
    and trusted only when it has one row per line and no all-null row; None otherwise (a malformed line makes both
    reject the whole file), and the caller falls back to blocks."""
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        n_ends, clean, ascii_only = _line_layout(mm)
        if not ascii_only:
            _check_utf8(mm, path)
        if mm[: len(_BOM)] == _BOM or not (clean and mm[:1] == b"{" and mm[-1:] in (b"\n", b"}")):
            return None
        n_lines = n_ends + (0 if mm[-1:] == b"\n" else 1)
    frame = _arrow_whole_file(path, schema)
    if frame is None or not _trusted(frame, n_lines):
        try:
            frame = pl.scan_ndjson(path, schema=schema, ignore_errors=True).collect()
        except pl.exceptions.PolarsError:
            return None
    if not _trusted(frame, n_lines):
        return None
    return _numbered(frame, np.arange(1, n_lines + 1))


def read_json_lines(path: Path, columns: dict[str, str] | None = None) -> pl.DataFrame:
    """JSON Lines into a frame of the needed columns, with ``__line`` (line number) and ``__record_ok``.

    The reading schema is chosen from the first records (:func:`_json_reading_schema`; nested ITMS
    ``location.coordinates`` stays a struct), sampled from the file's first megabyte. Fast path: the whole file in
    one multi-threaded parse (:func:`_whole_file`). Otherwise each block of :data:`JSON_BLOCK_BYTES` is parsed by
    Polars in one call; a malformed line is quarantined (``unparseable_record``) by re-parsing only its block
    (:func:`_parse_block`); a value of the wrong type (``"location": "unknown"``) is null in that record only; a
    UTF-8 BOM is skipped. docs/records.md describes the paths.
    """
    sample = _sample_records(_head_lines(path))
    if not sample:  # no whole object in the first megabyte (blank lines, or none): sample the first block
        first = next(_line_blocks(path), None)
        if first is None:
            raise InputError(f"cannot read {path}: the file is empty")
        sample = _sample_records(first[0].split(b"\n", 50_000)[:50_000])
    if not sample:  # no record read: if the file is not UTF-8 text (Latin-1), say so, not "no JSON object"
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            _check_utf8(mm, path)
    try:
        schema = _json_reading_schema(sample, columns, path)
    except InputError:  # a needed field absent from the first records: look for it in the whole file
        schema = _json_reading_schema(sample, columns, path, names=_json_keys(path, columns))
    whole = _whole_file(path, schema)
    if whole is not None:
        return whole
    frames = [f for block, start, n in _line_blocks(path) for f in _parse_block(block, start, n, schema)]
    return _joined(frames, schema)


def _joined(frames: list[pl.DataFrame], schema: dict[str, DType]) -> pl.DataFrame:
    """The parsed pieces of a file in one frame (an empty one of ``schema`` when none holds a row)."""
    frames = [f for f in frames if f.height]
    if not frames:
        return _numbered(pl.DataFrame(schema=schema), [])
    return pl.concat(frames, how="vertical", rechunk=False) if len(frames) > 1 else frames[0]


def _head_lines(path: Path, max_bytes: int = 1 << 20) -> list[bytes]:
    """The whole lines of the file's first ``max_bytes`` (BOM dropped): where the reading schema is sampled."""
    with path.open("rb") as handle:
        data = handle.read(max_bytes).removeprefix(_BOM)
    lines = data.split(b"\n")
    return lines[:-1] if len(data) >= max_bytes - len(_BOM) and len(lines) > 1 else lines


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
    lines = [json.dumps({k: r.get(k) for k in schema}) if isinstance(r, dict) else "null" for r in data]
    blob = "\n".join(lines).encode()
    return _joined(_parse_block(blob, 1, len(lines), schema) if lines else [], schema)


def _scan_one(given: Path, columns: dict[str, str] | None = None) -> tuple[pl.LazyFrame, pl.Schema]:
    """``given`` as a lazy frame, and its schema; a file that cannot be read is refused in one line."""
    kind = input_kind(given)
    path = given if kind == gtfs_realtime.KIND else readable_path(given)
    try:
        if kind == "csv":
            lf = _scan_csv(path)
        elif kind == gtfs_realtime.KIND:
            lf = gtfs_realtime.read_gtfs_realtime(path).lazy()
        elif kind == "parquet":
            lf = _scan_parquet(path)
        elif kind == "jsonl":
            lf = read_json_lines(path, columns).lazy()
        else:
            lf = read_json_array(path, columns).lazy()
        return lf, lf.collect_schema()
    except InputError as err:
        raise InputError(str(err).replace(str(path), str(given))) from None
    except (pl.exceptions.PolarsError, OSError, ValueError) as err:
        raise InputError(f"cannot read {given}: {read_error_line(err)}") from None


def _scan_csv(path: Path) -> pl.LazyFrame:
    """Every column as text (validation parses each row), a short row padded, a bad row's fields null."""
    return pl.scan_csv(path, infer_schema=False, truncate_ragged_lines=True, ignore_errors=True)


def _scan_parquet(path: Path, points: bool = True) -> pl.LazyFrame:
    """A Parquet file as :func:`geoparquet.scan_parquet_points` reads it (``points``) or as it is; a plain file
    whose timestamps carry a fixed-offset zone (``+05:30``, which Polars cannot scan) is read whole, through
    PyArrow, with them relabelled UTC (same instants)."""
    import pyarrow.parquet as pq

    utc = timezones.arrow_schema_in_utc(pq.read_schema(path))
    if utc is None or (points and geoparquet.geo_metadata(path) is not None):
        return geoparquet.scan_parquet_points(path) if points else pl.scan_parquet(path)
    frame = pl.from_arrow(pq.read_table(path, schema=utc))
    assert isinstance(frame, pl.DataFrame)  # a table gives a frame
    return frame.lazy()


def _as_float(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    if dtype == pl.String:
        return expr.str.strip_chars().cast(pl.Float64, strict=False)
    if dtype.is_numeric():
        return expr.cast(pl.Float64)
    return pl.lit(None, dtype=pl.Float64)


def _coordinate_pair(expr: pl.Expr, dtype: DType) -> tuple[pl.Expr, pl.Expr]:
    """(longitude, latitude) from a [lon, lat] pair: nested struct, list, or text like "[72.83, 21.17]"."""
    if isinstance(dtype, pl.Struct):
        fields = {f.name: f.dtype for f in dtype.fields}
        if "coordinates" not in fields:
            return pl.lit(None, pl.Float64), pl.lit(None, pl.Float64)
        return _coordinate_pair(expr.struct.field("coordinates"), fields["coordinates"])
    if isinstance(dtype, (pl.List, pl.Array)):
        pair = (
            expr.cast(pl.List(pl.Float64), strict=False) if isinstance(dtype, pl.List) else expr.arr.to_list()
        )
        lon, lat = (pair.list.get(i, null_on_oob=True).cast(pl.Float64) for i in (0, 1))
        return lon, lat
    if dtype == pl.String:
        parts = expr.str.strip_chars(" []").str.split(",")
        lon, lat = (parts.list.get(i, null_on_oob=True).str.strip_chars() for i in (0, 1))
        return lon.cast(pl.Float64, strict=False), lat.cast(pl.Float64, strict=False)
    return pl.lit(None, pl.Float64), pl.lit(None, pl.Float64)


def _timestamp_text(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """A typed timestamp as ISO 8601 text that keeps its instant: a zone-aware one with its UTC offset."""
    if isinstance(dtype, pl.Datetime):
        fmt = "%Y-%m-%dT%H:%M:%S%.f" + ("%:z" if dtype.time_zone else "")
        return expr.dt.strftime(fmt)
    return expr.cast(pl.String)


def canonical_columns(m: ColumnMapping, schema: pl.Schema) -> list[pl.Expr]:
    """The raw canonical ``vehicle``, ``timestamp_raw``, ``latitude``, ``longitude`` and ``speed_raw`` of a frame
    whose columns ``m`` maps (``schema``: their types); the Spark engine builds its batches with them too."""
    if m.coordinates:
        lon, lat = _coordinate_pair(pl.col(m.coordinates), schema[m.coordinates])
    else:
        assert m.latitude is not None and m.longitude is not None  # ColumnMapping.resolve: pair or both
        lat = _as_float(pl.col(m.latitude), schema[m.latitude])
        lon = _as_float(pl.col(m.longitude), schema[m.longitude])
    ts = pl.col(m.timestamp)
    return [
        pl.col(m.vehicle).cast(pl.String).str.strip_chars().alias("vehicle"),
        (ts if isinstance(schema[m.timestamp], pl.Datetime) else ts.cast(pl.String)).alias("timestamp_raw"),
        lat.alias("latitude"),
        lon.alias("longitude"),
        _as_float(pl.col(m.speed), schema[m.speed]).alias("speed_raw"),
    ]


def scan_records(
    paths: list[Path], columns: dict[str, str] | None = None, *, timezone: str | None = None
) -> tuple[pl.LazyFrame, ColumnMapping, list[Path]]:
    """Scan every input file into the raw canonical frame; all files must map to the same columns.

    ``timezone``: the release's time zone. A zone-aware timestamp column (instants) needs it and is refused
    without it (:func:`urbandp._records.timezones.check_instants`); a GTFS-realtime input's POSIX times are read as
    any epoch number. Raises :class:`InputError` for a missing file, an unreadable file or a missing required
    column.
    """
    files = expand_inputs(paths)
    frames: list[pl.LazyFrame] = []
    mapping: ColumnMapping | None = None
    for index, path in enumerate(files):
        lf, schema = _scan_one(path, columns)
        # a GTFS-realtime input has the canonical names already: a --column map is for the others
        own = input_kind(path) == gtfs_realtime.KIND
        m = ColumnMapping.resolve(list(schema.names()), None if own else columns)
        mapping = mapping or m
        if not own:
            timezones.check_instants(schema[m.timestamp], m.timestamp, timezone)
        tolerant = "__line" in schema
        numbered = lf if tolerant else lf.with_row_index("__line", offset=1)
        # A CSV line with no value in any field (a blank line, or separators only) is not a record: flagged here,
        # counted and dropped by the caller (never quarantined, never silently lost).
        empty = (
            pl.all_horizontal(pl.col(list(schema.names())).is_null())
            if input_kind(path) == "csv"
            else pl.lit(False)
        )
        frames.append(
            numbered.select(
                pl.lit(index, dtype=pl.UInt16).alias("source"),
                pl.col("__line").cast(pl.UInt32).alias("row"),
                (pl.col("__record_ok") if tolerant else pl.lit(True)).alias("record_ok"),
                *canonical_columns(m, schema),
                empty.alias("empty_line"),
            )
        )
    assert mapping is not None
    if len(frames) == 1:
        return frames[0], mapping, files
    dtypes = [f.collect_schema()["timestamp_raw"] for f in frames]
    if len({str(d) for d in dtypes}) > 1:  # files differ: text for all, each read per row by validation
        frames = [
            f.with_columns(_timestamp_text(pl.col("timestamp_raw"), d))
            for f, d in zip(frames, dtypes, strict=True)
        ]
    return pl.concat(frames, how="vertical_relaxed"), mapping, files
