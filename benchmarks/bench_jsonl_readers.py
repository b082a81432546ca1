"""Benchmark (issue 32): is our JSON Lines reader worth keeping next to Polars' and PyArrow's own readers?

The same ITMS-shaped file as bench_jsonl.py (600 k records, nested ``location.coordinates``), read into the
columns a release needs, by three readers in the same run, alternating, median of ``--repeat`` runs each:

* ``urbandp``: :func:`urbandp._records.readers.read_json_lines` (schema from a sample, one multi-threaded parse, the
  bad lines quarantined with their line numbers);
* ``polars``: ``pl.read_ndjson`` of the whole file, then the same columns;
* ``pyarrow``: ``pyarrow.json.read_json``, then the same columns.

And the same three on a copy with 20 records cut in half: the two library readers refuse the whole file (no line
is quarantined, nothing is read), which is what the project's rule "bad rows never crash and never vanish" forbids.
The verdict: keep ours where it is at least as fast on clean files, or where the others cannot read the file at all.

    .venv/bin/python benchmarks/bench_jsonl_readers.py --repeat 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_jsonl import _ensure_file, _with_bad_lines  # noqa: E402
from results_file import write_results  # noqa: E402

COLUMNS = ["vehicle", "timestamp", "speed", "latitude", "longitude"]


def _urbandp(path: Path) -> int:
    from urbandp._records.readers import read_json_lines

    frame = read_json_lines(path)
    return frame.filter(pl.col("__record_ok")).height


def _polars(path: Path) -> int:
    frame = pl.read_ndjson(path)
    coords = pl.col("location").struct.field("coordinates")
    return frame.select(
        pl.col("trip_id").alias("vehicle") if "trip_id" in frame.columns else pl.first(),
        coords.list.get(1).alias("latitude"),
        coords.list.get(0).alias("longitude"),
    ).height


def _pyarrow(path: Path) -> int:
    import pyarrow.json as pj

    table = pj.read_json(path)
    return table.num_rows


def _time(fn: Callable[[Path], int], path: Path) -> tuple[float | None, str]:
    start = time.perf_counter()
    try:
        rows = fn(path)
    except Exception as err:  # a library reader refusing the whole file is a result here, not a crash
        return None, f"failed: {type(err).__name__}: {str(err).splitlines()[0][:120]}"
    return time.perf_counter() - start, f"{rows:,} rows"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()
    clean, n = _ensure_file(300, 2)
    bad = _with_bad_lines(clean, 20)
    readers = {"urbandp": _urbandp, "polars": _polars, "pyarrow": _pyarrow}
    results: dict[str, object] = {"records": n}
    for label, path in (("clean", clean), ("20 bad lines", bad)):
        times: dict[str, list[float]] = {k: [] for k in readers}
        notes: dict[str, str] = {}
        for _ in range(args.repeat):
            for name, fn in readers.items():
                seconds, note = _time(fn, path)
                notes[name] = note
                if seconds is not None:
                    times[name].append(seconds)
        row = {
            name: {"median_s": statistics.median(t) if t else None, "result": notes[name]}
            for name, t in times.items()
        }
        results[label] = row
        print(f"{label} ({n:,} records):")
        for name, r in row.items():
            median = r["median_s"]
            shown = f"{median:.2f} s" if median is not None else "-"
            ratio = ""
            if median is not None and row["urbandp"]["median_s"] and name != "urbandp":
                ratio = f" ({median / row['urbandp']['median_s']:.2f}x urbandp's time)"
            print(f"  {name:8s} {shown}{ratio}  {r['result']}")
    write_results("jsonl_readers", results, load_before)


if __name__ == "__main__":
    main()
