"""Apache Spark backend for the record-level stage: when a city's records outgrow one machine.

Everything that touches every record runs on Spark executors; only the contributions table (one row per
vehicle-HAT-day, see :mod:`urbandp._contributions.base`) and a few counts come back to the driver, and the
quarantine is written by Spark as Parquet. docs/scale-out.md, section "What runs where", has the table of each step.

Equality with the Polars engine is by construction where it can be: each Arrow batch goes through ``mapInArrow``
into the very Polars functions the in-process pipeline uses (:func:`urbandp._records.validation.validate`,
:func:`urbandp._contributions.polars_backend.window_filter`, :func:`urbandp._grid.h3cells.cell_expr`), so the
quarantine reasons cannot drift. Only the global steps are Spark operators: duplicates (the first copy in input
order kept, the rule of :func:`urbandp._records.validation.later_duplicates`, input order read from Spark's file
metadata and picked by a ``min_by`` hash aggregation, no sort) and the exact aggregation, whose means differ from
Polars only by the floating-point summation order (about 1e-15 relative).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlparse

import polars as pl
import pyarrow as pa

from urbandp._contributions.base import CONTRIBUTION_SCHEMA, ContributionSpec
from urbandp._contributions.polars_backend import hat_keys, keyed_records, window_filter
from urbandp._contributions.spark_session import get_spark
from urbandp._records.readers import SUFFIXES, canonical_columns, expand_inputs, input_kind
from urbandp._records.schema import ColumnMapping
from urbandp._records.timezones import check_parquet_instants
from urbandp._records.validation import RAW_FIELDS, REASONS, ValidationOptions, validate
from urbandp.errors import InputError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame as SparkFrame
    from pyspark.sql import SparkSession

#: reason code of a valid record outside the date/hour window (counted, never a statistic, not quarantined)
OUTSIDE = 100
#: reason code of a later duplicate: the last of :data:`REASONS` (codes 1.. are REASONS in order)
DUPLICATE = len(REASONS)
CORRUPT = "_corrupt_record"
T = TypeVar("T")

_ARROW_TYPES = {
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "double": pa.float64(),
    "string": pa.string(),
    "date": pa.date32(),
    "timestamp_ntz": pa.timestamp("us"),
}


def arrow_schema(ddl: str) -> pa.Schema:
    """The Arrow schema of a Spark DDL of flat columns (``"kind tinyint, n bigint"``): what the batches of a
    ``mapInArrow`` with that result type hold."""
    return pa.schema([(name, _ARROW_TYPES[kind]) for name, kind in (c.split() for c in ddl.split(","))])


# What each Arrow batch becomes. ``kind`` 1 rows are per-batch counts per (file, split, reason); ``kind`` 0 rows
# are the valid records inside the window (with their H3 cell, slot and day) and the rejected ones (with their raw
# values for the quarantine). Records outside the window are only counted.
MARKED_DDL = (
    "kind tinyint, source int, block bigint, ordinal bigint, okey bigint, reason smallint, n bigint, vehicle string, "
    "timestamp timestamp_ntz, cell bigint, slot smallint, day date, speed double, timestamp_raw string, "
    "latitude double, longitude double, speed_raw double"
)
MARKED = arrow_schema(MARKED_DDL)
# The valid records :meth:`SparkBackend.contributions` sends to Spark (RECORDS) and what its batch function,
# :class:`_KeyOnly`, yields (KEYED_DDL).
RECORDS = arrow_schema(
    "vehicle string, timestamp timestamp_ntz, latitude double, longitude double, speed double"
)
KEYED_DDL = "vehicle string, cell bigint, slot smallint, day date, speed double"


def each_batch(
    batches: Iterator[pa.RecordBatch], schema: pa.Schema, keyed: Callable[[pl.DataFrame], pl.DataFrame]
) -> Iterator[pa.RecordBatch]:
    """The body of a ``mapInArrow`` function: ``keyed`` of each non-empty Arrow batch, in the columns of ``schema``
    (null where ``keyed`` gives none) and cast to it."""
    for rb in batches:
        if rb.num_rows:
            frame = pl.from_arrow(rb)
            assert isinstance(frame, pl.DataFrame)
            out = keyed(frame)
            out = out.select(pl.col(n) if n in out.columns else pl.lit(None).alias(n) for n in schema.names)
            yield from out.to_arrow().cast(schema).to_batches()


def split_ordinals(
    frame: pl.DataFrame, file: str, block: str, seen: dict[tuple[Any, int], int]
) -> pl.DataFrame:
    """``frame`` with ``ordinal``, each row's position inside its (``file``, ``block``) split.

    Spark hands a partition's rows of one split in file order, batch after batch; ``seen`` counts the rows of each
    split already passed in this partition (updated here).
    """
    keys = frame.group_by(file, block, maintain_order=True).len()
    base = keys.with_columns(
        pl.Series("_base", [seen.get((f, b), 0) for f, b in zip(keys[file], keys[block], strict=True)])
    ).drop("len")
    for f, b, n in keys.iter_rows():
        seen[(f, b)] = seen.get((f, b), 0) + n
    return (
        frame.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(file, block).alias("_pos"))
        .join(base, on=[file, block], how="left")
        .with_columns((pl.col("_base") + pl.col("_pos")).alias("ordinal"))
    )


def _local_path(uri: str) -> str:
    """The file system path of a ``file:`` URI as Spark reports it (other schemes are kept whole)."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme in ("", "file") else uri


