"""``urbandp release`` refuses a Parquet column of zone-aware instants when the release's time zone is unknown."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest
from urbandp_process import assert_refused, run_urbandp

pytestmark = pytest.mark.system


def test_instants_without_a_zone_are_refused_naming_the_flag(tmp_path: Path) -> None:
    data = tmp_path / "instants.parquet"
    pl.DataFrame(
        {
            "vehicle_id": ["a", "b"],
            "timestamp": [dt.datetime(2024, 1, 10, 13, 15, tzinfo=dt.UTC)] * 2,  # 07:15 in Austin
            "speed": [10.0, 20.0],
            "latitude": [30.26, 30.27],
            "longitude": [-97.74, -97.75],
        }
    ).write_parquet(data)
    out = tmp_path / "rel"
    res = run_urbandp("release", str(data), "--out", str(out), "--epsilon-per-day", "4", "--domain-bbox",
                      "30.2,-97.8,30.3,-97.7", "--start", "2024-01-10", "--end", "2024-01-10")  # fmt: skip
    assert_refused(res, "holds instants (zone-aware, UTC)", others="none")
    assert "give --timezone (an IANA zone" in res.stderr
    assert not out.exists()
