"""The record-level stage: one row per (cell, slot, day, vehicle), the only stage that touches every record."""

from urbandp._contributions.base import ContributionBackend, ContributionSpec
from urbandp._contributions.polars_backend import PolarsBackend

__all__ = ["ContributionBackend", "ContributionSpec", "PolarsBackend", "get_backend"]


def get_backend(name: str = "polars") -> ContributionBackend:
    """The named backend: ``polars`` (in-process) or ``spark`` (Apache Spark, the ``spark`` extra)."""
    if name == "polars":
        return PolarsBackend()
    if name == "spark":
        from urbandp._contributions.spark_backend import SparkBackend

        return SparkBackend()
    from urbandp.errors import InputError

    raise InputError(f"unknown contributions backend '{name}' (available: polars, spark)")