@dataclass(frozen=True)
class RecordKeyer:
    """The per-batch function run inside ``mapInArrow``: canonical columns -> validation -> window -> H3 cell.

    ``files`` are the resolved input paths in input order (their index is ``source``); ``corrupt`` names Spark's
    corrupt-record column (a JSON line that does not parse), when the input has one.
    """

    files: tuple[str, ...]
    mapping: ColumnMapping
    options: ValidationOptions
    window: ContributionSpec
    corrupt: str | None = None
    columns: tuple[str, ...] = ()  # the input's column names; batches arrive with them as __c0, __c1, ...

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        index = {f: i for i, f in enumerate(self.files)}
        seen: dict[tuple[int, int], int] = {}  # rows already passed per (file, split) in this partition
        names = {f"__c{i}": c for i, c in enumerate(self.columns)}
        return each_batch(batches, MARKED, lambda frame: self.mark(frame.rename(names), index, seen))

    def canonical(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The raw canonical columns of :func:`urbandp._records.readers.scan_records`, from one batch."""
        ok = pl.col(self.corrupt).is_null() if self.corrupt else pl.lit(True)
        return frame.select(
            pl.col("source"),
            pl.col("block"),
            pl.col("ordinal"),
            pl.col("okey"),
            ok.alias("record_ok"),
            *canonical_columns(self.mapping, frame.schema),
        )

    def mark(
        self, frame: pl.DataFrame, index: dict[str, int], seen: dict[tuple[int, int], int]
    ) -> pl.DataFrame:
        names = {f: index[_local_path(f)] for f in frame["__file"].unique().to_list()}
        frame = frame.with_columns(
            pl.col("__file").replace_strict(names, return_dtype=pl.Int32).alias("source"),
            pl.col("__block").cast(pl.Int64).alias("block"),
        )
        if "__row" in frame.columns:  # Parquet: Spark knows each row's index in its file
            frame = frame.with_columns(
                pl.lit(0, pl.Int64).alias("block"), pl.col("__row").cast(pl.Int64).alias("ordinal")
            )
            return self.checked(frame, pl.col("ordinal"))
        frame = split_ordinals(frame, "source", "block", seen)
        # text: a row takes at least one byte, so split start + position grows with the row inside a file
        return self.checked(frame, pl.col("block") + pl.col("ordinal"))

    def checked(self, frame: pl.DataFrame, position: pl.Expr) -> pl.DataFrame:
        """Validate, window and key one batch that carries ``source``, ``block`` and ``ordinal``.

        ``okey`` (file index x 2^44 + ``position``) orders records as (file, row) does, in one integer: the
        duplicate rule's "first copy" is then a fixed-width ``min_by``, which Spark aggregates by hashing.
        """
        frame = frame.with_columns(((pl.col("source").cast(pl.Int64) * (1 << 44)) + position).alias("okey"))
        checked = validate(self.canonical(frame).lazy(), self.options)
        inside = window_filter(self.window).fill_null(False)
        reason = (
            pl.when((pl.col("reason_code") == 0) & ~inside)
            .then(pl.lit(OUTSIDE, pl.Int16))
            .otherwise(pl.col("reason_code").cast(pl.Int16))
        )
        rows = checked.with_columns(reason.alias("reason")).collect()
        counts = rows.group_by("source", "block", "reason").agg(pl.len().cast(pl.Int64).alias("n"))
        keys = [
            pl.lit(0, pl.Int8).alias("kind"),
            pl.col("source", "block", "ordinal", "okey", "reason", "vehicle", "timestamp"),
        ]
        valid = rows.filter(pl.col("reason") == 0).select(*keys, *hat_keys(self.window), "speed")
        rejected = rows.filter((pl.col("reason") > 0) & (pl.col("reason") != OUTSIDE)).select(
            *keys,
            pl.col("timestamp_raw").cast(pl.String),
            "latitude",
            "longitude",
            "speed_raw",
        )
        summary = counts.with_columns(pl.lit(1, pl.Int8).alias("kind"))
        return pl.concat([valid, rejected, summary], how="diagonal_relaxed")


def _spark_errors() -> tuple[type[BaseException], ...]:
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    return (PySparkException, Py4JJavaError)


def _input_error(err: BaseException) -> InputError:
    text = str(err).strip().splitlines()
    first = next((line for line in text if line.strip()), type(err).__name__)
    return InputError(f"engine spark: cannot read input: {first[:300]}", parameters="engine")


def run_cached(marked: SparkFrame, finish: Callable[[SparkFrame], T]) -> T:
    """``finish(marked)`` with ``marked`` kept by Spark (in memory, spilled to disk) meanwhile, so that the jobs
    ``finish`` runs read the input once; an error of Spark's becomes one line (:func:`_input_error`)."""
    from pyspark import StorageLevel

    marked = marked.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        return finish(marked)
    except _spark_errors() as err:
        raise _input_error(err) from None
    finally:
        marked.unpersist()


def quarantine_path(scratch: Path | None) -> Path:
    """A new Parquet folder for a quarantine written by Spark: in ``scratch``, else ``$URBANDP_SPARK_SCRATCH``, else
    the temporary folder."""
    root = scratch or Path(os.environ.get("URBANDP_SPARK_SCRATCH") or tempfile.gettempdir())
    return Path(root) / f"urbandp-quarantine-{uuid.uuid4().hex[:12]}.parquet"


def _groups(files: list[Path]) -> list[tuple[str, list[int]]]:
    """Files read by one Spark reader each: CSV grouped by header line, Parquet by schema, JSON by kind.

    Spark reads the files of one reader with one schema (CSV columns even by position), while Polars reads each
    file with its own header; grouping keeps the two equal. Groups come in order of their first file.
    """
    groups: dict[tuple[str, str], list[int]] = {}
    for i, path in enumerate(files):
        kind = SUFFIXES[path.suffix.lower()]
        key = ""
        try:
            if kind == "csv":
                with path.open(encoding="utf-8", errors="replace") as handle:
                    key = handle.readline().strip()
            elif kind == "parquet":
                import pyarrow.parquet as pq

                key = ",".join(pq.read_schema(path).names)
        except (OSError, pa.ArrowException) as err:
            raise InputError(f"cannot read {path}: {str(err).splitlines()[0]}") from None
        groups.setdefault((kind, key), []).append(i)
    return [(kind, idx) for (kind, _), idx in groups.items()]


def _read(spark: SparkSession, kind: str, paths: list[str]) -> SparkFrame:
    reader = spark.read
    if kind == "csv":
        # all columns as text (as Polars reads them), RFC 4180 quotes ("" inside a quoted field)
        return reader.options(header=True, inferSchema=False, escape='"', mode="PERMISSIVE").csv(paths)
    if kind in ("jsonl", "json"):
        return reader.options(
            mode="PERMISSIVE", columnNameOfCorruptRecord=CORRUPT, multiLine=kind == "json"
        ).json(paths)
    return reader.parquet(*paths)


def _narrow(sdf: SparkFrame, name: str) -> Any:
    """Column ``name``; of a nested ITMS location only its ``coordinates`` list (what the validation reads)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    column = F.col(f"`{name}`")
    dtype = sdf.schema[name].dataType
    if isinstance(dtype, StructType) and "coordinates" in dtype.fieldNames():
        return column.getField("coordinates")
    return column


def _to_polars(frame: SparkFrame) -> pl.DataFrame:
    """Collect a (small) Spark result to the driver through Arrow."""
    to_arrow = getattr(frame, "toArrow", None)
    if to_arrow is not None:  # PySpark 4
        out = pl.from_arrow(to_arrow())
    else:  # PySpark 3.5
        out = pl.from_pandas(frame.toPandas())
    assert isinstance(out, pl.DataFrame)
    return out


def _aggregate(kept: SparkFrame, spec: ContributionSpec) -> SparkFrame:
    """Per (cell, slot, day, vehicle): n_records, mean of speeds clipped to [0, U], max speed (ITMS IV C, D)."""
    from pyspark.sql import functions as F

    clipped = F.least(F.greatest(F.col("speed"), F.lit(0.0)), F.lit(float(spec.speed_max)))
    aggs = [
        F.count(F.lit(1)).alias("n_records"),
        F.avg(clipped).alias("mean_speed"),
        F.max("speed").alias("max_speed"),
    ]
    if "dups" in kept.columns:
        aggs.append(F.sum("dups").alias("dups"))
    if spec.keep_speeds:  # in input order, as Polars lists them
        aggs.append(F.array_sort(F.collect_list(F.struct(F.col("o"), clipped.alias("v")))).alias("_s"))
    out = kept.groupBy("cell", "slot", "day", "vehicle").agg(*aggs)
    if spec.keep_speeds:
        out = out.withColumn("speeds", F.transform("_s", lambda x: x["v"])).drop("_s")
    return out


def _typed(contrib: pl.DataFrame, keep_speeds: bool) -> pl.DataFrame:
    cols = [pl.col(c).cast(t) for c, t in CONTRIBUTION_SCHEMA.items()]
    if keep_speeds:
        cols.append(pl.col("speeds").cast(pl.List(pl.Float64)))
    return contrib.select(cols).sort("cell", "slot", "day", "vehicle")


@dataclass
class SparkLoad:
    """What the Spark record-level stage hands back to the driver: counts, the contributions, the quarantine path."""

    contributions: pl.DataFrame
    records_in: int
    reasons: dict[str, int]
    records_outside_window: int
    files: list[Path]
    mapping: ColumnMapping
    quarantine_parquet: Path


class SparkBackend:
    """The record-level stage on Apache Spark (``--engine spark``); ``master`` defaults to ``local[*]``."""

    name = "spark"

    def __init__(self, master: str | None = None, scratch: Path | None = None) -> None:
        self.master = master
        self.scratch = scratch

    @property
    def spark(self) -> SparkSession:
        return get_spark(self.master)

    def contributions(
        self, records: pl.DataFrame | pl.LazyFrame | Any, spec: ContributionSpec
    ) -> pl.DataFrame:
        """The :class:`ContributionBackend` seam: canonical valid records (``vehicle``, ``timestamp``, ``latitude``,
        ``longitude``, ``speed``; a Polars frame or a Spark DataFrame) -> contributions computed on Spark.

        Like the Polars backend this neither validates nor removes duplicates; :meth:`load` does the whole stage.
        """
        from pyspark.sql import functions as F

        frame: Any = records
        if isinstance(records, (pl.DataFrame, pl.LazyFrame)):
            cols = records.lazy().select("vehicle", "timestamp", "latitude", "longitude", "speed").collect()
            table = cols.to_arrow().cast(RECORDS)
            spark = self.spark
            frame = spark.createDataFrame(table if spark.version >= "4" else table.to_pandas())
        keyed = frame.mapInArrow(_KeyOnly(spec), KEYED_DDL).withColumn("o", F.lit(0))
        return _typed(_to_polars(_aggregate(keyed, spec)), spec.keep_speeds)

    def load(
        self,
        paths: list[Path],
        columns: dict[str, str] | None = None,
        options: ValidationOptions | None = None,
        window: ContributionSpec | None = None,
    ) -> SparkLoad:
        """Read, validate, window, key, de-duplicate and aggregate every input file on Spark.

        ``window`` is the release's window (its dates may be open: then the release derives them from the data).
        Raises :class:`InputError` for unusable input, as :func:`urbandp.fleet._pipeline.load_records` does.
        """
        spark = self.spark  # first: says plainly when PySpark or Java is missing
        from pyspark.sql import functions as F

        files = expand_inputs(list(paths))
        if any(input_kind(f) == "gtfs-realtime" for f in files):
            raise InputError(
                "engine spark reads CSV, JSON, JSON Lines and Parquet; GTFS-realtime snapshots are read by the "
                "default engine",
                parameters="engine",
            )
        options = options or ValidationOptions()
        # a zone-aware timestamp column needs the release's zone, as on the default engine
        check_parquet_instants([f for f in files if input_kind(f) == "parquet"], columns, options.timezone)
        if options.latest_plausible is None:  # one "now" for every executor
            options = dataclasses.replace(options, latest_plausible=options.plausible_until)
        window = window or ContributionSpec()
        resolved = tuple(str(f.resolve()) for f in files)
        parts = []
        first_mapping: ColumnMapping | None = None
        errors = _spark_errors()
        try:
            for kind, idx in _groups(files):
                sdf = _read(spark, kind, [resolved[i] for i in idx])
                names = [c for c in sdf.columns if c != CORRUPT]
                mapping = ColumnMapping.resolve(names, columns)
                first_mapping = first_mapping or mapping
                corrupt = CORRUPT if CORRUPT in sdf.columns else None
                # only the mapped columns cross from the JVM to Python (the transfer is the costliest step)
                used = [c for c in dict.fromkeys([*dataclasses.astuple(mapping), corrupt]) if c is not None]
                keyer = RecordKeyer(resolved, mapping, options, window, corrupt, tuple(used))
                # columns by position (names such as "location.coordinates" would be read as struct paths)
                meta = sdf.select(
                    *[_narrow(sdf, c).alias(f"__c{i}") for i, c in enumerate(used)],
                    F.col("_metadata.file_path").alias("__file"),
                    F.col("_metadata.file_block_start").alias("__block"),
                    *([F.col("_metadata.row_index").alias("__row")] if kind == "parquet" else []),
                )
                parts.append(meta.mapInArrow(keyer, MARKED_DDL))
        except errors as err:
            raise _input_error(err) from None
        assert first_mapping is not None
        marked = reduce(lambda a, b: a.unionByName(b), parts)
        return run_cached(marked, lambda m: self._finish(m, files, first_mapping, window))

    def _finish(
        self, marked: SparkFrame, files: list[Path], mapping: ColumnMapping, window: ContributionSpec
    ) -> SparkLoad:
        """One collect (counts, contributions, the first copy of each duplicated record), then the quarantine."""
        from pyspark.sql import functions as F

        valid = marked.filter((F.col("kind") == 0) & (F.col("reason") == 0))
        okey = F.col("okey")
        copies = valid.groupBy("vehicle", "timestamp").agg(
            F.count(F.lit(1)).alias("copies"),
            F.min(okey).alias("o"),
            *(F.min_by(c, okey).alias(c) for c in ("cell", "slot", "day", "speed")),
        )
        kept = copies.select(
            "vehicle", (F.col("copies") - 1).alias("dups"), "cell", "slot", "day", "speed", "o"
        )
        stats_part = (
            marked.filter(F.col("kind") == 1).groupBy("source", "block", "reason").agg(F.sum("n").alias("n"))
        )
        firsts_part = copies.filter(F.col("copies") > 1).select(
            "vehicle", "timestamp", F.col("o").alias("first")
        )
        # three small results in one job: the aggregation of `copies` is shared (Spark reuses the exchange)
        parts = [_aggregate(kept, window), stats_part, firsts_part]
        tagged = [p.withColumn("_part", F.lit(i)) for i, p in enumerate(parts)]
        got = _to_polars(reduce(lambda x, y: x.unionByName(y, allowMissingColumns=True), tagged))
        collected = got.filter(pl.col("_part") == 0)
        stats = got.filter(pl.col("_part") == 1).select("source", "block", "reason", "n")
        firsts = got.filter(pl.col("_part") == 2).select("vehicle", "timestamp", "first")
        records_in = int(stats["n"].sum()) if stats.height else 0
        if records_in == 0:
            raise InputError("input holds no records")
        by_reason = dict(stats.group_by("reason").agg(pl.col("n").sum()).iter_rows())
        duplicates = int(collected["dups"].sum()) if collected.height else 0
        contributions = _typed(collected, window.keep_speeds)
        reasons = {r: int(by_reason.get(code, 0)) for code, r in enumerate(REASONS, start=1)}
        reasons["duplicate"] = duplicates
        path = self._write_quarantine(marked, valid, firsts, stats, files)
        return SparkLoad(
            contributions=contributions,
            records_in=records_in,
            reasons=reasons,
            records_outside_window=int(by_reason.get(OUTSIDE, 0)),
            files=files,
            mapping=mapping,
            quarantine_parquet=path,
        )

    def _write_quarantine(
        self,
        marked: SparkFrame,
        valid: SparkFrame,
        firsts: pl.DataFrame,
        stats: pl.DataFrame,
        files: list[Path],
    ) -> Path:
        """Rejected rows and later duplicates, with their reason and 1-based row in their file, as Parquet.

        ``firsts`` (collected: one row per duplicated (vehicle, timestamp)) is broadcast to find the later copies
        among the cached valid records without a shuffle.
        """
        from pyspark.sql import functions as F

        spark = self.spark
        rejected = marked.filter((F.col("kind") == 0) & (F.col("reason") > 0)).select(
            "source", "block", "ordinal", "reason", *RAW_FIELDS
        )
        if firsts.height:
            firsts_sdf = spark.createDataFrame(
                firsts.to_pandas(), "vehicle string, timestamp timestamp_ntz, first bigint"
            )
            later = F.col("okey") > F.col("first")
            dups = (
                valid.join(F.broadcast(firsts_sdf), ["vehicle", "timestamp"])
                .filter(later)
                .select(
                    "source",
                    "block",
                    "ordinal",
                    F.lit(DUPLICATE).cast("smallint").alias("reason"),
                    "vehicle",
                    F.date_format("timestamp", "yyyy-MM-dd'T'HH:mm:ss").alias("timestamp_raw"),
                    F.col("speed").alias("speed_raw"),
                    F.lit(None).cast("double").alias("latitude"),
                    F.lit(None).cast("double").alias("longitude"),
                )
            )
            rejected = rejected.unionByName(dups)
        # rows before each split: the splits of a file in byte order, their sizes from the per-batch counts
        sizes = stats.group_by("source", "block").agg(pl.col("n").sum()).sort("source", "block")
        offsets = sizes.with_columns(
            (pl.col("n").cum_sum().over("source") - pl.col("n")).alias("offset")
        ).select(
            pl.col("source").cast(pl.Int32), pl.col("block").cast(pl.Int64), pl.col("offset").cast(pl.Int64)
        )
        offsets_sdf = spark.createDataFrame(offsets.to_pandas(), "source int, block bigint, offset bigint")
        names = F.array(*[F.lit(f.name) for f in files])
        reason_names = F.array(*[F.lit(r) for r in REASONS])
        quarantine = (
            rejected.join(F.broadcast(offsets_sdf), ["source", "block"])
            .select(
                F.col("source").alias("_s"),
                F.element_at(names, F.col("source") + 1).alias("source"),
                (F.col("offset") + F.col("ordinal") + 1).alias("row"),
                F.element_at(reason_names, F.col("reason").cast("int")).alias("reason"),
                *RAW_FIELDS,
            )
            # no global sort (a sampling job): readers sort if they need to
            .sortWithinPartitions("_s", "row")
            .drop("_s")
        )
        path = quarantine_path(self.scratch)
        quarantine.write.mode("overwrite").parquet(str(path))
        return path


@dataclass(frozen=True)
class _KeyOnly:
    """Batch function for :meth:`SparkBackend.contributions`: the window, then H3 cell, slot and day."""

    spec: ContributionSpec

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return each_batch(batches, arrow_schema(KEYED_DDL), self.key)

    def key(self, frame: pl.DataFrame) -> pl.DataFrame:
        dtype = frame.schema["timestamp"]
        ts = pl.col("timestamp")
        if isinstance(dtype, pl.Datetime) and dtype.time_zone:  # Spark's session zone is UTC
            ts = ts.dt.replace_time_zone(None)
        # the cell is always computed here, at the spec's resolution (a ``cell`` column of the input is not reused)
        records = frame.lazy().drop("cell", strict=False).with_columns(ts.cast(pl.Datetime("us")))
        return keyed_records(records, self.spec).collect()
