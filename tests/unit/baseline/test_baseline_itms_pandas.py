"""The pandas baseline of the benchmark computes the report's true answers (checked by hand and independently)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType

import numpy as np
import polars as pl
import polars_h3 as plh3
import pytest

from urbandp._synth.fleet import generate_fleet, write_fleet

BASELINE_FILE = Path(__file__).resolve().parents[3] / "benchmarks" / "baseline_itms_pandas.py"


@pytest.fixture(scope="module")
def baseline() -> ModuleType:
    spec = importlib.util.spec_from_file_location("baseline_itms_pandas", BASELINE_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


X = (72.83, 21.17)  # centre of Surat
Y = (72.83, 21.25)  # ~9 km north: another resolution-7 cell


def itms(rows: list[tuple[str, str, tuple[float, float] | None, float]]) -> pl.DataFrame:
    """An ITMS-shaped frame from (plate, timestamp, (lon, lat) or None, speed) rows."""
    return pl.DataFrame(
        {
            "id": ["surat-itms-live-eta"] * len(rows),
            "license_plate": [r[0] for r in rows],
            "trip_id": ["t"] * len(rows),
            "route_id": ["R1"] * len(rows),
            "trip_direction": ["UP"] * len(rows),
            "observationDateTime": [r[1] for r in rows],
            "location": [
                {"type": "Point", "coordinates": None if r[2] is None else list(r[2])} for r in rows
            ],
            "speed": [r[3] for r in rows],
        },
        schema_overrides={"location": pl.Struct({"type": pl.String, "coordinates": pl.List(pl.Float64)})},
    )


HAND_ROWS = [
    # day 1: in X, A drives at 10 and 20 (daily mean 15, max 20), B at 40 and 50 (mean 45, max 50); A also in Y.
    ("A", "2021-11-15T09:00:00+05:30", X, 10.0),
    ("A", "2021-11-15T09:00:30+05:30", X, 20.0),
    ("B", "2021-11-15T09:10:00+05:30", X, 40.0),
    ("B", "2021-11-15T09:20:00+05:30", X, 50.0),
    ("A", "2021-11-15T09:40:00+05:30", Y, 30.0),
    # day 2: A at 30 (one exact duplicate), B at 36; everything else below is dropped.
    ("A", "2021-11-16T09:05:00+05:30", X, 30.0),
    ("A", "2021-11-16T09:05:00+05:30", X, 30.0),  # duplicate (vehicle, time)
    ("B", "2021-11-16T09:06:00+05:30", X, 70.0),  # above speed_max 65
    ("B", "2021-11-16T09:07:00+05:30", X, 36.0),
    ("B", "2021-11-16T08:59:59+05:30", X, 5.0),  # before the hour window
    ("C", "2021-11-16T10:00:00+05:30", X, 50.0),  # after the hour window (hours 9-10)
    ("A", "not-a-timestamp", X, 12.0),
    ("A", "2021-11-16T09:30:00+05:30", None, 12.0),  # missing coordinates
    ("A", "2021-11-16T09:31:00+05:30", (72.83, 95.0), 12.0),  # latitude out of range
    ("A", "2021-11-16T09:32:00+05:30", X, float("nan")),
    ("A", "2021-11-16T09:33:00+05:30", X, -3.0),
]


def test_true_answers_match_hand_computation(baseline: ModuleType, tmp_path: Path) -> None:
    path = write_fleet(itms(HAND_ROWS), tmp_path / "hand.parquet")
    out = baseline.baseline_release(path, hours=(9, 10), min_vehicles_per_day=2, seed=1)
    cell_x = plh3.latlng_to_cell(pl.lit(X[1]), pl.lit(X[0]), 7, return_dtype=pl.String)
    x = pl.select(cell_x).item()
    # Unique vehicles per HAT per day: X {A,B} on both days, Y {A} on day 1 only.
    uv = out["unique_vehicles"].sort_values(["date", "h3index"])
    assert sorted(uv["vehicles"].tolist()) == [1, 2, 2]
    # Selection: X sums 2+2 = 4 >= 2 vehicles x 2 days; Y sums 1 < 4.
    speed = out["hat_speed"]
    assert speed["h3_cell"].tolist() == [x] and speed["slot"].tolist() == [9]
    # Query 1: vehicle-day means 15, 45 (day 1), 30, 36 (day 2): (15+45+30+36)/4 = 31.5, N = 4.
    assert speed["true_mean_speed"].iloc[0] == pytest.approx(31.5)
    assert speed["n_vehicle_days"].iloc[0] == 4
    assert speed["epsilon_hat_day"].iloc[0] == pytest.approx(65.0 / 4)
    # Query 2 (limit 35): day 1 B (max 50), day 2 B (max 36): (1 + 1) / 2 days = 1.0; epsilon 1/(2 B).
    speeding = out["hat_speeding"]
    assert speeding["true_vehicles_over_limit_per_day"].iloc[0] == pytest.approx(1.0)
    assert speeding["epsilon_hat_day"].iloc[0] == pytest.approx(0.5)
    # K = 1 released HAT per vehicle-day: epsilon per day 16.25 + 0.5.
    privacy = out["privacy"].iloc[0]
    assert privacy["days"] == 2 and privacy["max_hats_per_vehicle_day"] == 1
    assert privacy["cumulative_epsilon_per_day"] == pytest.approx(16.75)
    # A higher limit: only day 1's B (50 > 40): 1 / 2 days.
    out40 = baseline.baseline_release(path, hours=(9, 10), speed_limit=40.0, min_vehicles_per_day=2)
    assert out40["hat_speeding"]["true_vehicles_over_limit_per_day"].iloc[0] == pytest.approx(0.5)


def test_matches_independent_polars_computation(baseline: ModuleType, tmp_path: Path) -> None:
    fleet = generate_fleet(40, 3, 4, records_per_vehicle_day=250, dirty_fraction=0.01)
    path = write_fleet(fleet, tmp_path / "fleet.parquet")
    out = baseline.baseline_release(path, min_vehicles_per_day=2, seed=2)

    coords = pl.col("location").struct.field("coordinates")
    clean = (
        fleet.with_columns(
            lon=coords.list.get(0, null_on_oob=True),
            lat=coords.list.get(1, null_on_oob=True),
            ts=pl.col("observationDateTime").str.strptime(pl.Datetime, "%Y-%m-%dT%H:%M:%S%:z", strict=False),
            local=pl.col("observationDateTime")
            .str.slice(0, 19)
            .str.strptime(pl.Datetime, "%Y-%m-%dT%H:%M:%S", strict=False),
        )
        .filter(
            pl.col("ts").is_not_null(),
            pl.col("lat").abs() <= 90,
            pl.col("lon").abs() <= 180,
            pl.col("speed").is_between(0, 65),
        )
        .unique(["license_plate", "observationDateTime"], keep="first", maintain_order=True)
        .with_columns(slot=pl.col("local").dt.hour(), date=pl.col("local").dt.date())
        .filter(pl.col("slot").is_between(9, 20))
        .with_columns(cell=plh3.latlng_to_cell("lat", "lon", 7, return_dtype=pl.String))
    )
    days = clean["date"].n_unique()
    daily = clean.group_by("cell", "slot", "date").agg(v=pl.col("license_plate").n_unique())
    ok = daily.group_by("cell", "slot").agg(pl.col("v").sum() >= 2 * days)
    cells = ok.group_by("cell").agg(pl.col("v").all() & (pl.len() == 12)).filter("v")["cell"]
    vd = (
        clean.filter(pl.col("cell").is_in(cells.implode()))
        .group_by("cell", "slot", "date", "license_plate")
        .agg(m=pl.col("speed").mean(), x=pl.col("speed").max())
    )
    expected = (
        vd.group_by("cell", "slot")
        .agg(q1=pl.col("m").mean(), n=pl.len(), q2=(pl.col("x") > 35).sum() / days)
        .sort("cell", "slot")
    )
    assert expected.height >= 12  # the centre is selected

    got_speed = pl.from_pandas(out["hat_speed"]).sort("h3_cell", "slot")
    got_speeding = pl.from_pandas(out["hat_speeding"]).sort("h3_cell", "slot")
    assert got_speed["h3_cell"].to_list() == expected["cell"].to_list()
    assert got_speed["slot"].to_list() == expected["slot"].to_list()
    np.testing.assert_allclose(got_speed["true_mean_speed"].to_numpy(), expected["q1"].to_numpy(), rtol=1e-12)
    assert got_speed["n_vehicle_days"].to_list() == expected["n"].to_list()
    np.testing.assert_allclose(
        got_speeding["true_vehicles_over_limit_per_day"].to_numpy(), expected["q2"].to_numpy(), rtol=1e-12
    )
    # Laplace noise with scale B = 1: |noise| ~ Exp(1), mean 1, sd 1; over n HATs the mean |noise| is within
    # 5/sqrt(n) of 1 (fixed seed, so this only guards against a wrong scale).
    noise = (got_speed["mean_speed"] - got_speed["true_mean_speed"]).abs().to_numpy()
    assert abs(noise.mean() - 1.0) < 5 / math.sqrt(noise.size)
