"""Benchmark: the MAE experiment (10,000 runs x 5 algorithms x 4 epsilons, itms-like HAT) vectorised across runs,
against two naive per-run loops measured on a subset in the same process and extrapolated:

* ``release loop``: call the release estimator (OpenDP noise and selections) once per run;
* ``numpy loop``:   re-prepare the data and draw one run of the simulation per run.

Run: .venv/bin/python benchmarks/bench_estimators.py  (writes benchmarks/results/estimators.json)
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from urbandp._experiments.mean_simulation import paper_algorithms, run_mae, simulate_errors
from urbandp._experiments.synthetic_mean import synthetic_dataset
from urbandp._privacy.noise import OpenDPNoise

RUNS = 10_000
EPSILONS = (0.5, 1.0, 1.5, 2.0)
SUBSET_RUNS = 10  # per (algorithm, epsilon) for the naive loops


def main() -> None:
    values = synthetic_dataset("itms-like")
    algorithms = [
        a for a in paper_algorithms(65.0) if a.label != "ARRAY-AVERAGING-WRAPAROUND"
    ]  # the paper's 5
    total_runs = RUNS * len(algorithms) * len(EPSILONS)
    load_before = os.getloadavg()

    t0 = time.perf_counter()
    rows = run_mae(algorithms, values, EPSILONS, RUNS, seed=0)
    vectorised = time.perf_counter() - t0

    noise = OpenDPNoise()
    t0 = time.perf_counter()
    for alg in algorithms:
        for eps in EPSILONS:
            for _ in range(SUBSET_RUNS):
                alg.estimator.estimate(values, eps, noise)
    release_per_run = (time.perf_counter() - t0) / (SUBSET_RUNS * len(algorithms) * len(EPSILONS))

    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for alg in algorithms:
        for eps in EPSILONS:
            for _ in range(SUBSET_RUNS):
                simulate_errors(alg.estimator, alg.estimator.prepare(values), eps, 1, rng)
    numpy_per_run = (time.perf_counter() - t0) / (SUBSET_RUNS * len(algorithms) * len(EPSILONS))

    release_total = release_per_run * total_runs
    numpy_total = numpy_per_run * total_runs
    result = {
        "task": f"MAE experiment, itms-like HAT, {RUNS} runs x {len(algorithms)} algorithms x {len(EPSILONS)} epsilons",
        "vectorised_s": round(vectorised, 3),
        "naive_release_loop_s_extrapolated": round(release_total, 1),
        "naive_numpy_loop_s_extrapolated": round(numpy_total, 1),
        "speedup_vs_release_loop": round(release_total / vectorised, 1),
        "speedup_vs_numpy_loop": round(numpy_total / vectorised, 1),
        "naive_subset_runs_per_cell": SUBSET_RUNS,
        "load_average_before": [round(x, 2) for x in load_before],
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "mae_eps1": {r.algorithm: round(r.mae, 4) for r in rows if r.epsilon == 1.0},
    }
    print(f"{'approach':40s} {'seconds':>10s} {'ratio':>8s}")
    print(f"{'vectorised Monte Carlo (ours)':40s} {vectorised:10.2f} {1.0:8.1f}")
    print(
        f"{'naive loop, release estimators (OpenDP)':40s} {release_total:10.1f} {release_total / vectorised:8.1f}"
    )
    print(f"{'naive loop, numpy per run':40s} {numpy_total:10.1f} {numpy_total / vectorised:8.1f}")
    print(
        f"(naive loops: {SUBSET_RUNS} runs per algorithm and epsilon, extrapolated to {total_runs} runs; "
        f"load average before: {result['load_average_before']})"
    )
    out = Path(__file__).resolve().parent / "results" / "estimators.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
