"""docs/fleet.md's planner tables are the benchmarks' results, written out: one source each (the JSON that
benchmarks/bench_month_scale.py and benchmarks/bench_plan_accuracy.py write), pinned here verbatim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "benchmarks" / "results"
DOC = (ROOT / "docs" / "fleet.md").read_text()


NAMES = [
    "month_scale",
    "plan_accuracy_austin4",
    "plan_accuracy_austin4_pilot4",
    "plan_accuracy_month",
    "plan_accuracy_austin4_routes_fleet",
    "plan_accuracy_austin4_routes_pilot",
]


@pytest.mark.parametrize("name", NAMES)
def test_docs_table_is_the_benchmark_result(name: str) -> None:
    table = json.loads((RESULTS / f"{name}.json").read_text())["results"]["markdown"]
    assert table in DOC, name
