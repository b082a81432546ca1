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
        round(by[("default", 4.0)]["useful"], 1) == 22.3
        and round(by[("default", 10.0)]["useful"], 1) == 108.7
    )
    assert all(r["empty_shown"] == 0 for r in results["rows"])


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
