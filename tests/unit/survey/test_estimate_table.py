"""The de-biased estimate of a randomized column (report eq. 6) when no row falls in a declared group."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from urbandp.survey._rr_release import RandomizeSpec, estimate_table


def test_no_row_in_any_declared_group_gives_the_empty_table(tmp_path: Path) -> None:
    """Every row's group is undeclared: the table has the estimate's columns and no row (it raised from
    ``pl.concat`` of nothing)."""
    cats = tmp_path / "models.csv"
    cats.write_text("petrol,Civic\npetrol,Golf\n")
    data = tmp_path / "randomized.csv"
    pl.DataFrame({"model": ["Leaf"], "fuel": ["electric"]}).write_csv(data)
    spec = RandomizeSpec(column="model", categories_file=cats, within="fuel", epsilon=1.0)
    table = estimate_table(data, "randomized.csv", spec)
    assert table.height == 0
    assert table.columns == ["group", "category", "estimate", "ci_low", "ci_high"]
