"""Benchmark: thresholded count releases at city scale, sparse sampler against the dense path (issue 13).

Scenario A (10 M cells, 5% non-zero, card-day k=4, epsilon 1 -> discrete Laplace scale 4, --suppress-below 18),
measured side by side in one run:

* sparse: ``_release_counts(..., sampling="sparse")`` -- OpenDP noise on the non-zero cells only, the published
  zero cells sampled exactly (:mod:`urbandp.counts._sparse`), marginals from the published joint;
* dense (baseline): ``sampling="dense"`` -- one OpenDP draw per cell (chunked on all cores), marginals from the
  full noisy joint (today's path, unchanged).

It also reports the marginals' bias and RMSE against the truth for dense noisy-joint, sparse published-joint and
sparse charged marginals (epsilon 1 each), the evidence behind the default marginals choice.

Scenario B (100 M cells, 1% non-zero): the sparse path alone, in a child process so that its peak memory (max
RSS, the child and its noise workers) is its own.

Run: ``.venv/bin/python benchmarks/bench_counts.py`` (about 1-3 minutes; ``--skip-dense`` to leave out the dense
10 M baseline). Writes benchmarks/results/counts.json. The CPU is shared with other work: the 1-minute load
average is recorded before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "counts.json"


def make_world(cells: int, nonzero_share: float, seed: int = 0) -> Any:
    from urbandp.counts import CountDomain
    from urbandp.counts._sparse import SparseJoint

    days, taps, bins = 7, 2, 96
    n_places = -(-cells // (days * taps * bins))
    modes = ["bus", "train", "ferry", "lightrail"]
    places = {m: [f"{m}-{i}" for i in range(n_places) if i % 4 == k] for k, m in enumerate(modes)}
    domain = CountDomain.from_json({"days": {"start": "2016-08-08", "end": "2016-08-14"}, "places": places})
    rng = np.random.default_rng(seed)  # benchmark INPUT only (raw counts), never released noise
    n = domain.n_cells
    nnz = int(n * nonzero_share)
    index = np.sort(rng.choice(n, size=nnz, replace=False)).astype(np.int64)
    counts = (rng.poisson(3.0, nnz) + 1 + (rng.random(nnz) < 0.1) * rng.poisson(40.0, nnz)).astype(np.int64)
    return domain, SparseJoint(domain.shape, index, counts)


def config(sampling: str, **kw: Any) -> Any:
    from urbandp.counts import CountsReleaseSpec

    return CountsReleaseSpec(
        epsilon=1.0, unit="card-day", max_events=4, suppress_below=18.0, sampling=sampling, **kw
    )


def timed_release(raw: Any, domain: Any, cfg: Any) -> tuple[Any, float]:
    from urbandp.counts._table_release import _release_counts

    t0 = time.perf_counter()
    rel = _release_counts(raw, domain, cfg)
    return rel, time.perf_counter() - t0


def marginal_errors(rel: Any, truth_time: np.ndarray, truth_loc: np.ndarray) -> dict[str, float]:
    out = {}
    for name, est, true in (("time", rel.time, truth_time), ("location", rel.location, truth_loc)):
        err = np.asarray(est, dtype=np.float64) - true
        out[f"{name}_mean_bias"] = float(err.mean())
        out[f"{name}_relative_bias"] = float(err.sum() / true.sum())
        out[f"{name}_rmse"] = float(np.sqrt((err**2).mean()))
    return out


def scenario_100m(cells: int, share: float) -> dict[str, float]:
    """Run inside a child process: sparse release + marginals on the big domain; report time and peak RSS."""
    domain, raw = make_world(cells, share, seed=1)
    t_input = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rel, t = timed_release(raw, domain, config("sparse"))
    assert rel.cells is not None
    return {
        "cells": domain.n_cells,
        "nonzero_cells": int(raw.index.size),
        "sparse_release_and_marginals_s": t,
        "published_cells": int(rel.cells.index.size),
        "published_zero_cells": rel.cells.n_zero_published,
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "peak_rss_after_input_gib": t_input / 2**20,
        "peak_rss_noise_workers_gib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=10_000_000)
    ap.add_argument("--big-cells", type=int, default=100_000_000)
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument("--child-100m", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_100m:
        print(json.dumps(scenario_100m(args.big_cells, 0.01)))
        return

    from urbandp.counts._marginals import location_marginal_sparse, time_marginal_sparse

    load_before = os.getloadavg()[0]
    domain, raw = make_world(args.cells, 0.05)
    truth_time = time_marginal_sparse(raw.index, raw.counts.astype(np.float64), domain)
    truth_loc = location_marginal_sparse(raw.index, raw.counts.astype(np.float64), domain)
    print(
        f"A: {domain.n_cells:,} cells, {raw.index.size:,} non-zero (5%), {os.cpu_count()} cores, load {load_before}"
    )

    sparse, t_sparse = timed_release(raw, domain, config("sparse"))
    charged, t_charged = timed_release(raw, domain, config("sparse", marginal_epsilon=1.0))
    assert sparse.cells is not None
    result: dict[str, object] = {
        "machine": platform.platform(),
        "cores": os.cpu_count(),
        "load_1min_before": load_before,
        "A_cells": domain.n_cells,
        "A_nonzero_cells": int(raw.index.size),
        "A_setting": "card-day k=4, epsilon 1 (discrete Laplace scale 4), suppress below 18",
        "A_sparse_release_and_marginals_s": t_sparse,
        "A_sparse_charged_marginals_release_s": t_charged,
        "A_sparse_published_cells": int(sparse.cells.index.size),
        "A_sparse_published_zero_cells": sparse.cells.n_zero_published,
        "A_zero_cell_publish_probability": sparse.cells.zero_publish_probability,
        "A_expected_published_zero_cells": sparse.cells.zero_publish_probability * raw.n_zero,
        "A_marginals_sparse_published_joint": marginal_errors(sparse, truth_time, truth_loc),
        "A_marginals_sparse_charged_eps1_each": marginal_errors(charged, truth_time, truth_loc),
        "target_A_s": 10.0,
        "target_A_met": t_sparse < 10.0,
    }
    print(f"  sparse release + marginals: {t_sparse:.2f} s (charged marginals: {t_charged:.2f} s)")
    if not args.skip_dense:
        dense, t_dense = timed_release(raw, domain, config("dense"))
        assert dense.joint is not None and dense.suppressed is not None
        result["A_dense_release_and_marginals_s"] = t_dense
        result["A_dense_published_cells"] = int((~dense.suppressed).sum())
        result["A_dense_published_zero_cells"] = int(
            (~dense.suppressed.ravel())[np.setdiff1d(np.arange(domain.n_cells), raw.index)].sum()
        )
        result["A_marginals_dense_noisy_joint"] = marginal_errors(dense, truth_time, truth_loc)
        result["A_speedup_dense_over_sparse"] = t_dense / t_sparse
        print(f"  dense  release + marginals: {t_dense:.2f} s  -> sparse is {t_dense / t_sparse:.1f}x faster")
        del dense
    for key in (
        "A_marginals_dense_noisy_joint",
        "A_marginals_sparse_published_joint",
        "A_marginals_sparse_charged_eps1_each",
    ):
        if key in result:
            m = result[key]
            assert isinstance(m, dict)
            print(
                f"  {key[12:]:28s} time rel. bias {m['time_relative_bias']:+.3f} rmse {m['time_rmse']:8.1f} | "
                f"location rel. bias {m['location_relative_bias']:+.3f} rmse {m['location_rmse']:7.1f}"
            )
    del sparse, charged, raw
    t0 = time.perf_counter()
    child = subprocess.run(
        [sys.executable, __file__, "--child-100m", "--big-cells", str(args.big_cells)],
        capture_output=True,
        text=True,
        check=True,
    )
    big = json.loads(child.stdout.strip().splitlines()[-1])
    big["wall_including_input_generation_s"] = time.perf_counter() - t0
    result["B"] = big
    result["target_B_s"] = 60.0
    result["target_B_gib"] = 4.0
    result["target_B_met"] = big["sparse_release_and_marginals_s"] < 60 and big["peak_rss_gib"] < 4
    result["load_1min_after"] = os.getloadavg()[0]
    print(
        f"B: {big['cells']:,} cells, {big['nonzero_cells']:,} non-zero (1%): release + marginals "
        f"{big['sparse_release_and_marginals_s']:.2f} s, peak RSS {big['peak_rss_gib']:.2f} GiB "
        f"(noise workers {big['peak_rss_noise_workers_gib']:.2f} GiB)"
    )
    print(
        f"targets: A < 10 s {'MET' if result['target_A_met'] else 'NOT MET'}; B < 60 s and < 4 GiB "
        f"{'MET' if result['target_B_met'] else 'NOT MET'}; load {load_before:.2f} -> {result['load_1min_after']:.2f}"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
