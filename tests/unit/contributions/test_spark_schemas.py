"""The Spark engine's batch schemas are written once, as Spark DDL (the ``mapInArrow`` result type); the Arrow
schema each batch is cast to is derived from it, and must be the one Spark itself maps those types to."""

from __future__ import annotations

import pyarrow as pa
import pytest

from urbandp._contributions.spark_backend import _ARROW_TYPES, KEYED_DDL, MARKED, MARKED_DDL, arrow_schema
from urbandp._contributions.spark_counts import _ddl

arrow_types = pytest.importorskip(
    "pyspark.sql.pandas.types",
    reason="PySpark not installed (pip install 'urbandp[spark]'): Spark tests skip",
)


def spark_ddl(schema: pa.Schema) -> str:
    """The DDL Spark reads from an Arrow schema (its own Arrow-to-SQL type mapping)."""
    return ", ".join(f"{f.name} {arrow_types.from_arrow_type(f.type).simpleString()}" for f in schema)


def test_each_spark_type_is_read_as_the_arrow_type_spark_maps_it_to() -> None:
    assert {name: arrow_types.from_arrow_type(t).simpleString() for name, t in _ARROW_TYPES.items()} == {
        name: name for name in _ARROW_TYPES
    }


@pytest.mark.parametrize("ddl", [MARKED_DDL, KEYED_DDL, _ddl(0), _ddl(3)])
def test_every_batch_schema_round_trips_through_spark(ddl: str) -> None:
    assert spark_ddl(arrow_schema(ddl)) == ddl


def test_the_marked_batch_keeps_its_columns_and_types() -> None:
    assert MARKED.names[:7] == ["kind", "source", "block", "ordinal", "okey", "reason", "n"]
    assert MARKED.field("timestamp").type == pa.timestamp("us") and MARKED.field("slot").type == pa.int16()
    assert arrow_schema(_ddl(2)).names[-3:] == ["reason", "__c0", "__c1"]
