"""Shared by the benchmark scripts: the machine line and the results file, with the load average around a run."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def write_results(name: str, results: dict[str, object], load_before: tuple[float, float, float]) -> None:
    """Print the load average before and after, and write ``results/<name>.json`` as {meta, results}."""
    meta = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_avg_before": load_before,
        "load_avg_after": os.getloadavg(),
    }
    print(f"load average before {load_before}, after {meta['load_avg_after']}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
