"""Benchmark: release and marginalise a joint count table of 10 million cells (issue 4).

Ours: ``urbandp.counts.release_counts`` -- OpenDP discrete-Laplace noise on every cell (chunked vector
measurements on all cores), marginals as numpy sums of the noisy joint, optional consistent projection.
Baseline, measured in the same run: the naive pipeline -- one OpenDP scalar measurement call per cell (a Python
loop, timed on a subset and extrapolated linearly) and a pandas ``groupby`` marginalisation of the long table
(timed in full). Also reported: OpenDP's vector measurement on one core (subset, extrapolated), which is the
floor for any OpenDP-only release on this machine.

Run: ``.venv/bin/python benchmarks/bench_counts.py [--cells 10000000]``. Writes benchmarks/results/counts.json.
The CPU is shared with other agents, so timings are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=10_000_000)
    ap.add_argument("--subset", type=int, default=20_000, help="cells for the per-cell loop baseline")
    ap.add_argument("--vector-subset", type=int, default=1_000_000, help="cells for the 1-core vector timing")
    args = ap.parse_args()

    import opendp.prelude as dp
    import pandas as pd

    from urbandp.counts import CountDomain, CountReleaseConfig, release_counts
    from urbandp.counts.marginals import consistent_nonnegative, location_marginal, time_marginal
    from urbandp.privacy.noise import OpenDPNoise

    dp.enable_features("contrib")
    days, taps, bins = 7, 2, 96
    n_places = -(-args.cells // (days * taps * bins))
    modes = ["bus", "train", "ferry", "lightrail"]
    places = {m: [f"{m}-{i}" for i in range(n_places) if i % 4 == k] for k, m in enumerate(modes)}
    domain = CountDomain.from_json({"days": {"start": "2016-08-08", "end": "2016-08-14"}, "places": places})
    rng = np.random.default_rng(0)
    raw = rng.poisson(3.0, domain.shape).astype(np.int64)
    n = domain.n_cells
    print(f"cells: {n:,} (shape {domain.shape}), cores: {os.cpu_count()}")

    # ---------------- ours
    t0 = time.perf_counter()
    rel = release_counts(raw, domain, CountReleaseConfig(epsilon=1.0))
    t_release = time.perf_counter() - t0
    t0 = time.perf_counter()
    time_marginal(rel.joint, domain)
    location_marginal(rel.joint)
    t_marg = time.perf_counter() - t0
    t0 = time.perf_counter()
    consistent_nonnegative(rel.joint)
    t_consistent = time.perf_counter() - t0

    # ---------------- 1-core OpenDP vector measurement (subset, extrapolated)
    sub = raw.ravel()[: args.vector_subset]
    t0 = time.perf_counter()
    OpenDPNoise().discrete_laplace(sub, 1.0)
    t_vec_1core = (time.perf_counter() - t0) * n / sub.size

    # ---------------- naive baseline: per-cell OpenDP scalar calls + pandas groupby
    meas = dp.m.make_laplace(dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), 1.0)
    cells = raw.ravel()[: args.subset].tolist()
    t0 = time.perf_counter()
    _ = [meas(c) for c in cells]
    t_loop = (time.perf_counter() - t0) * n / len(cells)
    _d, _t, _b, _p = domain.shape
    idx = np.indices(domain.shape).reshape(4, -1)
    mode_of_place = domain.place_mode_index()
    long = pd.DataFrame(
        {
            "day": idx[0],
            "tap": idx[1],
            "bin": idx[2],
            "place": idx[3],
            "mode": mode_of_place[idx[3]],
            "count": rel.joint.ravel(),
        }
    )
    t0 = time.perf_counter()
    long.groupby(["day", "tap", "bin", "mode"], sort=False)["count"].sum()
    long.groupby(["day", "tap", "place"], sort=False)["count"].sum()
    t_pandas = time.perf_counter() - t0
    del long

    ours_total = t_release + t_marg
    base_total = t_loop + t_pandas
    rows = [
        ("noise on every cell (OpenDP)", t_release, t_loop),
        ("marginals (time-only + location-only)", t_marg, t_pandas),
        ("release + marginalise", ours_total, base_total),
    ]
    print(f"\n{'step':42s} {'urbandp s':>10s} {'naive s':>10s} {'ratio':>8s}")
    for name, ours, base in rows:
        print(f"{name:42s} {ours:10.2f} {base:10.2f} {base / ours:8.1f}x")
    print(
        f"\n1-core OpenDP vector measurement, extrapolated: {t_vec_1core:.1f} s "
        f"({t_vec_1core / n * 1e6:.2f} us/cell); consistent projection: {t_consistent:.2f} s"
    )
    target = 10.0
    print(
        f"target < {target:.0f} s for release + marginalise: {'MET' if ours_total < target else 'NOT MET'} "
        f"({ours_total:.1f} s on {os.cpu_count()} cores; OpenDP sampling dominates)"
    )
    result = {
        "cells": n,
        "cores": os.cpu_count(),
        "machine": platform.platform(),
        "urbandp_release_s": t_release,
        "urbandp_marginals_s": t_marg,
        "urbandp_consistent_projection_s": t_consistent,
        "urbandp_total_s": ours_total,
        "opendp_vector_1core_extrapolated_s": t_vec_1core,
        "opendp_us_per_cell_1core": t_vec_1core / n * 1e6,
        "naive_per_cell_loop_extrapolated_s": t_loop,
        "naive_loop_subset_cells": len(cells),
        "naive_pandas_groupby_s": t_pandas,
        "naive_total_s": base_total,
        "ratio_total": base_total / ours_total,
        "ratio_marginals": t_pandas / t_marg,
        "target_s": target,
        "target_met": ours_total < target,
        "note": "shared 2-core CPU, timings noisy; baseline loop timed on a subset and extrapolated linearly",
    }
    out = Path(__file__).resolve().parent / "results" / "counts.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
