"""A table handed to a reader as a file: Parquet or CSV by the file name, private, removed on exit."""

from __future__ import annotations

import stat
from pathlib import Path

import polars as pl
import pytest

from urbandp._frames import input_paths, table_file
from urbandp.errors import InputDataError

TABLE = pl.DataFrame({"vehicle": ["a", "b"], "speed": [12.5, 30.0]})


@pytest.mark.parametrize("name", ["records.parquet", "readings.csv"])
def test_the_table_is_written_in_the_format_of_its_name_and_removed_after(name: str) -> None:
    with table_file(TABLE, "data", name) as path:
        assert path.name == name and path.parent.name.startswith(f"urbandp-{name.split('.')[0]}-")
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        back = pl.read_csv(path) if name.endswith(".csv") else pl.read_parquet(path)
        assert back.equals(TABLE)
    assert not path.exists() and not path.parent.exists()


def test_an_empty_table_is_refused_naming_the_parameter() -> None:
    with (
        pytest.raises(InputDataError, match=r"^readings: the table holds no rows$"),
        table_file(TABLE.clear(), "readings", "readings.csv"),
    ):
        pass


def test_input_paths_hands_paths_through_and_tables_as_one_parquet_file(tmp_path: Path) -> None:
    with input_paths(str(tmp_path / "a.csv")) as paths:
        assert paths == [tmp_path / "a.csv"]
    with input_paths(TABLE.lazy()) as paths:
        assert [p.name for p in paths] == ["records.parquet"] and pl.read_parquet(paths[0]).equals(TABLE)
