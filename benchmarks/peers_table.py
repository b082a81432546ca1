"""The peer benchmark's tables from several result files, each cell from the newest run that has it.

``bench_peers.py`` can rerun part of the table (``--datasets``, ``--epsilons``, ``--extent``, ``--peers``) into
its own results file; this prints the whole table from those files. Later files override earlier ones cell by
cell, and a cell's contenders all come from one file (the errors on shared HATs are computed within a run), so
every row can be traced to the file named in its last column:

    .venv/bin/python benchmarks/peers_table.py peers peers_month10 peers_austin peers_austin_extent
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_peers import markdown_table, matched_table  # noqa: E402

Cell = tuple[str, float, bool]


def newest_cells(names: list[str]) -> tuple[list[dict[str, Any]], dict[Cell, str]]:
    """Rows of every cell from the last results file (of ``names``, in order) that has it, and its source."""
    chosen: dict[Cell, tuple[str, list[dict[str, Any]]]] = {}
    for name in names:
        path = HERE / "results" / f"{name}.json"
        rows = json.loads(path.read_text())["results"]["rows"]
        cells: dict[Cell, list[dict[str, Any]]] = {}
        for row in rows:
            cells.setdefault(
                (row["dataset"], float(row["epsilon_per_day"]), str(row.get("domain", bool(row["extent"])))),
                [],
            ).append(row)
        for cell, cell_rows in cells.items():
            chosen[cell] = (name, cell_rows)
    order = {"synth-month": 0, "austin4": 1, "austin1": 2}
    keys = sorted(chosen, key=lambda c: (order.get(c[0], 9), c[2], c[1]))
    return [row for key in keys for row in chosen[key][1]], {key: chosen[key][0] for key in keys}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("names", nargs="+", help="results files (benchmarks/results/NAME.json), oldest first")
    args = parser.parse_args()
    rows, sources = newest_cells(args.names)
    print(markdown_table(rows))
    print()
    verdicts = matched_table(rows).splitlines()
    print(verdicts[0][:-1] + "| run |")
    print(verdicts[1] + "---|")
    for line, source in zip(verdicts[2:], sources.values(), strict=True):
        print(f"{line} {source} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
