"""The count-table release's per-event stage on Apache Spark (``urbandp counts release --engine spark``).

Same result as :func:`urbandp.counts._aggregate.joint_from_events`: each Arrow batch is parsed and placed in the
public domain by the same Polars code (timestamp to local wall-clock time, day and time bin, the ``_index_rows``
lookup of day, tap, (mode, location) and bin, with the same quarantine reasons), then the global step, card-day
bounding, runs as Spark window functions: a card's first ``k`` taps of a day, then at most ``m`` of them per
cell, "first" in (timestamp, input order), the order :mod:`urbandp.counts._aggregate` sorts by. This truncation is
the stable transformation that the sensitivities of :mod:`urbandp.counts._units` assume. Only the non-zero cells
of the joint (index, count) come back to the driver; the quarantine is written by Spark as Parquet.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from urbandp._contributions.spark_backend import (
    _input_error,
    _read,
    _spark_errors,
    _to_polars,
    arrow_schema,
    each_batch,
    quarantine_path,
    run_cached,
    split_ordinals,
)
from urbandp._contributions.spark_session import get_spark
from urbandp.counts._aggregate import EVENT_COLUMNS, JointCounts, place_events
from urbandp.counts._domain import CountDomain
from urbandp.counts._sparse import SparseJoint
from urbandp.counts._units import PrivacyUnit
from urbandp.errors import InputError


@dataclass
class SparkJointCounts(JointCounts):
    """:class:`JointCounts` whose quarantine stays on Spark's side: written as Parquet, counted per reason here."""

    reasons: dict[str, int] = field(default_factory=dict)
    quarantine_parquet: Path | None = None

    @property
    def quarantined_rows(self) -> int:
        return sum(self.reasons.values())


def _ddl(n_columns: int) -> str:
    """What each Arrow batch becomes: ``kind`` 1 rows count a batch's rows; ``kind`` 0 rows are the events placed in
    the domain (``cell``) and the rejected ones (``reason``), with the raw columns ``__c0``, ``__c1``, ..."""
    return (
        "kind tinyint, block bigint, ordinal bigint, n bigint, card string, day string, ts timestamp_ntz, "
        "cell bigint, reason string" + "".join(f", __c{i} string" for i in range(n_columns))
    )


@dataclass(frozen=True)
class EventKeyer:
    """Per-batch function inside ``mapInArrow``: the row-wise part of ``joint_from_events`` on one batch."""

    columns: tuple[str, ...]
    domain: CountDomain
    unit: PrivacyUnit

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        seen: dict[tuple[str, int], int] = {}
        return each_batch(batches, arrow_schema(_ddl(len(self.columns))), lambda frame: self.key(frame, seen))

    def key(self, frame: pl.DataFrame, seen: dict[tuple[str, int], int]) -> pl.DataFrame:
        raw = [f"__c{i}" for i in range(len(self.columns))]
        frame = split_ordinals(frame, "__file", "__block", seen).with_columns(
            pl.col("__block").alias("block")
        )
        df = frame.rename(dict(zip(raw, self.columns, strict=True)))
        df = df.with_columns(pl.col(c).alias(r) for c, r in zip(self.columns, raw, strict=True))
        good, bad = place_events(df, self.domain, self.unit)
        card = pl.col("card_id").cast(pl.String) if "card_id" in good.columns else pl.lit(None, pl.String)
        good_rows = good.select(
            pl.lit(0, pl.Int8).alias("kind"),
            "block",
            "ordinal",
            card.alias("card"),
            "day",
            pl.col("_ts").alias("ts"),
            "cell",
        )
        bad_rows = bad.select(
            pl.lit(0, pl.Int8).alias("kind"),
            "block",
            "ordinal",
            "reason",
            *(pl.col(r).cast(pl.String) for r in raw),
        )
        summary = pl.DataFrame({"kind": [1], "n": [frame.height]}, schema={"kind": pl.Int8, "n": pl.Int64})
        return pl.concat([good_rows, bad_rows, summary], how="diagonal_relaxed")


