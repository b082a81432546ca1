"""docs/fleet.md's table of the default release on four Austin weekdays is the benchmark's own (one source)."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_the_docs_table_is_the_benchmark_s_markdown() -> None:
    results = json.loads((REPO / "benchmarks" / "results" / "default_austin.json").read_text())["results"]
    assert results["markdown"] in (REPO / "docs" / "fleet.md").read_text()
    by = {(r["config"], r["epsilon_per_day"]): r for r in results["rows"]}
    # the figures the docs' prose states
    assert (
        round(by[("default", 4.0)]["useful"], 1) == 25.1
        and round(by[("default", 10.0)]["useful"], 1) == 120.4
    )
    docs = (REPO / "docs" / "fleet.md").read_text()
    assert "the defaults give 25.1 and 120.4" in docs
    assert all(r["empty_shown"] == 0 for r in results["rows"])


def test_the_docs_table_of_pooling_rules_is_the_benchmark_s() -> None:
    results = json.loads((REPO / "benchmarks" / "results" / "pooling_rules.json").read_text())["results"]
    assert results["markdown"] in (REPO / "docs" / "fleet.md").read_text()
    by = {r["rule"]: r for r in results["rows"]}
    # the default keeps the synthetic useful subset's coverage (tolerance 0.92) with more useful HATs than one sd
    assert by["default"]["synthetic"]["coverage_useful"] >= 0.92
    assert by["default"]["synthetic"]["useful_draws"] > by["one-sd"]["synthetic"]["useful_draws"]
    for eps in ("eps4", "eps10"):
        assert by["default"][eps]["useful"] > by["one-sd"][eps]["useful"]


def test_the_peer_table_of_the_default_is_the_benchmark_s() -> None:
    results = json.loads((REPO / "benchmarks" / "results" / "peers_default.json").read_text())["results"]
    docs = (REPO / "docs" / "fleet.md").read_text()
    assert results["useful_markdown"] in docs
    rows = {(r["domain"], r["contender"]): r for r in results["rows"]}
    for domain in ("routes", "extent"):  # the default stays ahead of every peer on useful HATs and HATs shown
        ours = rows[(domain, "urbandp")]
        peers = [r for (d, name), r in rows.items() if d == domain and not name.startswith("urbandp")]
        assert ours["useful"] > max(r["useful"] for r in peers)
        assert ours["hats"] > 2 * max(r["hats"] for r in peers)
