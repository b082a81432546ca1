"""A fleet release and a count release through the Python API with the test-only no-noise source, as the driver of
a Spark application (run as its own process by test_standalone_cluster.py, so that the test process's shared
``local[2]`` session is never replaced), or in-process with the Polars engine for the reference tables.

usage: python cluster_driver.py ENGINE MASTER FLEET EVENTS DOMAIN OUT_DIR
  writes OUT_DIR/<wing>-<table>.parquet for every published table and OUT_DIR/owner.json (the exact input counts).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import polars as pl

import urbandp as ud
from urbandp._privacy.noise import ExactNoiseForTesting

#: the fleet release as tests/unit/contributions/test_spark_equality.py makes it: every HAT with a vehicle-day; the
#: typed fleet's instants read in Surat's zone (the offsets of the text fleet)
FLEET_OPTIONS: dict[str, Any] = {
    "noise_scale": 1.0, "neighbouring": "replace-one", "selection": "public-threshold", "min_vehicles_per_day": 0,
    "max_hats_per_vehicle_day": 10_000, "precision": 9, "timezone": "Asia/Kolkata",
}  # fmt: skip
#: the count release: card-days bounded to 2 events each, on the synthetic taps' public domain
COUNT_OPTIONS: dict[str, Any] = {"unit": "card-day", "max_events": 2, "noise_scale": 1.0}


def release_tables(
    engine: str, master: str | None, fleet: Path, events: Path, domain: Path
) -> tuple[dict[str, pl.DataFrame], dict[str, Any]]:
    """The published tables of both releases (``fleet-hat_speed``, ``counts-...``) and their owner counts, without
    noise (NOT DP: a test of the engines, never a release)."""
    session = ud.Session(
        noise=ExactNoiseForTesting(acknowledge_not_private=True), allow_meaningless_epsilon=True
    )
    fleet_rel = ud.fleet.release(
        [fleet], engine=engine, spark_master=master, session=session, with_map=False, **FLEET_OPTIONS
    )
    count_rel = ud.counts.release(
        events, domain=domain, engine=engine, spark_master=master, session=session, **COUNT_OPTIONS
    )
    tables = {f"fleet-{k}": v for k, v in fleet_rel.tables.items()}
    tables.update({f"counts-{k}": v for k, v in count_rel.tables.items()})
    owner = {"fleet": fleet_rel.owner["report"], "counts": count_rel.owner["input_report"]}
    return tables, owner


def main() -> int:
    engine, master, fleet, events, domain, out = sys.argv[1:7]
    tables, owner = release_tables(
        engine, None if master == "-" else master, Path(fleet), Path(events), Path(domain)
    )
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        table.write_parquet(target / f"{name}.parquet")
    (target / "owner.json").write_text(json.dumps(owner, default=str, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
