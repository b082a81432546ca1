"""Benchmark: the Opal 2016 daily table released from the raw file, error and noise-only cells over 20 releases.

Data: Transport for NSW Opal tap-on/tap-off counts per location and day, 8-14 August 2016
(``../shared/data/opal-2016/location_20160808-14.csv``: ``mode,date,tap,loc,count``, days ``20160814``, no bin,
two XML lines at its end). The published counts stand in for raw counts (they were already perturbed and
suppressed below 18 by the publisher, so no cell is a raw zero: the domain's 467 empty cells are).

Steps, as a user would run them (no script of one's own):

1. ``counts prepare`` (:func:`urbandp.counts._prepare.prepare`) with ``column day=date, location=loc``: the
   domain (7 days x 2 taps x 1 bin x 648 places = 9,072 cells);
2. ``counts release --dry-run`` at the README's unit (card-day, k = 4, epsilon 1: discrete Laplace scale 4):
   the recommended threshold and the noise-only cells it states;
3. 20 releases from the raw file with ``column`` at the recommended threshold, and 20 at the publisher's 18:
   per release, the noise-only cells (published cells whose raw count is 0, from the owner's report, never from
   the release) and the median and 90th-percentile relative error of published cells whose true count is >= 10.

Run: ``.venv/bin/python benchmarks/bench_counts_opal.py`` (about a minute). Writes
benchmarks/results/counts_opal.json; exits 0 with a note when the shared data is absent.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_file import write_results

REPO = Path(__file__).resolve().parents[1]
DAILY = REPO.parent / "shared" / "data" / "opal-2016" / "location_20160808-14.csv"
COLUMNS = ["day=date", "location=loc"]
UNIT: dict[str, Any] = {"input_kind": "counts", "unit": "card-day", "max_events": 4, "epsilon": 1.0}
RUNS = 20


def _errors(table: pl.DataFrame, truth: pl.DataFrame) -> list[float]:
    """Relative errors |released - true| / true of the published cells whose true count is >= 10."""
    keys = ["mode", "day", "tap", "bin", "location"]
    joined = table.drop_nulls("count").join(truth, on=keys, how="inner", suffix="_true")
    big = joined.filter(pl.col("count_true") >= 10)
    rel = (big["count"].cast(pl.Float64) - big["count_true"]).abs() / big["count_true"]
    return [float(x) for x in rel.to_list()]


def _runs(domain: Path, threshold: int, truth: pl.DataFrame, root: Path) -> dict[str, Any]:
    import urbandp as ud
    from urbandp.results import OwnerWarning, ReleaseWarning

    noise_only, medians, p90s, published, seconds = [], [], [], [], []
    for i in range(RUNS):
        out = root / f"t{threshold}-{i}"
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReleaseWarning)
            warnings.simplefilter("ignore", OwnerWarning)
            rel = ud.counts.release(
                DAILY, column=COLUMNS, domain=domain, suppress_below=threshold, out=out, **UNIT
            )
        seconds.append(time.perf_counter() - t0)
        noise_only.append(int(rel.owner["input_report"]["published_cells_with_raw_zero"]))
        errs = _errors(rel.table, truth)
        medians.append(statistics.median(errs))
        p90s.append(float(np.quantile(errs, 0.9)))
        published.append(rel.table.drop_nulls("count").height)
    suppression = rel.privacy.to_dict()["suppression"]
    return {
        "threshold": threshold,
        "stated_expected_noise_only_cells_at_most": suppression["expected_noise_only_cells_at_most"],
        "noise_only_cells_per_release": noise_only,
        "noise_only_cells_mean": statistics.fmean(noise_only),
        "expected_given_raw_zero_cells": None,  # filled by main (needs the domain's raw-zero count)
        "published_cells_median": statistics.median(published),
        "median_relative_error_true_ge_10": statistics.median(medians),
        "p90_relative_error_true_ge_10": statistics.median(p90s),
        "release_s_median": statistics.median(seconds),
    }


def main() -> int:
    if not DAILY.is_file():
        print(f"skipped: {DAILY} not present (the shared data folder beside the checkout)")
        return 0
    import urbandp as ud
    from urbandp._outputs import write_json
    from urbandp.counts._options import CountsReleaseSpec
    from urbandp.counts._prepare import prepare
    from urbandp.counts._tails import IntegerNoise

    load = os.getloadavg()
    prepared = prepare(DAILY, column=COLUMNS)
    truth = prepared.table.with_columns(pl.col("count").alias("count"))
    cells = prepared.domain.n_cells
    zeros = cells - truth.height
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        domain = root / "domain.json"
        write_json(domain, prepared.domain.to_json())
        plan = ud.counts.dry_run(CountsReleaseSpec(domain=str(domain), **UNIT))
        advice = plan["suppression_advice"]
        assert isinstance(advice, dict)
        recommended = int(advice["recommended_suppress_below"])
        law = IntegerNoise("discrete_laplace", float(advice["noise_scale"]))
        results: dict[str, Any] = {
            "cells": cells,
            "non_zero_cells": truth.height,
            "raw_zero_cells": zeros,
            "unit": "card-day, k = 4, epsilon 1 (discrete Laplace scale 4)",
            "advice": {k: v for k, v in advice.items() if k != "note"},
        }
        for name, t in (("recommended", recommended), ("publisher_18", 18)):
            run = _runs(domain, t, truth, root)
            run["expected_given_raw_zero_cells"] = zeros * law.tail_float(t)
            results[name] = run
            print(
                f"threshold {t}: noise-only cells per release {run['noise_only_cells_per_release']} (mean "
                f"{run['noise_only_cells_mean']:.2f}; stated at most "
                f"{run['stated_expected_noise_only_cells_at_most']:.2f}, expected over the {zeros} raw zeros "
                f"{run['expected_given_raw_zero_cells']:.2f}); median relative error (true >= 10) "
                f"{run['median_relative_error_true_ge_10']:.4%}, p90 {run['p90_relative_error_true_ge_10']:.4%}"
            )
        ok = results["recommended"]["noise_only_cells_mean"] <= advice["expected_noise_only_cells_at_most"]
        results["recommendation_holds_target"] = bool(ok)
    write_results("counts_opal", results, load)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
