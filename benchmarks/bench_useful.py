"""Issue 33: useful HATs and the coverage of their intervals, before and after, on real and synthetic fleets.

A released HAT is **useful** when its mean is shown (not withheld, not clamped) and its 95% interval is at most
``--target-width`` (10 km/h) wide. Each configuration is released ``--runs`` times with OpenDP noise (unseeded) at
the same privacy loss (epsilon 4 per vehicle-day, delta 1e-6, Gaussian, add/remove) and scored against the truth:
the HAT's mean over **all** its vehicle-days (untruncated, every record of the window, speeds clipped to [0, U]),
computed here from the records, independent of the release. Scores, means over the runs:

* ``released``, ``shown`` (a mean is shown), ``useful``;
* ``coverage_shown`` / ``coverage_useful``: share of shown / useful means whose interval holds the truth;
* ``empty_shown``: shown means of HATs with no vehicle at all (must be 0);
* ``median_abs_error`` of the shown means;
* ``useful_pooled``, ``coverage_pooled``, ``median_abs_error_pooled``: the same for the robust empirical Bayes
  columns of ``--borrow-strength parent`` (post-processing of the same release, so the same privacy loss).

Configurations: the public extent (``--domain-bbox``) or the route domain (Capital Metro's routes,
``tests/fixtures/capmetro-routes-2015.geojson``, ``--domain-ring 1``), each with today's truncation to K = 96 and
with L2-normalised contributions (``--contribution-bounding l2``).

    .venv/bin/python benchmarks/bench_useful.py [--runs 5] [--datasets austin4,synth-month]
Results: benchmarks/results/useful.json (``--results NAME``: results/NAME.json) and the table printed at the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from results_file import write_results  # noqa: E402
from urbandp._contributions import ContributionSpec, get_backend  # noqa: E402
from urbandp._grid.h3cells import cell_to_string  # noqa: E402
from urbandp._grid.slots import SlotSpec  # noqa: E402
from urbandp._privacy.noise import OpenDPNoise  # noqa: E402
from urbandp._records.validation import ValidationOptions  # noqa: E402
from urbandp.fleet._options import HatReleaseConfig  # noqa: E402
from urbandp.fleet._pipeline import load_records, release_fleet  # noqa: E402

AUSTIN = ROOT.parent / "shared" / "data" / "austin-avl"
AUSTIN_DAYS = tuple(
    dt.date.fromisoformat(d) for d in ("2016-11-24", "2016-11-25", "2016-11-27", "2016-12-16")
)
ROUTES = ROOT / "tests" / "fixtures" / "capmetro-routes-2015.geojson"
MONTH = HERE / "data" / "peers" / "synth_month.parquet"
MONTH_GTFS = HERE / "data" / "peers" / "synth_month_gtfs"


def datasets() -> dict[str, dict[str, Any]]:
    return {
        "austin4": {
            "paths": [AUSTIN / f"{d.isoformat()}.csv" for d in AUSTIN_DAYS],
            "options": ValidationOptions(speed_unit="m/s"),
            "window": {"dates": AUSTIN_DAYS, "hours": (6, 22)},
            "bbox": (30.15, -97.95, 30.55, -97.6),
            "routes": {"domain_geojson": ROUTES, "domain_ring": 1},
        },
        "synth-month": {
            "paths": [MONTH],
            "options": ValidationOptions(),
            "window": {"start": dt.date(2021, 11, 15), "end": dt.date(2021, 12, 15), "hours": (6, 22)},
            "bbox": (21.09, 72.75, 21.25, 72.91),
            "routes": {"domain_gtfs": MONTH_GTFS, "domain_ring": 1},
        },
    }


def ensure_month() -> None:
    """The synthetic month (300 buses x 31 days, seed 1) and its own public schedule, generated once."""
    if MONTH.exists() and MONTH_GTFS.exists():
        return
    MONTH.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(ROOT / ".venv" / "bin" / "urbandp"), "synth", "fleet", "--vehicles", "300", "--days", "31"]
    cmd += ["--out", str(MONTH), "--seed", "1", "--gtfs-out", str(MONTH_GTFS)]
    subprocess.run(cmd, check=True)


def truth(ds: dict[str, Any]) -> pl.DataFrame:
    """Per HAT (h3_cell, slot label): the mean over all its vehicle-days and their number (no truncation)."""
    w = ds["window"]
    days = w.get("dates")
    start, end = (days[0], days[-1]) if days else (w["start"], w["end"])
    slots = SlotSpec(60, *w["hours"])
    spec = ContributionSpec(7, slots, start, end, 65.0, days=days)
    loaded = load_records(ds["paths"], None, ds["options"], window=spec)
    c = get_backend("polars").contributions(loaded.clean_lazy, spec)
    per_hat = c.group_by("cell", "slot").agg(
        pl.col("mean_speed").mean().alias("truth"), pl.len().alias("vehicle_days")
    )
    return per_hat.select(
        cell_to_string(pl.col("cell")).alias("h3_cell"),
        slots.label_expr(pl.col("slot")).alias("slot"),
        "truth",
        "vehicle_days",
    )


def score_pooled(speed: pl.DataFrame, true: pl.DataFrame) -> dict[str, float]:
    """The robust empirical Bayes columns (``--borrow-strength parent``, post-processing of the same release)."""
    t = speed.join(true, on=["h3_cell", "slot"], how="left").filter(pl.col("pooled_mean_speed").is_not_null())
    covered = (t["pooled_ci95_low"] <= t["truth"]) & (t["truth"] <= t["pooled_ci95_high"])
    useful = t.filter(pl.col("pooled_useful"))
    useful_covered = (useful["pooled_ci95_low"] <= useful["truth"]) & (
        useful["truth"] <= useful["pooled_ci95_high"]
    )
    errors = (t["pooled_mean_speed"] - t["truth"]).abs().drop_nulls()
    return {
        "pooled": float(t.height),
        "useful_pooled": float(useful.height),
        "covered_pooled": float(covered.fill_null(False).sum()),
        "covered_useful_pooled": float(useful_covered.fill_null(False).sum()),
        "median_abs_error_pooled": float(errors.median()) if errors.len() else float("nan"),  # type: ignore[arg-type]
    }


def score(speed: pl.DataFrame, true: pl.DataFrame) -> dict[str, float]:
    t = speed.join(true, on=["h3_cell", "slot"], how="left")
    shown = t.filter(pl.col("mean_speed").is_not_null())
    covered = (shown["ci95_low"] <= shown["truth"]) & (shown["truth"] <= shown["ci95_high"])
    useful = shown.filter(pl.col("useful"))
    useful_covered = (useful["ci95_low"] <= useful["truth"]) & (useful["truth"] <= useful["ci95_high"])
    errors = (shown["mean_speed"] - shown["truth"]).abs().drop_nulls()
    return {
        "released": float(speed.height),
        "shown": float(shown.height),
        "useful": float(useful.height),
        "covered_shown": float(covered.fill_null(False).sum()),
        "covered_useful": float(useful_covered.fill_null(False).sum()),
        "empty_shown": float(shown["truth"].is_null().sum()),
        "median_abs_error": float(errors.median()) if errors.len() else float("nan"),  # type: ignore[arg-type]
        **score_pooled(speed, true),
    }


def run(
    ds: dict[str, Any], domain: str, bounding: str, runs: int, true: pl.DataFrame, epsilon: float = 4.0
) -> dict[str, Any]:
    extra: dict[str, Any] = {"domain_bbox": ds["bbox"]} if domain == "extent" else dict(ds["routes"])
    cfg = HatReleaseConfig(
        epsilon_per_day=epsilon,
        contribution_bounding=bounding,
        borrow_strength="parent",
        **ds["window"],
        **extra,
    )
    scores = []
    t0 = time.perf_counter()
    privacy: dict[str, Any] = {}
    for _ in range(runs):
        rel, _ = release_fleet(ds["paths"], cfg, options=ds["options"], noise=OpenDPNoise())
        scores.append(score(rel.speed, true))
        privacy = rel.privacy
    mean = {k: statistics.fmean(s[k] for s in scores) for k in scores[0]}
    predicted = predicted_useful(cfg, privacy) if "domain_gtfs" in extra else None
    shown_total = sum(s["shown"] for s in scores)
    useful_total = sum(s["useful"] for s in scores)
    pooled_total = sum(s["pooled"] for s in scores)
    pooled_useful_total = sum(s["useful_pooled"] for s in scores)
    return {
        "epsilon_per_day": epsilon,
        "domain": domain,
        "bounding": bounding,
        "runs": runs,
        "released": mean["released"],
        "shown": mean["shown"],
        "useful": mean["useful"],
        "useful_per_run": [s["useful"] for s in scores],
        "coverage_shown": sum(s["covered_shown"] for s in scores) / shown_total if shown_total else None,
        "coverage_useful": sum(s["covered_useful"] for s in scores) / useful_total if useful_total else None,
        "empty_shown": sum(s["empty_shown"] for s in scores),
        "median_abs_error": mean["median_abs_error"],
        "useful_pooled": mean["useful_pooled"],
        "useful_pooled_per_run": [s["useful_pooled"] for s in scores],
        "coverage_pooled": sum(s["covered_pooled"] for s in scores) / pooled_total if pooled_total else None,
        "coverage_useful_pooled": sum(s["covered_useful_pooled"] for s in scores) / pooled_useful_total
        if pooled_useful_total
        else None,
        "median_abs_error_pooled": mean["median_abs_error_pooled"],
        "epsilon_per_window": privacy.get("epsilon_per_window"),
        "delta_per_window": privacy.get("delta_per_window"),
        "domain_hats": (privacy.get("domain") or {}).get("hats"),
        "seconds_per_release": (time.perf_counter() - t0) / runs,
        "planner_predicted_useful": None if predicted is None else predicted["expected_useful_hats"],
        "planner_predicted_sd": None if predicted is None else predicted["sd"],
    }


def predicted_useful(cfg: HatReleaseConfig, privacy: dict[str, Any]) -> dict[str, Any]:
    """What ``urbandp plan --domain-gtfs`` predicts for this release from the schedule alone (spends nothing)."""
    from urbandp.fleet._domain import load_public_domain
    from urbandp.fleet._options import public_window, window_days
    from urbandp.fleet._plan_forecast import make_plan

    first, last, day_set = public_window(cfg)
    assert first is not None and last is not None
    days = window_days(first, last, day_set)
    plan = make_plan(cfg, len(days), domain=load_public_domain(cfg, days))
    prior = plan["schedule_prior"]
    assert isinstance(prior, dict)
    return prior


def _share(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _predicted(r: dict[str, Any]) -> str:
    if r.get("planner_predicted_useful") is None:
        return "-"
    return f"{r['planner_predicted_useful']:.1f} +- {r['planner_predicted_sd']:.1f}"


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| data | eps | domain | bounding | released | shown | useful (<= 10 km/h) | planner predicted | coverage shown "
        "| coverage useful | empty shown | median abs error | pooled: useful | pooled: coverage | pooled: median abs error |"
    )
    lines = [head, "|" + "---|" * 15]
    for r in rows:
        lines.append(
            f"| {r['data']} | {r.get('epsilon_per_day', 4.0):g} | {r['domain']} | {r['bounding']} | {r['released']:.1f} | {r['shown']:.1f} | "
            f"{r['useful']:.1f} | {_predicted(r)} | {_share(r['coverage_shown'])} | {_share(r['coverage_useful'])} | {r['empty_shown']:.0f} | "
            f"{r['median_abs_error']:.2f} | {r['useful_pooled']:.1f} | {_share(r['coverage_pooled'])} | "
            f"{r['median_abs_error_pooled']:.2f} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--datasets", default="austin4,synth-month")
    ap.add_argument("--domains", default="extent,routes")
    ap.add_argument("--results", default="useful", help="results/NAME.json")
    ap.add_argument("--epsilons", default="4", help="epsilon per vehicle-day, comma-separated")
    ap.add_argument("--boundings", default="truncate,l2")
    args = ap.parse_args()
    load = os.getloadavg()
    rows = []
    for name in args.datasets.split(","):
        ds = datasets()[name]
        if name == "synth-month":
            ensure_month()
        true = truth(ds)
        for eps in (float(e) for e in args.epsilons.split(",")):
            for domain in args.domains.split(","):
                for bounding in args.boundings.split(","):
                    row = {"data": name, **run(ds, domain, bounding, args.runs, true, eps)}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    write_results(args.results, {"rows": rows, "runs": args.runs, "markdown": table(rows)}, load)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
