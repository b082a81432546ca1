"""The fleet task in Tumult Analytics 0.21 (Spark; run in its own virtualenv, which pins pandas 1.5/pyspark 3.5).

Input: rows.parquet from prepare.py (at most K HATs per vehicle-day already); the HAT is one column ``hat``
(cell|slot) because Tumult's constraints name one grouping column. Protected change: ``AddRowsWithID("vd")``;
constraints ``MaxGroupsPerID("hat", K)`` and ``MaxRowsPerGroupPerID("hat", 1)``. Per HAT a noisy count and a
noisy sum of speeds in [0, U]; the mean is their ratio (post-processing), so each noisy value is used once (Tumult's
``average`` would draw its own count and sum again). Tumult allows Gaussian noise only under a ``RhoZCDPBudget``
and ``get_groups`` only under an ``ApproxDPBudget``, and a session has one budget type, so:

* with a public extent (no partition selection): ``RhoZCDPBudget(rho)``, rho the zCDP budget whose OpenDP
  conversion is epsilon at delta (given by the benchmark, as for every zCDP contender), half to the count and half
  to the sum, discrete Gaussian noise with L2 sensitivity sqrt(K) (the count) and sqrt(K) U (the sum);
* without one: ``ApproxDPBudget(epsilon, delta)``, a third to Tumult's own partition selection (``get_groups``: it
  spends the delta), a third each to the count and the sum over the selected HATs (Laplace/geometric noise).

With an extent the HATs whose noisy count passes the benchmark's common rule are kept (0.05 empty HATs expected),
from the count's noise as Tumult reports it (``Session._noise_info``). The loss is read back from the session
(``remaining_privacy_budget``). Usage: run_tumult.py SPEC.json.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from statistics import NormalDist

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


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    t0 = time.perf_counter()
    k, u, eps, delta = int(spec["k"]), float(spec["speed_max"]), float(spec["epsilon"]), float(spec["delta"])
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
    rows = spark.read.parquet(spec["rows"]).select("vd", hat, F.col("speed").cast("double"))
    zcdp = bool(spec["extent"])
    total = RhoZCDPBudget(float(spec["rho"])) if zcdp else ApproxDPBudget(eps, delta)
    session = Session.from_dataframe(
        privacy_budget=total, source_id="rows", dataframe=rows, protected_change=AddRowsWithID("vd")
    )
    bounded = QueryBuilder("rows").enforce(MaxGroupsPerID("hat", k)).enforce(MaxRowsPerGroupPerID("hat", 1))

    def part(share: float) -> RhoZCDPBudget | ApproxDPBudget:
        return RhoZCDPBudget(float(spec["rho"]) * share) if zcdp else ApproxDPBudget(eps * share, 0.0)

    if zcdp:
        keys = spark.read.parquet(spec["keys"]).select(hat)
        extent = KeySet.from_dataframe(keys)
        share = 0.5
    else:  # Tumult's own partition selection (get_groups) spends a third and the delta
        share = 1.0 / 3.0
        groups = session.evaluate(bounded.clone().get_groups(["hat"]), ApproxDPBudget(eps * share, delta))
        extent = KeySet.from_dataframe(groups)
    count_query = bounded.clone().groupby(extent).count()
    count_noise = session._noise_info(count_query, part(share))[0]
    counts = session.evaluate(count_query, part(share))
    sums = session.evaluate(bounded.clone().groupby(extent).sum("speed", low=0.0, high=u), part(share))
    table = counts.join(sums, on="hat").toPandas()
    table["mean"] = table["speed_sum"] / table["count"].where(table["count"] > 0)
    if zcdp:  # the same false-positive rule as for every contender: Gaussian count, sigma^2 from Tumult
        sigma = math.sqrt(float(count_noise["noise_parameter"]))
        table = table[table["count"] >= sigma * NormalDist().inv_cdf(1.0 - 0.05 / keys.count())]
    table["cell"] = [h.split("|")[0] for h in table["hat"]]
    table["slot"] = [int(h.split("|")[1]) for h in table["hat"]]
    table = table[table["count"] > 0]
    table["mean"] = table["mean"].clip(0.0, u)
    table[["cell", "slot", "mean", "count"]].to_csv(spec["out"], index=False)
    left = session.remaining_privacy_budget
    if zcdp:
        stated = {"rho": float(spec["rho"]) - float(left.rho)}
    else:
        stated = {"epsilon": eps - float(left.epsilon), "delta": delta - float(left.delta)}
    noise = {
        "count_noise": count_noise["noise_mechanism"].name,
        "count_parameter": count_noise["noise_parameter"],
    }
    print(json.dumps({"loss": stated, "seconds_inside": time.perf_counter() - t0, **noise}))
    spark.stop()


if __name__ == "__main__":
    main()
