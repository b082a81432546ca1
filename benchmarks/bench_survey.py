"""Benchmark: randomize 10 M categorical answers and 1 M points, side by side with a per-row Python loop.

Everything is measured in the same run on the same machine. Sources compared:

* categorical k-RR (k = 20, epsilon = 1):
  - ``loop``: one OpenDP ``make_randomized_response`` call per row (the obvious exact implementation), timed on
    a subsample and extrapolated linearly to 10 M;
  - ``opendp-bitvec``: the column-wide path from OpenDP's bit-vector randomized response (the default sampler),
    timed on ``--opendp-rows`` rows and extrapolated (it is linear);
  - ``os-csprng``: the column-wide path from the OS CSPRNG with integer-only arithmetic, timed on all 10 M rows.
* points (1 M):
  - ``loop``: planar Laplace per row with scalar OpenDP measurements, subsample, extrapolated;
  - ``opendp-vector`` planar Laplace and per-axis Laplace with OpenDP vector measurements, timed on
    ``--point-rows`` points and extrapolated.

Run: ``.venv/bin/python benchmarks/bench_survey.py`` (about 2-3 minutes on the shared 2-core machine).
Writes ``benchmarks/results/survey.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from pathlib import Path

import numpy as np
import opendp.prelude as dp

from urbandp.survey._locations import axis_laplace_offsets, planar_laplace_offsets
from urbandp.survey._randomized_response import krr_prob, randomize_codes
from urbandp.survey._sampling import OpenDPBits, OSRandomBits

dp.enable_features("contrib")
RESULTS = Path(__file__).parent / "results" / "survey.json"


def _time(fn) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--answers", type=int, default=10_000_000)
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--loop-rows", type=int, default=5_000)
    ap.add_argument("--opendp-rows", type=int, default=500_000)
    ap.add_argument("--point-rows", type=int, default=50_000)
    args = ap.parse_args()
    k, eps = 20, 1.0
    prob = krr_prob(k, eps)
    codes = np.arange(args.answers, dtype=np.int64) % k
    cats = list(range(k))

    rr = dp.m.make_randomized_response(categories=cats, prob=prob)
    sub = codes[: args.loop_rows].tolist()
    loop_s = _time(lambda: [rr(int(c)) for c in sub]) * args.answers / args.loop_rows
    os_s = _time(lambda: randomize_codes(codes, k, prob, OSRandomBits()))
    bitvec_s = (
        _time(lambda: randomize_codes(codes[: args.opendp_rows], k, prob, OpenDPBits()))
        * args.answers
        / args.opendp_rows
    )

    eps_m = 0.01
    lap = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), 1 / eps_m)
    gau = dp.m.make_gaussian(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), 1.0)

    def point_loop() -> None:
        for _ in range(args.loop_rows // 5):
            r = abs(lap(0.0)) + abs(lap(0.0))
            a = math.atan2(gau(0.0), gau(0.0))
            _ = (r * math.cos(a), r * math.sin(a))

    ploop_s = _time(point_loop) * args.points / (args.loop_rows // 5)
    planar_s = _time(lambda: planar_laplace_offsets(args.point_rows, eps_m)) * args.points / args.point_rows
    axis_s = (
        _time(lambda: axis_laplace_offsets(args.point_rows, 100.0, 100.0)) * args.points / args.point_rows
    )

    result = {
        "machine": f"{platform.machine()} {os.cpu_count()} cpus (shared), python {platform.python_version()}",
        "categorical": {
            "rows": args.answers,
            "k": k,
            "epsilon": eps,
            "loop_opendp_scalar_s_extrapolated": loop_s,
            "loop_subsample_rows": args.loop_rows,
            "opendp_bitvec_s_extrapolated": bitvec_s,
            "opendp_bitvec_measured_rows": args.opendp_rows,
            "os_csprng_s_measured": os_s,
            "speedup_os_vs_loop": loop_s / os_s,
            "speedup_bitvec_vs_loop": loop_s / bitvec_s,
            "target_10s_met": {"os_csprng": os_s < 10, "opendp_bitvec": bitvec_s < 10},
        },
        "points": {
            "rows": args.points,
            "loop_opendp_scalar_planar_s_extrapolated": ploop_s,
            "opendp_vector_planar_s_extrapolated": planar_s,
            "opendp_vector_axis_laplace_s_extrapolated": axis_s,
            "measured_rows": args.point_rows,
            "speedup_planar_vs_loop": ploop_s / planar_s,
            "target_10s_met": {"planar": planar_s < 10, "axis": axis_s < 10},
        },
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
