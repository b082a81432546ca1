"""docs/survey.md's GeoLife OD figures are those of ``benchmarks/results/survey_geolife.json`` (one source per
fact: the benchmark writes them, this test pins the page to them)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_docs_state_the_benchmark_figures() -> None:
    results = json.loads((ROOT / "benchmarks" / "results" / "survey_geolife.json").read_text())["results"]
    page = " ".join((ROOT / "docs" / "survey.md").read_text().split())
    free, *bounded = results["by_bound"]
    users = sorted(results["trips_per_person"].values())
    assert f"make {results['trips']} trips" in page and f"{users[0]} and {users[1]} per user" in page
    assert f"{free['tv_joint_released']:.2f} as released, {free['tv_joint_debiased']:.2f} de-biased" in page
    top = f"{free['top10_median_rel_error_released']:.0%} released, {free['top10_median_rel_error_debiased']:.0%}"
    assert top.replace("%", " %") in page
    assert f"{free['ci95_coverage']:.0%} of the 95 % intervals".replace("%", " %", 1) in page
    assert f"K x {free['epsilon_per_trip']:.2f}" in page
    for row in bounded[1:]:
        assert f"{row['epsilon_per_person']:.1f} at K = {row['max_trips_per_person']}" in page
    assert f"{results['busiest_person_loss_without_bound']:,.0f}" in page
