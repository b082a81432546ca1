"""The fleet task in PipelineDP 0.3 (local backend; run in its own virtualenv).

Input: rows.parquet from prepare.py (at most K HATs per vehicle-day already). Privacy id: the vehicle-day;
``max_partitions_contributed = K``, ``max_contributions_per_partition = 1``; metrics COUNT and MEAN (PipelineDP's
mean is a normalised sum over its own noisy count) with Gaussian noise; partition selection by Gaussian
thresholding (its default truncated-geometric selection released nothing on one Austin day). With a public extent
the partitions are given (``public_partitions``) and every one gets noisy values; the same false-positive rule as
for every contender then keeps the HATs whose noisy count passes. The budget is PipelineDP's
``NaiveBudgetAccountant`` at (epsilon, delta); the loss is read back from it. Usage: run_pipelinedp.py SPEC.json.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from statistics import NormalDist

import pandas as pd
import pipeline_dp
from pipeline_dp import dp_computations


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    t0 = time.perf_counter()
    rows = pd.read_parquet(spec["rows"])
    k, u, eps, delta = int(spec["k"]), float(spec["speed_max"]), float(spec["epsilon"]), float(spec["delta"])
    data = list(
        zip(rows["vd"], zip(rows["cell"], rows["slot"].astype(int), strict=True), rows["speed"], strict=True)
    )
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=eps, total_delta=delta)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.GAUSSIAN,
        metrics=[pipeline_dp.Metrics.COUNT, pipeline_dp.Metrics.MEAN],
        max_partitions_contributed=k,
        max_contributions_per_partition=1,
        min_value=0.0,
        max_value=u,
        partition_selection_strategy=pipeline_dp.PartitionSelectionStrategy.GAUSSIAN_THRESHOLDING,
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda r: r[0],
        partition_extractor=lambda r: r[1],
        value_extractor=lambda r: r[2],
    )
    public = None
    if spec["extent"]:
        keys = pd.read_parquet(spec["keys"])
        public = list(zip(keys["cell"], keys["slot"].astype(int), strict=True))
    result = engine.aggregate(data, params, extractors, public_partitions=public)
    accountant.compute_budgets()
    out = pd.DataFrame(
        [(cell, slot, m.mean, m.count) for (cell, slot), m in result],
        columns=["cell", "slot", "mean", "count"],
    )
    specs = accountant.mechanism_specs
    count_spec = next(m for m in specs if "count" in m.name.lower())
    # its own Gaussian calibration of the count: l2 sensitivity sqrt(K) (K partitions, 1 per partition)
    count_sd = dp_computations.compute_sigma(count_spec.eps, count_spec.delta, math.sqrt(k))
    if public is not None:
        threshold = count_sd * NormalDist().inv_cdf(1.0 - 0.05 / len(public))
        out = out[out["count"] >= threshold]
    out = out[out["count"] > 0]
    out["mean"] = out["mean"].clip(0.0, u)
    out.to_csv(spec["out"], index=False)
    stated = {  # its own accountant's per-mechanism budgets, composed as it composes them (basic composition)
        "epsilon": math.fsum(m.eps * m._count for m in specs),
        "delta": math.fsum(m.delta * m._count for m in specs),
        "mechanisms": [(m.name, m.eps, m.delta) for m in specs],
    }
    print(json.dumps({"loss": stated, "seconds_inside": time.perf_counter() - t0, "count_sd": count_sd}))


if __name__ == "__main__":
    main()
