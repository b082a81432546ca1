"""Issue 33: the synthetic fleet's public schedule (``synth fleet --gtfs-out``) as the planner's prior.

Writes the schedule of a synthetic fleet, reads it with :func:`urbandp.fleet._domain_files.domain_from_gtfs` (resolution
7, 60-minute slots, hours 6-22 by default) and compares, per HAT, the schedule's priors with the vehicle-days the
generator's records actually hold (distinct vehicles per HAT and day, averaged over the days):

* ``vehicles``: ``scheduled_vehicles.vehicles_per_day`` (distinct blocks per HAT and day);
* ``trips``: ``scheduled_trips.trips_per_day`` (distinct trips per HAT and day; a vehicle out and back through a
  cell within the slot is two trips but one vehicle-day).

Printed: per prior the median and quartiles of true / scheduled over the scheduled HATs, the ratio of the sums, the
Pearson correlation over all HATs (either side 0 where absent), and the mean HATs per vehicle-day (records) beside
``hats_per_vehicle_day`` (schedule). Nothing here is a release: the records are read as their owner would.

    .venv/bin/python benchmarks/bench_schedule_prior.py [--vehicles 300] [--days 7] [--seed 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import polars_h3 as plh3

from urbandp._synth.fleet import FleetSpec, generate_fleet, write_fleet_gtfs
from urbandp.fleet._domain_files import domain_from_gtfs


def true_vehicle_days(spec: FleetSpec, resolution: int, hours: tuple[int, int]) -> tuple[pl.DataFrame, float]:
    """Per HAT the distinct vehicles per day in the records (clean rows), and the mean HATs per vehicle-day."""
    df = generate_fleet(
        spec.vehicles,
        spec.days,
        spec.seed,
        records_per_vehicle_day=spec.records_per_vehicle_day,
        dirty_fraction=0,
    )
    coords = pl.col("location").struct.field("coordinates")
    local = pl.col("observationDateTime").str.slice(0, 19).str.strptime(pl.Datetime, "%Y-%m-%dT%H:%M:%S")
    pairs = (
        df.select(
            "license_plate",
            local.alias("ts"),
            coords.list.get(0).alias("lon"),
            coords.list.get(1).alias("lat"),
        )
        .with_columns(day=pl.col("ts").dt.date(), slot=pl.col("ts").dt.hour().cast(pl.Int16))
        .filter(pl.col("slot").is_between(hours[0], hours[1] - 1))
        .with_columns(cell=plh3.latlng_to_cell("lat", "lon", resolution).cast(pl.UInt64))
        .unique(["license_plate", "day", "cell", "slot"])
    )
    per_hat = pairs.group_by("cell", "slot").agg((pl.len() / spec.days).alias("true"))
    return per_hat, float(pairs.group_by("license_plate", "day").len()["len"].mean())  # type: ignore[arg-type]


def compare(prior: pl.DataFrame, column: str, truth: pl.DataFrame) -> dict[str, float]:
    both = prior.join(truth, on=["cell", "slot"], how="full", coalesce=True).fill_null(0.0)
    served = both.filter(pl.col(column) > 0)
    ratio = (served["true"] / served[column]).to_numpy()
    return {
        "median_ratio": round(float(np.median(ratio)), 3),
        "q25": round(float(np.percentile(ratio, 25)), 3),
        "q75": round(float(np.percentile(ratio, 75)), 3),
        "sum_ratio": round(float(served["true"].sum() / served[column].sum()), 3),
        "pearson": round(float(np.corrcoef(both["true"].to_numpy(), both[column].to_numpy())[0, 1]), 3),
        "hats_scheduled": served.height,
        "hats_true": truth.height,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--vehicles", type=int, default=300)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--records-per-vehicle-day", type=float, default=1300.0)
    parser.add_argument("--resolution", type=int, default=7)
    args = parser.parse_args()
    hours = (6, 22)
    spec = FleetSpec(
        vehicles=args.vehicles,
        days=args.days,
        seed=args.seed,
        records_per_vehicle_day=args.records_per_vehicle_day,
    )
    with tempfile.TemporaryDirectory() as tmp:
        write_fleet_gtfs(spec, Path(tmp))
        days = [spec.start + dt.timedelta(days=i) for i in range(spec.days)]
        domain = domain_from_gtfs(Path(tmp), args.resolution, 60, hours, days)
    truth, hats_per_vehicle_day = true_vehicle_days(spec, args.resolution, hours)
    assert domain.scheduled_trips is not None and domain.scheduled_vehicles is not None
    out = {
        "fleet": {
            "vehicles": spec.vehicles,
            "days": spec.days,
            "seed": spec.seed,
            "resolution": args.resolution,
        },
        "vehicles": compare(domain.scheduled_vehicles, "vehicles_per_day", truth),
        "trips": compare(domain.scheduled_trips, "trips_per_day", truth),
        "hats_per_vehicle_day": {
            "records": round(hats_per_vehicle_day, 2),
            "schedule": round(float(domain.hats_per_vehicle_day or 0.0), 2),
        },
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
