"""Synthetic ITMS fleet: schema, formats, determinism and the realism the demo and benchmarks rely on."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from urbandp._synth.cli import app
from urbandp._synth.fleet import (
    DIRTY_KINDS,
    FleetSpec,
    generate_fleet,
    write_fleet,
    write_fleet_days,
)
from urbandp.errors import InputError

SCHEMA = {
    "id": pl.String,
    "license_plate": pl.String,
    "trip_id": pl.String,
    "route_id": pl.String,
    "trip_direction": pl.String,
    "observationDateTime": pl.String,
    "location": pl.Struct({"type": pl.String, "coordinates": pl.List(pl.Float64)}),
    "speed": pl.Float64,
}


@pytest.fixture(scope="module")
def fleet() -> pl.DataFrame:
    return generate_fleet(vehicles=80, days=4, seed=11, records_per_vehicle_day=300, dirty_fraction=0.0)


def with_parsed(df: pl.DataFrame) -> pl.DataFrame:
    """Add parsed local time, lon, lat (null where unparseable / missing)."""
    coords = pl.col("location").struct.field("coordinates")
    return df.with_columns(
        ts=pl.col("observationDateTime").str.strptime(pl.Datetime, "%Y-%m-%dT%H:%M:%S%:z", strict=False),
        local=pl.col("observationDateTime")
        .str.slice(0, 19)
        .str.strptime(pl.Datetime, "%Y-%m-%dT%H:%M:%S", strict=False),
        lon=coords.list.get(0, null_on_oob=True),
        lat=coords.list.get(1, null_on_oob=True),
    )


def test_schema_and_values(fleet: pl.DataFrame) -> None:
    assert fleet.columns == list(SCHEMA)  # the ITMS shape, in order
    assert dict(fleet.schema) == SCHEMA
    parsed = with_parsed(fleet)
    assert parsed["ts"].null_count() == 0
    assert set(fleet["trip_direction"].unique()) == {"UP", "DN"}
    assert set(fleet["id"].unique()) == {"surat-itms-live-eta"}
    assert fleet["license_plate"].str.contains(r"^GJ05[A-Z]{2}\d{4}$").all()
    assert fleet["license_plate"].n_unique() <= 80
    assert fleet["observationDateTime"].str.ends_with("+05:30").all()
    assert fleet["location"].struct.field("type").eq("Point").all()
    # A Surat-like city about 15 km across: every fix within ~9 km of the centre (21.17N, 72.83E).
    km_x = (parsed["lon"] - 72.83) * 111.32 * math.cos(math.radians(21.17))
    km_y = (parsed["lat"] - 21.17) * 111.32
    assert float((km_x**2 + km_y**2).sqrt().max()) < 9.0
    hours = parsed["local"].dt.hour()
    assert hours.min() >= 6 and hours.max() <= 21
    assert fleet["speed"].min() >= 0.0
    # No natural duplicates: (vehicle, timestamp) is a key when there are no dirty rows.
    assert fleet.select("license_plate", "observationDateTime").is_duplicated().sum() == 0


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", ".json", ".csv"])
@pytest.mark.parametrize("streamed", [False, True])
def test_formats_round_trip(tmp_path: Path, suffix: str, streamed: bool) -> None:
    spec = FleetSpec(vehicles=6, days=2, seed=5, records_per_vehicle_day=40, dirty_fraction=0.05)
    df = generate_fleet(6, 2, 5, records_per_vehicle_day=40, dirty_fraction=0.05)
    path = tmp_path / f"fleet{suffix}"
    if streamed:
        write_fleet_days(spec, path)
    else:
        write_fleet(df, path)
    # JSON has no NaN: NaN speeds come back as null.
    expected_json = df.with_columns(pl.col("speed").fill_nan(None))
    if suffix == ".parquet":
        back = pl.read_parquet(path)
        assert back.equals(df)
    elif suffix == ".jsonl":
        back = pl.read_ndjson(path, schema=SCHEMA)
        assert back.equals(expected_json)
    elif suffix == ".json":
        rows = json.loads(path.read_text())
        assert isinstance(rows, list) and len(rows) == df.height
        assert set(rows[0]) == set(SCHEMA)
        assert rows[0]["location"]["type"] == "Point" and len(rows[0]["location"]["coordinates"]) == 2
        assert pl.DataFrame(rows, schema=SCHEMA).equals(expected_json)
    else:
        back = pl.read_csv(path, schema_overrides={"speed": pl.Float64})
        assert back.columns == [*list(SCHEMA)[:6], "location.coordinates", "speed"]
        coords = back["location.coordinates"].str.json_decode(pl.List(pl.Float64))
        assert coords.equals(df["location"].struct.field("coordinates"), check_names=False)
        assert back.drop("location.coordinates").equals(df.drop("location"))
        first = back["location.coordinates"].drop_nulls()[0]
        assert first.startswith("[72.") and ", 21." in first


def test_deterministic_by_seed() -> None:
    a = generate_fleet(12, 3, 42, records_per_vehicle_day=80)
    b = generate_fleet(12, 3, 42, records_per_vehicle_day=80)
    c = generate_fleet(12, 3, 43, records_per_vehicle_day=80)
    assert a.equals(b)
    assert not a.equals(c)
    # Each day has its own stream: a 2-day fleet is the first rows of the 3-day fleet with the same seed.
    two = generate_fleet(12, 2, 42, records_per_vehicle_day=80)
    assert a.head(two.height).equals(two)


def test_dirty_fraction_within_binomial_tolerance() -> None:
    p = 0.02
    df = with_parsed(generate_fleet(40, 3, 9, records_per_vehicle_day=400, dirty_fraction=p))
    n = df.height
    bad_ts = df["ts"].is_null()
    bad_coords = df["lon"].is_null() | df["lat"].is_null() | (df["lat"].abs() > 90) | (df["lon"].abs() > 180)
    speed = df["speed"]
    negative = speed < 0
    nan = speed.is_nan()
    absurd = speed > 200
    key = pl.struct("license_plate", "observationDateTime")
    duplicate = df.select(~key.is_first_distinct()).to_series()
    kinds = [bad_ts, bad_coords, negative, nan, absurd, duplicate]
    for kind in kinds:
        assert kind.sum() > 0
    table = pl.DataFrame([k.alias(f"k{i}") for i, k in enumerate(kinds)])
    flagged = table.select(pl.any_horizontal(pl.all())).to_series()
    # Each dirty row carries exactly one detectable defect and clean rows carry none, so the number of flagged
    # rows is Binomial(n, p): accept within 4 standard deviations (two-sided miss probability ~6e-5).
    sd = math.sqrt(n * p * (1 - p))
    assert abs(int(flagged.sum()) - n * p) < 4 * sd
    assert len(DIRTY_KINDS) == 7


def test_records_per_vehicle_day_uneven(fleet: pl.DataFrame) -> None:
    per = with_parsed(fleet).group_by("license_plate", pl.col("local").dt.date().alias("day")).len()
    counts = per["len"].to_numpy()
    # Records per vehicle-day = 300 x vehicle rate (lognormal sigma 0.45, rescaled to mean exactly 1 over the
    # fleet) x day factor (lognormal sigma 0.25, mean 1). Over ~300 vehicle-days the mean is 300 up to the day
    # factor's sampling error (300 x 0.25 / sqrt(300) ~ 4.4) plus the unequal weights of days off: 45 is > 5 sd.
    assert abs(counts.mean() - 300) < 45
    # Coefficient of variation of the product: sqrt(exp(0.45^2) exp(0.25^2) - 1) ~ 0.55; require clearly > 0.3.
    assert counts.std() / counts.mean() > 0.3
    by_vehicle = per.group_by("license_plate").agg(pl.col("len").mean())["len"]
    assert by_vehicle.max() / by_vehicle.min() > 2.0
    # The same vehicle also varies by day (day factor lognormal 0.25: within-vehicle CV ~ 0.25).
    within = per.group_by("license_plate").agg(cv=pl.col("len").std() / pl.col("len").mean())["cv"]
    assert within.median() > 0.1


def test_peak_hours_slower(fleet: pl.DataFrame) -> None:
    hour = with_parsed(fleet)["local"].dt.hour()
    peak = hour.is_between(8, 9) | hour.is_between(17, 19)
    speeds = fleet["speed"]
    peak_mean = speeds.filter(peak).mean()
    off_mean = speeds.filter(~peak).mean()
    # Model: peak speed = 0.6 x cruise with 20% stops vs 10% off-peak: expected ratio ~0.6*0.8/0.9 ~ 0.53 before
    # speeders; allow wide margin.
    assert peak_mean < 0.75 * off_mean


def test_speeders_present(fleet: pl.DataFrame) -> None:
    fast = fleet.filter(pl.col("speed") > 60)["license_plate"].n_unique()
    # round(3% of 80) = 2 speeding vehicles; nobody else exceeds the 55 km/h cap.
    assert fast == 2
    assert fleet.filter(pl.col("speed") > 55)["license_plate"].n_unique() == 2


def test_centre_busier_than_suburbs(fleet: pl.DataFrame) -> None:
    df = with_parsed(fleet)
    km = (((df["lon"] - 72.83) * 103.85) ** 2 + ((df["lat"] - 21.17) * 111.32) ** 2).sqrt()
    inner = df.filter(km < 2)["license_plate"].n_unique()
    outer = df.filter((km > 5) & (km < 6) & (((df["lon"] - 72.83) > 0) & ((df["lat"] - 21.17) > 0)))[
        "license_plate"
    ].n_unique()
    assert inner > 3 * max(outer, 1)


def test_spec_validation() -> None:
    with pytest.raises(InputError):
        FleetSpec(vehicles=0, days=1, seed=1)
    with pytest.raises(InputError):
        FleetSpec(vehicles=1, days=1, seed=1, dirty_fraction=0.9)
    with pytest.raises(InputError):
        write_fleet(pl.DataFrame(), Path("x.txt"))


def test_cli_writes_file_and_rejects_bad_input(tmp_path: Path) -> None:
    runner = CliRunner()
    root = typer.Typer()
    root.add_typer(app, name="synth")
    out = tmp_path / "f.parquet"
    res = runner.invoke(
        root,
        [
            "synth",
            "fleet",
            "--vehicles",
            "5",
            "--days",
            "1",
            "--out",
            str(out),
            "--seed",
            "1",
            "--records-per-vehicle-day",
            "30",
        ],
    )
    assert res.exit_code == 0, res.output
    assert pl.read_parquet(out).equals(generate_fleet(5, 1, 1, records_per_vehicle_day=30))
    res = runner.invoke(
        root, ["synth", "fleet", "--vehicles", "5", "--days", "1", "--out", str(tmp_path / "f.xlsx")]
    )
    assert res.exit_code == 2
    assert "urbandp: error:" in res.output
    res = runner.invoke(
        root, ["synth", "fleet", "--vehicles", "5", "--days", "1", "--out", str(out), "--start", "15/11/2021"]
    )
    assert res.exit_code == 2
