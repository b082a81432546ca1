"""The fleet task in Tumult Analytics 0.21 (Spark; run in its own virtualenv, which pins pandas 1.5/pyspark 3.5).

Input: rows.parquet from prepare.py (at most K HATs per vehicle-day already); the HAT is one column ``hat``
(cell|slot) because Tumult's constraints name one grouping column. Protected change: ``AddRowsWithID("vd")``;
constraints ``MaxGroupsPerID("hat", K)`` and ``MaxRowsPerGroupPerID("hat", 1)``. The session's budget is
``ApproxDPBudget(epsilon, delta)``, split evenly between:

* without a public extent, Tumult's own partition selection (``get_groups``; it spends the delta);
* a count per HAT over the key set (the extent's, or the selected HATs: a DP output, hence public);
* the average speed in [0, U] over the same keys.

The loss is read back from the session (``remaining_privacy_budget``). Usage: run_tumult.py SPEC.json.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from tmlt.analytics import (
    AddRowsWithID,
    ApproxDPBudget,
    KeySet,
    MaxGroupsPerID,
    MaxRowsPerGroupPerID,
    QueryBuilder,
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
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    hat = F.concat_ws("|", F.col("cell"), F.col("slot").cast("string")).alias("hat")
    rows = spark.read.parquet(spec["rows"]).select("vd", hat, F.col("speed").cast("double"))
    session = Session.from_dataframe(
        privacy_budget=ApproxDPBudget(eps, delta),
        source_id="rows",
        dataframe=rows,
        protected_change=AddRowsWithID("vd"),
    )
    bounded = QueryBuilder("rows").enforce(MaxGroupsPerID("hat", k)).enforce(MaxRowsPerGroupPerID("hat", 1))
    extent = None
    if spec["extent"]:
        keys = spark.read.parquet(spec["keys"]).select(hat)
        extent = KeySet.from_dataframe(keys)
    share = 0.5
    if extent is None:  # Tumult's own partition selection (get_groups) spends a third and the delta
        share = 1.0 / 3.0
        groups = session.evaluate(bounded.clone().get_groups(["hat"]), ApproxDPBudget(eps * share, delta))
        extent = KeySet.from_dataframe(groups)
    counts = session.evaluate(bounded.clone().groupby(extent).count(), ApproxDPBudget(eps * share, 0.0))
    avg_query = bounded.clone().groupby(extent).average("speed", low=0.0, high=u)
    means = session.evaluate(avg_query, ApproxDPBudget(eps * share, 0.0))
    table = counts.join(means, on="hat").toPandas()
    table["cell"] = [h.split("|")[0] for h in table["hat"]]
    table["slot"] = [int(h.split("|")[1]) for h in table["hat"]]
    table = table.rename(columns={"speed_average": "mean"})
    if spec["extent"]:  # the same false-positive rule as for every contender (Laplace count, sensitivity K)
        scale = k / (eps * share)
        table = table[table["count"] >= scale * math.log(keys.count() / (2 * 0.05))]
    table = table[table["count"] > 0]
    table["mean"] = table["mean"].clip(0.0, u)
    table[["cell", "slot", "mean", "count"]].to_csv(spec["out"], index=False)
    left = session.remaining_privacy_budget
    stated = {"epsilon": eps - float(left.epsilon), "delta": delta - float(left.delta)}
    print(json.dumps({"loss": stated, "seconds_inside": time.perf_counter() - t0}))
    spark.stop()


if __name__ == "__main__":
    main()
