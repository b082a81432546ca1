"""Benchmark of the secure two-party queries (issue 11): two processes on 127.0.0.1, SPU CHEETAH, FM64.

For n = 10, 50, 100, 200, 400 cells in the obfuscation rectangle and every function: cold latency (the first
query of that function and size on a connection: compiles the program), warm latency (median of the next
queries) and bytes exchanged per warm query (both directions, read from the server process's /proc/PID/io:
control socket and SPU link together); plus the connect time (TCP, SPU link and the dummy query that absorbs the
OT set-up). The baseline in the same run is the plaintext reference (urbandp.sensing._queries) on the same
cells; the paper's figures (EMP garbled circuits, laptop client) are printed beside.

    .venv/bin/python benchmarks/bench_mpc.py [--repeat 3] [--sizes 10,50,100,200,400]

Writes benchmarks/results/mpc.json.

A/B mode (the machine is shared and loaded, so an older version is compared IN THE SAME RUN): a server and a
client process per version (``--ab OLD_SRC``: the ``src`` folder of the other checkout, e.g. a ``git worktree``
of main), the warm queries alternating between the two versions (which goes first alternates too):

    .venv/bin/python benchmarks/bench_mpc.py --ab /path/to/main/src --repeat 9 --sizes 10,400 \
        --functions average,min,range --out benchmarks/results/mpc_ab.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from urbandp.mpc import spu_missing_reason
from urbandp.sensing._queries import clamp_sigma2, rectangle_mask, run_query

HERE = Path(__file__).parent
FUNCTIONS = ["average", "min", "max", "min-exact", "max-exact", "count", "range"]
PAPER_LAPTOP_MAX_S = {"average": 0.5, "min": 3.0, "max": 3.0, "range": 6.0, "count": 6.0}  # up to n = 400
GOALS_WARM_400_S = {"average": 0.3, "min": 1.0, "max": 1.0, "range": 1.5}
SIDE = 20  # a 20 x 20 grid of 400 cells


def io_bytes(pid: int) -> int:
    fields = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return int(fields["rchar"]) + int(fields["wchar"])


# One client process of the A/B mode: connects, then answers one JSON query per stdin line with its seconds.
WORKER = """
import json, sys, time
import numpy as np
from urbandp.mpc._client import Client
t = time.perf_counter()
c = Client(sys.argv[1], client_id="ab")
print(json.dumps({"connect_s": time.perf_counter() - t}), flush=True)
for line in sys.stdin:
    q = json.loads(line)
    t = time.perf_counter()
    a = c.query(q["function"], tuple(q["rect"]), vector=np.asarray(q["vector"]), theta=q["theta"],
                theta2=q["theta2"])
    print(json.dumps({"seconds": time.perf_counter() - t, "value": a["value"]}), flush=True)
