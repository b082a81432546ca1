"""docs/sensing.md's table of the Kolkata season map is the benchmark's result, written out: one source (the
JSON that benchmarks/bench_sensing_kolkata.py writes), pinned here row by row."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "benchmarks" / "results" / "sensing_kolkata.json"
DOC = ROOT / "docs" / "sensing.md"


def table_rows(result: dict) -> list[str]:  # type: ignore[type-arg]
    """The rows docs/sensing.md shows: season, smoother, non-private spread and RMSE, DP at epsilon 4 and 1."""
    rows = []
    for season, s in result["seasons"].items():
        for smoother, r in s["smoothers"].items():
            base = r["nonprivate"]
            cells = [f"{season} ({s['readings']:,} readings)", smoother.upper(),
                     f"{base['spread']:.1f} / {base['rmse']:.1f}"]  # fmt: skip
            for eps in ("4.0", "1.0"):
                d = r["dp"][eps]
                cells.append(
                    f"{d['spread']:.1f} ({d['spread_ratio']:.0%}) / {d['rmse']:.1f} ({d['rmse_ratio']:.0%})"
                )
            rows.append("| " + " | ".join(cells) + " |")
    return rows


def daily_row(result: dict) -> str:  # type: ignore[type-arg]
    """The daily-window row: medians over the autumn days, non-private and DP at epsilon 4 and 1 (GP)."""
    d = result["daily"]
    cells = [f"autumn, {d['days']} daily windows (medians)", "GP"]
    for key in ("nonprivate", "4.0", "1.0"):
        cells.append(f"{d[key]['median_spread']:.1f} / {d[key]['median_rmse']:.1f}")
    return "| " + " | ".join(cells) + " |"


def test_docs_table_is_the_benchmark_result() -> None:
    result = json.loads(RESULTS.read_text())
    text = DOC.read_text()
    for row in [*table_rows(result), daily_row(result)]:
        assert row in text, f"docs/sensing.md lacks the benchmark row {row!r}"
    assert f"over {result['repeats']} releases" in text


if __name__ == "__main__":  # print the rows to paste into docs/sensing.md
    r = json.loads(RESULTS.read_text())
    print("\n".join([*table_rows(r), daily_row(r)]))
