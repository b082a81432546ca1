"""Issue 21: coverage of the released 95% intervals on the synthetic month (300 buses x 31 days).

The target of an interval is the mean the release estimates: the HAT mean over the vehicle-days kept after
truncation to K (the same keyed truncation as the release). It is read from one release with the exact "noise"
of the tests (``ExactNoiseForTesting``: not private, never published), then ``--runs`` DP releases at each epsilon
are scored: the share of released HATs (with a mean) whose ``[ci95_low, ci95_high]`` holds the target. Writes
``results/coverage.json``.

    .venv/bin/python benchmarks/bench_coverage.py [--runs 4]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import time
from pathlib import Path

import polars as pl

from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._pipeline import release_fleet

ROOT = Path(__file__).resolve().parents[1]
MONTH = ROOT / "benchmarks" / "data" / "peers" / "synth_month.parquet"


def config(epsilon: float) -> HatReleaseConfig:
    return HatReleaseConfig(
        epsilon_per_day=epsilon,
        start=dt.date(2021, 11, 15),
        end=dt.date(2021, 12, 15),
        max_hats_per_vehicle_day=32,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--epsilons", default="1,4")
    args = ap.parse_args()
    if not MONTH.exists():
        raise SystemExit(f"{MONTH} missing: run benchmarks/bench_peers.py once (it generates the month)")
    exact, _ = release_fleet([MONTH], config(1.0), noise=ExactNoiseForTesting(acknowledge_not_private=True))
    target = exact.speed.select("h3_cell", "slot", pl.col("mean_speed").alias("target"))
    results = []
    for eps in (float(e) for e in args.epsilons.split(",")):
        hits = total = 0
        t0 = time.perf_counter()
        for _ in range(args.runs):
            rel, _ = release_fleet([MONTH], config(eps), noise=OpenDPNoise())
            scored = rel.speed.join(target, on=["h3_cell", "slot"]).filter(pl.col("mean_speed").is_not_null())
            hits += int(
                ((scored["ci95_low"] <= scored["target"]) & (scored["target"] <= scored["ci95_high"])).sum()
            )
            total += scored.height
        share = hits / total
        sd = math.sqrt(share * (1 - share) / total)
        results.append({"epsilon": eps, "runs": args.runs, "intervals": total, "coverage": share, "binomial_sd": sd,
                        "seconds": time.perf_counter() - t0})  # fmt: skip
        print(results[-1], flush=True)
    out = ROOT / "benchmarks" / "results" / "coverage.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