c.close()
"""


def write_grid(tmp: Path) -> tuple[Path, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    n_all = SIDE * SIDE
    rows, cols = np.divmod(np.arange(n_all), SIDE)
    lat, lon = 22.5 + rows * 0.0045, 88.3 + cols * 0.0049
    mu, s2 = rng.uniform(10, 200, n_all), rng.uniform(1, 120, n_all)
    grid = tmp / "grid.csv"
    grid.write_text(
        "cell_id,lat,lon,window,mu,sigma2\n"
        + "".join(
            f"{i},{lat[i]:.6f},{lon[i]:.6f},2024-01-01T08:00,{float(mu[i])!r},{float(s2[i])!r}\n"
            for i in range(n_all)
        )
    )
    return grid, lat, lon, mu, s2


def rect_of(n: int) -> tuple[float, float, float, float]:
    h, w = {10: (1, 10), 50: (5, 10), 100: (5, 20), 200: (10, 20), 400: (20, 20)}[n]
    return (22.5 - 1e-4, 88.3 - 1e-4, 22.5 + (h - 1) * 0.0045 + 1e-4, 88.3 + (w - 1) * 0.0049 + 1e-4)


def start_server(src: Path, grid: Path) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(src)}
    server = subprocess.Popen(
        [sys.executable, "-m", "urbandp", "mpc", "serve", "--grid", str(grid), "--listen", f"127.0.0.1:{port}",
         "--sigma2-max", "120", "--alpha", "5", "--epsilon", "0.01", "--epsilon-budget", "100000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.2)
    time.sleep(0.5)
    return server, port


def ab(args: argparse.Namespace) -> None:
    """Old (``--ab SRC``) against this checkout, alternating warm queries in the same run."""
    tmp = Path(tempfile.mkdtemp())
    grid, *_ = write_grid(tmp)
    versions = {"baseline": Path(args.ab).resolve(), "this": (HERE.parent / "src").resolve()}
    procs: dict[str, tuple[subprocess.Popen[bytes], subprocess.Popen[str]]] = {}
    load_before = os.getloadavg()
    try:
        connect = {}
        for tag, src in versions.items():
            server, port = start_server(src, grid)
            worker = subprocess.Popen(
                [sys.executable, "-c", WORKER, f"127.0.0.1:{port}"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                env={**os.environ, "PYTHONPATH": str(src)},
            )  # fmt: skip
            procs[tag] = (server, worker)
            assert worker.stdout is not None
            connect[tag] = json.loads(worker.stdout.readline())["connect_s"]

        def ask(tag: str, q: dict[str, object]) -> dict[str, float]:
            worker = procs[tag][1]
            assert worker.stdin is not None and worker.stdout is not None
            worker.stdin.write(json.dumps(q) + "\n")
            worker.stdin.flush()
            line = worker.stdout.readline()
            if not line:
                sys.exit(f"bench_mpc: the {tag} client died")
            return json.loads(line)  # type: ignore[no-any-return]

        rng = np.random.default_rng(2)
        rows_out = []
        for n in [int(s) for s in args.sizes.split(",")]:
            v = (rng.random(n) < 0.6).astype(float)
            v[:5] = 1.0
            for f in args.functions.split(","):
                theta, theta2 = (80.0, 140.0) if f in ("count", "range") else (None, None)
                q = {"function": f, "rect": list(rect_of(n)), "vector": v.tolist(), "theta": theta,
                     "theta2": theta2 if f == "range" else None}  # fmt: skip
                for tag in versions:  # cold (compiles), not counted
                    ask(tag, q)
                warm: dict[str, list[float]] = {tag: [] for tag in versions}
                values: dict[str, float] = {}
                for i in range(args.repeat):
                    order = list(versions) if i % 2 == 0 else list(reversed(versions))
                    for tag in order:
                        r = ask(tag, q)
                        warm[tag].append(r["seconds"])
                        values[tag] = r["value"]
                med = {tag: statistics.median(w) for tag, w in warm.items()}
                row = {
                    "n": n,
                    "function": f,
                    "baseline_warm_median_s": round(med["baseline"], 4),
                    "this_warm_median_s": round(med["this"], 4),
                    "ratio_this_vs_baseline": round(med["this"] / med["baseline"], 3),
                    "baseline_warm_all_s": [round(x, 4) for x in warm["baseline"]],
                    "this_warm_all_s": [round(x, 4) for x in warm["this"]],
                    "value_rel_diff": abs(values["this"] - values["baseline"]) / max(abs(values["baseline"]), 1e-9),
                }  # fmt: skip
                rows_out.append(row)
                print(
                    f"n={n:4d} {f:10s} warm median: baseline {med['baseline']:.3f} s, this {med['this']:.3f} s, "
                    f"ratio {row['ratio_this_vs_baseline']:.2f} ({args.repeat} each, alternating)",
                    flush=True,
                )
    finally:
        for server, worker in procs.values():
            if worker.stdin is not None:
                worker.stdin.close()
            worker.wait(30)
            server.terminate()
            server.wait(10)
    result = {
        "mode": "A/B in the same run, warm queries alternating between the two versions",
        "baseline_src": str(versions["baseline"]),
        "cpus": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "connect_s": {k: round(x, 3) for k, x in connect.items()},
        "repeat": args.repeat,
        "rows": rows_out,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"load average before {result['loadavg_before']}, after {result['loadavg_after']} -> {args.out}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="10,50,100,200,400")
    ap.add_argument("--functions", default=",".join(FUNCTIONS), help="A/B mode only")
    ap.add_argument("--ab", default=None, help="src folder of the version to compare against (A/B mode)")
    ap.add_argument("--out", default=str(HERE / "results" / "mpc.json"))
    args = ap.parse_args()
    reason = spu_missing_reason()
    if reason:
        sys.exit(f"bench_mpc: {reason}")
    if args.ab:
        ab(args)
        return
    from urbandp.mpc._client import Client

    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp())
    rng = np.random.default_rng(1)
    n_all = SIDE * SIDE
    rows, cols = np.divmod(np.arange(n_all), SIDE)
    lat, lon = 22.5 + rows * 0.0045, 88.3 + cols * 0.0049
    mu, s2 = rng.uniform(10, 200, n_all), rng.uniform(1, 120, n_all)
    grid = tmp / "grid.csv"
    grid.write_text(
        "cell_id,lat,lon,window,mu,sigma2\n"
        + "".join(
            f"{i},{lat[i]:.6f},{lon[i]:.6f},2024-01-01T08:00,{float(mu[i])!r},{float(s2[i])!r}\n"
            for i in range(n_all)
        )
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "urbandp", "mpc", "serve", "--grid", str(grid), "--listen", f"127.0.0.1:{port}",
         "--sigma2-max", "120", "--alpha", "5", "--epsilon", "0.01", "--epsilon-budget", "1000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        time.sleep(0.5)
        b0 = io_bytes(server.pid)
        t0 = time.perf_counter()
        client = Client(f"127.0.0.1:{port}", client_id="bench")
        connect_s = time.perf_counter() - t0
        connect_bytes = io_bytes(server.pid) - b0
        rows_out = []
        for n in sizes:
            h, w = {10: (1, 10), 50: (5, 10), 100: (5, 20), 200: (10, 20), 400: (20, 20)}[n]
            rect = (22.5 - 1e-4, 88.3 - 1e-4, 22.5 + (h - 1) * 0.0045 + 1e-4, 88.3 + (w - 1) * 0.0049 + 1e-4)
            mask = rectangle_mask(lat, lon, rect)
            assert mask.sum() == n, (n, mask.sum())
            v = (rng.random(n) < 0.6).astype(float)
            v[:5] = 1.0
            for f in FUNCTIONS:
                theta, theta2 = (80.0, 140.0) if f in ("count", "range") else (None, None)
                t = time.perf_counter()
                client.query(f, rect, vector=v, theta=theta, theta2=theta2 if f == "range" else None)
                cold = time.perf_counter() - t
                warm, nbytes = [], []
                for _ in range(args.repeat):
                    b = io_bytes(server.pid)
                    t = time.perf_counter()
                    client.query(f, rect, vector=v, theta=theta, theta2=theta2 if f == "range" else None)
                    warm.append(time.perf_counter() - t)
                    nbytes.append(io_bytes(server.pid) - b)
                t = time.perf_counter()
                sel = v > 0.5
                for _ in range(100):
                    run_query(f, mu[mask], clamp_sigma2(s2[mask], 0, 120), sel, 5, 1.0, theta, theta2, 1.0)
                plain = (time.perf_counter() - t) / 100
                row = {
                    "n": n,
                    "function": f,
                    "cold_s": round(cold, 4),
                    "warm_median_s": round(statistics.median(warm), 4),
                    "warm_all_s": [round(x, 4) for x in warm],
                    "warm_mb_median": round(statistics.median(nbytes) / 1e6, 3),
                    "plaintext_s": round(plain, 6),
                    "ratio_warm_vs_plaintext": round(statistics.median(warm) / plain, 1),
                    "paper_laptop_max_s": PAPER_LAPTOP_MAX_S.get(f.split("-")[0]),
                }
                rows_out.append(row)
                print(
                    f"n={n:4d} {f:10s} cold {cold:6.2f} s  warm {row['warm_median_s']:6.3f} s "
                    f"({row['warm_mb_median']:.2f} MB)  plaintext {plain * 1e3:.3f} ms  "
                    f"paper <= {row['paper_laptop_max_s']} s",
                    flush=True,
                )
        client.close()
    finally:
        server.terminate()
        server.wait(10)
    goals = {
        f: {"goal_s": g, "warm_400_s": next((r["warm_median_s"] for r in rows_out if r["n"] == 400 and r["function"] == f), None)}
        for f, g in GOALS_WARM_400_S.items()
    }  # fmt: skip
    result = {
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cpus": __import__("os").cpu_count(),
        "protocol": "SPU 0.9.5 CHEETAH, FM64, 18 fraction bits, two processes on 127.0.0.1",
        "connect_s": round(connect_s, 3),
        "connect_mb": round(connect_bytes / 1e6, 3),
        "repeat": args.repeat,
        "rows": rows_out,
        "goals_warm_n400": goals,
        "paper": "EMP-toolkit garbled circuits, laptop client: average <= 0.5 s, min <= 3 s, range <= 6 s up to n = 400",
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"connect (TCP + SPU link + dummy query for OT set-up): {connect_s:.2f} s, {connect_bytes / 1e6:.2f} MB"
    )
    for f, g in goals.items():
        print(f"goal warm n=400 {f}: {g['warm_400_s']} s (goal <= {g['goal_s']} s)")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
