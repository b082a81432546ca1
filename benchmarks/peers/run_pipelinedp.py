"""The fleet task in PipelineDP 0.3 (local backend; run in its own virtualenv).

Input: rows.parquet from prepare.py (at most K HATs per vehicle-day already). Privacy id: the vehicle-day;
``max_partitions_contributed = K``, ``max_contributions_per_partition = 1``; metrics COUNT and MEAN with Gaussian
noise. PipelineDP computes both with one ``MeanCombiner``: a noisy count and a noisy sum of the speeds centred at
the middle of [0, U] (its "normalized sum", sensitivity U/2), the mean being middle + sum / max(1, count); the
returned count is that same noisy count. Without public keys, partition selection by Gaussian thresholding (its
default truncated-geometric selection released nothing on one Austin day). With public keys (an extent or a route
domain) the partitions are given (``public_partitions``) and every one gets noisy values. The budget is
PipelineDP's ``NaiveBudgetAccountant`` at (epsilon, delta) (basic composition of (epsilon, delta)-Gaussian
mechanisms, as PipelineDP composes them); the loss is read back from it.

Output: the CSV (cell, slot, count, sum: the noisy count and the noisy centred sum, recovered exactly from its mean
as (mean - middle) max(1, count)) and one JSON line with the loss and the noise sds: those of the additive
mechanisms PipelineDP builds from the accountant's per-mechanism (epsilon, delta) and its own sensitivities
(``dp_computations.create_additive_mechanism(...).std``). Usage: run_pipelinedp.py SPEC.json.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

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
    if spec["keys"]:
        keys = pd.read_parquet(spec["keys"])
        public = list(zip(keys["cell"], keys["slot"].astype(int), strict=True))
    result = engine.aggregate(data, params, extractors, public_partitions=public)
    accountant.compute_budgets()
    middle = dp_computations.compute_middle(0.0, u)
    out = pd.DataFrame(
        [(cell, slot, m.count, (m.mean - middle) * max(1.0, m.count)) for (cell, slot), m in result],
        columns=["cell", "slot", "count", "sum"],
    )
    out.to_csv(spec["out"], index=False)
    specs = {m.name: m for m in accountant.mechanism_specs}
    count_mech = dp_computations.create_additive_mechanism(
        specs["MeanCount"], dp_computations.compute_sensitivities_for_count(params)
    )
    sum_mech = dp_computations.create_additive_mechanism(
        specs["MeanSum"], dp_computations.compute_sensitivities_for_normalized_sum(params)
    )
    stated = {  # its own accountant's per-mechanism budgets, composed as it composes them (basic composition)
        "epsilon": math.fsum(m.eps * m._count for m in specs.values()),
        "delta": math.fsum(m.delta * m._count for m in specs.values()),
        "mechanisms": [(m.name, m.eps, m.delta) for m in specs.values()],
    }
    report = {
        "loss": stated,
        "seconds_inside": time.perf_counter() - t0,
        "centre": middle,
        "count_noise": "gaussian",
        "sum_noise": "gaussian",
        "count_sd": float(count_mech.std),
        "count_scale": float(count_mech.std),  # the Gaussian's sigma
        "sum_sd": float(sum_mech.std),
        "scales_from": f"PipelineDP mechanisms from its accountant: count {count_mech.describe().strip()}; "
        f"normalized sum {sum_mech.describe().strip()}",
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
