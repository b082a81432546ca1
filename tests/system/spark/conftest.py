"""One SparkSession (local[2]) shared by every Spark test; the tests skip, saying why, without PySpark or Java."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    pytest.importorskip(
        "pyspark", reason="PySpark not installed (pip install 'urbandp[spark]'): Spark tests skip"
    )
    from urbandp.contributions.spark_session import get_spark, spark_missing_reason

    reason = spark_missing_reason()
    if reason is not None:
        pytest.skip(f"Spark cannot run here: {reason}")
    session = get_spark("local[2]")
    session.conf.set("spark.sql.shuffle.partitions", "2")  # small test data: few tasks per stage
    return session
