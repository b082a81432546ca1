"""The fleet task in Tumult Analytics 0.21 (Spark; run in its own virtualenv, which pins pandas 1.5/pyspark 3.5).

Input: rows.parquet from prepare.py (at most K HATs per vehicle-day already); the HAT is one column ``hat``
(cell|slot) because Tumult's constraints name one grouping column. Protected change: ``AddRowsWithID("vd")``;
constraints ``MaxGroupsPerID("hat", K)`` and ``MaxRowsPerGroupPerID("hat", 1)``. Per HAT a noisy count and a
noisy sum of centred speeds; the mean is their ratio (post-processing), so each noisy value is used once (Tumult's
``average`` would draw its own count and sum again). Tumult allows Gaussian noise only under a ``RhoZCDPBudget``
and ``get_groups`` only under an ``ApproxDPBudget``, and a session has one budget type, so:

* with public keys (an extent or a route domain: a ``KeySet``, no partition selection): ``RhoZCDPBudget(rho)``,
  rho the zCDP budget whose OpenDP conversion is epsilon at delta (given by the benchmark, as for every zCDP
  contender), half to the count and half to the sum, Gaussian noise (Tumult's choice of mechanism);
* without one: ``ApproxDPBudget(epsilon, delta)``, a third to Tumult's own partition selection (``get_groups``: it
  spends the delta), a third each to the count and the sum over the selected HATs (Laplace/geometric noise).

The sum is of the speeds centred at U/2, bounds (-U/2, U/2) (half the sensitivity of a sum over (0, U)); the
mean U/2 + sum / count is post-processing, done by the benchmark. Output: the CSV (cell, slot, count, sum) of every
key and one JSON line with the loss (read back from the session's ``remaining_privacy_budget``) and the noise of
the count and of the sum as Tumult reports it before evaluating (``Session._noise_info``: mechanism and parameter,
turned into sds by ``noise_sd``). Usage: run_tumult.py SPEC.json.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from tmlt.analytics import (
    AddRowsWithID,
    ApproxDPBudget,
    KeySet,
    MaxGroupsPerID,
    MaxRowsPerGroupPerID,
    QueryBuilder,
    RhoZCDPBudget,
    Session,
)


def noise_sd(info: dict[str, Any]) -> tuple[str, float]:
    """("gaussian" | "laplace", sd) of one of Tumult's noise mechanisms as ``Session._noise_info`` states it: the
    (discrete) Gaussian's parameter is its variance sigma^2; Laplace's and the geometric's (the discrete Laplace)
    is the scale b, sd b sqrt 2 and ``sqrt(2 e^-1/b) / (1 - e^-1/b)`` exactly."""
    name = info["noise_mechanism"].name
    parameter = float(info["noise_parameter"])
    if "GAUSSIAN" in name:
        return "gaussian", math.sqrt(parameter)
    if name == "GEOMETRIC":
        q = math.exp(-1.0 / parameter)
        return "laplace", math.sqrt(2.0 * q) / (1.0 - q)
    return "laplace", parameter * math.sqrt(2.0)


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    t0 = time.perf_counter()
    k, u, eps, delta = int(spec["k"]), float(spec["speed_max"]), float(spec["epsilon"]), float(spec["delta"])
    centre = u / 2.0
    os.environ["PYSPARK_PYTHON"] = sys.executable  # Spark's Python workers need this venv's tmlt
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(Path(spec["out"]).parent / "spark-warehouse"))  # not the cwd
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    hat = F.concat_ws("|", F.col("cell"), F.col("slot").cast("string")).alias("hat")
    rows = spark.read.parquet(spec["rows"]).select(
        "vd", hat, (F.col("speed").cast("double") - F.lit(centre)).alias("speed")
    )
    zcdp = bool(spec["keys"])
    total = RhoZCDPBudget(float(spec["rho"])) if zcdp else ApproxDPBudget(eps, delta)
    session = Session.from_dataframe(
        privacy_budget=total, source_id="rows", dataframe=rows, protected_change=AddRowsWithID("vd")
    )
    bounded = QueryBuilder("rows").enforce(MaxGroupsPerID("hat", k)).enforce(MaxRowsPerGroupPerID("hat", 1))

    def part(share: float) -> RhoZCDPBudget | ApproxDPBudget:
        return RhoZCDPBudget(float(spec["rho"]) * share) if zcdp else ApproxDPBudget(eps * share, 0.0)

    if zcdp:
        keys = spark.read.parquet(spec["keys"]).select(hat)
        domain = KeySet.from_dataframe(keys)
        share = 0.5
    else:  # Tumult's own partition selection (get_groups) spends a third and the delta
        share = 1.0 / 3.0
        groups = session.evaluate(bounded.clone().get_groups(["hat"]), ApproxDPBudget(eps * share, delta))
        domain = KeySet.from_dataframe(groups)
    count_query = bounded.clone().groupby(domain).count()
    sum_query = bounded.clone().groupby(domain).sum("speed", low=-centre, high=centre)
    count_info = session._noise_info(count_query, part(share))[0]
    sum_info = session._noise_info(sum_query, part(share))[0]
    counts = session.evaluate(count_query, part(share))
    sums = session.evaluate(sum_query, part(share))
    table = counts.join(sums, on="hat").toPandas()
    table["cell"] = [h.split("|")[0] for h in table["hat"]]
    table["slot"] = [int(h.split("|")[1]) for h in table["hat"]]
    table = table.rename(columns={"speed_sum": "sum"}).astype({"count": float})
    table[["cell", "slot", "count", "sum"]].to_csv(spec["out"], index=False)
    left = session.remaining_privacy_budget
    if zcdp:
        stated = {"rho": float(spec["rho"]) - float(left.rho)}
    else:
        stated = {"epsilon": eps - float(left.epsilon), "delta": delta - float(left.delta)}
    count_kind, count_sd = noise_sd(count_info)
    sum_kind, sum_sd = noise_sd(sum_info)
    report = {
        "loss": stated,
        "seconds_inside": time.perf_counter() - t0,
        "centre": centre,
        "count_noise": count_kind,
        "sum_noise": sum_kind,
        "count_sd": count_sd,
        # the threshold's scale: the Gaussian's sigma, the geometric's (discrete Laplace's) b
        "count_scale": count_sd if count_kind == "gaussian" else float(count_info["noise_parameter"]),
        "sum_sd": sum_sd,
        "scales_from": f"Tumult Session._noise_info: count {count_info['noise_mechanism'].name} parameter "
        f"{float(count_info['noise_parameter']):.6g}, sum {sum_info['noise_mechanism'].name} parameter "
        f"{float(sum_info['noise_parameter']):.6g}",
    }
    print(json.dumps(report))
    spark.stop()


if __name__ == "__main__":
    main()
