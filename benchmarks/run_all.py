"""Run every benchmark (``benchmarks/bench_*.py``) and print one table of their headline figures.

Each benchmark writes ``benchmarks/results/<name>.json``; this script runs them one after another (a failing or
missing one is reported as such and the others still run), then prints, per benchmark, the figures whose keys
name a time, a rate, a ratio or a target. ``--table-only`` skips the runs and prints the table from the results
already on disk; ``--only NAME`` runs a subset.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
HEADLINE = ("_s", "ratio", "speedup", "per_s", "records_s", "target", "goal", "median", "hats")


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): value}


def headline(name: str) -> list[tuple[str, str]]:
    """The (key, value) figures of one results file worth a line in the table (scalars only)."""
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return [("status", "no results file")]
    flat = _flatten(json.loads(path.read_text()))
    rows = [
        (k, f"{v:.4g}" if isinstance(v, float) else str(v))
        for k, v in flat.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and any(h in k.lower() for h in HEADLINE)
    ]
    return rows[:12] or [("status", "no headline figures")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--table-only", action="store_true", help="print the table from existing results")
    parser.add_argument("--only", nargs="*", default=None, help="benchmark names, e.g. fleet counts")
    args = parser.parse_args()
    scripts = sorted(HERE.glob("bench_*.py"))
    names = [s.stem.removeprefix("bench_") for s in scripts]
    if args.only:
        names = [n for n in names if n in args.only]
    status: dict[str, str] = {}
    if not args.table_only:
        for name in names:
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, str(HERE / f"bench_{name}.py")], check=False)
            took = time.perf_counter() - t
            status[name] = (
                f"ok ({took:.0f} s)" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
            )
    print(f"{'benchmark':<12} {'figure':<60} value")
    for name in names:
        if name in status:
            print(f"{name:<12} {'run':<60} {status[name]}")
        for key, value in headline(name):
            print(f"{name:<12} {key[:60]:<60} {value}")
    return 1 if any(s.startswith("FAILED") for s in status.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
