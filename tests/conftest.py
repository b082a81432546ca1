"""Shared fixtures: where ../shared/data is (CI puts shared/ beside the clone), and one SparkSession."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside this checkout")
    return SHARED_DATA


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One SparkSession (local[2]) shared by every Spark test; they skip, saying why, without PySpark or Java."""
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