def joint_from_events_spark(
    path: Path, domain: CountDomain, unit: PrivacyUnit, master: str | None = None, scratch: Path | None = None
) -> SparkJointCounts:
    """Events ``mode, timestamp, tap, location[, card_id]`` (CSV or Parquet) -> sparse joint counts, on Spark."""
    if not path.is_file():
        raise InputError(f"input file not found: {path}")
    spark = get_spark(master)  # first: says plainly when PySpark or Java is missing
    from pyspark.sql import functions as F

    errors = _spark_errors()
    try:
        kind = "parquet" if path.suffix.lower() in (".parquet", ".pq") else "csv"
        sdf = _read(spark, kind, [str(path.resolve())])
        columns = tuple(sdf.columns)
        needed = EVENT_COLUMNS + (("card_id",) if unit.kind == "card-day" else ())
        missing = [c for c in needed if c not in columns]
        if missing:
            raise InputError(
                f"event input is missing column(s) {', '.join(missing)} (has {', '.join(columns)})"
            )
        meta = sdf.select(
            *[F.col(f"`{c}`").alias(f"__c{i}") for i, c in enumerate(columns)],
            F.col("_metadata.file_path").alias("__file"),
            F.col("_metadata.file_block_start").alias("__block"),
        )
        marked = meta.mapInArrow(EventKeyer(columns, domain, unit), _ddl(len(columns)))
    except errors as err:
        raise _input_error(err) from None
    return run_cached(marked, lambda m: _finish(m, columns, domain, unit, scratch))


def _finish(
    marked: object, columns: tuple[str, ...], domain: CountDomain, unit: PrivacyUnit, scratch: Path | None
) -> SparkJointCounts:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    n_input = int(marked.filter(F.col("kind") == 1).agg(F.sum("n")).collect()[0][0] or 0)  # type: ignore[attr-defined]
    if n_input == 0:
        raise InputError("input has no rows")
    rows = marked.filter(F.col("kind") == 0)  # type: ignore[attr-defined]
    good = rows.filter(F.col("reason").isNull())
    if unit.kind == "card-day":
        order = [F.col("ts"), F.col("block"), F.col("ordinal")]
        per_day = Window.partitionBy("card", "day").orderBy(*order)
        good = good.withColumn("_r", F.row_number().over(per_day)).filter(F.col("_r") <= unit.max_events)
        per_cell = Window.partitionBy("card", "day", "cell").orderBy(*order)
        good = good.withColumn("_c", F.row_number().over(per_cell)).filter(F.col("_c") <= unit.max_per_cell)
    cells = _to_polars(good.groupBy("cell").agg(F.count(F.lit(1)).alias("w"))).sort("cell")
    bad = rows.filter(F.col("reason").isNotNull())
    reasons = {str(r): int(n) for r, n in bad.groupBy("reason").count().collect()}
    n_good = int(cells["w"].sum()) if cells.height else 0
    sparse = SparseJoint(
        domain.shape,
        cells["cell"].to_numpy().astype(np.int64) if cells.height else np.zeros(0, np.int64),
        cells["w"].to_numpy().astype(np.int64) if cells.height else np.zeros(0, np.int64),
    )
    out = quarantine_path(scratch)
    bad.orderBy("block", "ordinal").select(
        *[F.col(f"__c{i}").alias(c) for i, c in enumerate(columns)], "reason"
    ).write.mode("overwrite").parquet(str(out))
    n_bad = sum(reasons.values())
    empty = pl.DataFrame(schema={**{c: pl.String for c in columns}, "reason": pl.String})
    truncated = n_input - n_bad - n_good if unit.kind == "card-day" else 0
    return SparkJointCounts(sparse, empty, n_input, truncated, reasons=reasons, quarantine_parquet=out)
