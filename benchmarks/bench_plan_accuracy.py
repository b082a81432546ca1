"""Plan, then release with the same options: the planner's predicted useful HATs against the releases'.

For each dataset, epsilon per vehicle-day and bounding (``l2`` with ``--borrow-strength parent``, the best measured
configuration, and truncation to K = 96 with the same pooling), the plan is made as ``urbandp plan`` makes it and
``--runs`` releases are drawn with OpenDP noise (unseeded):

* ``austin4`` (four public Capital Metro days, hours 6-22, a public extent): the plan buys a pilot with
  ``--histogram-epsilon`` (``--pilot-epsilon``, default 1): the release's own noisy count of every domain HAT and
  a histogram of HATs per vehicle-day (:func:`urbandp.fleet._plan_forecast.paid_pilot`), charged beside the release;
* ``synth-month`` (``urbandp synth fleet``, 300 buses x 31 days, seed 1, and its own GTFS schedule): the plan
  reads the schedule only (``--domain-gtfs``, ring 1; spends nothing), and with ``--month-extent`` also the
  extent with a pilot;
* ``--domains routes`` on ``austin4``: Capital Metro's routes (GeoJSON, ring 1), planned from the route lengths
  with ``--fleet-size`` (vehicles a day), or with a pilot when no fleet size is given.

Printed and written (``benchmarks/results/plan_accuracy.json``): per row the predicted shown / useful / pooled
useful HATs (mean and 95% interval over the simulated releases), the releases' means, and the relative error of
the prediction ``(predicted - released) / released``. The target is within 30%.

    .venv/bin/python benchmarks/bench_plan_accuracy.py [--runs 5] [--datasets austin4,synth-month]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_useful import datasets, ensure_month  # noqa: E402
from results_file import write_results  # noqa: E402
from urbandp._contributions import ContributionSpec, get_backend  # noqa: E402
from urbandp._grid.slots import SlotSpec  # noqa: E402
from urbandp._privacy.noise import OpenDPNoise  # noqa: E402
from urbandp.fleet._domain import load_public_domain  # noqa: E402
from urbandp.fleet._options import (  # noqa: E402
    HatReleaseConfig,
    public_window,
    window_days,
)
from urbandp.fleet._pipeline import load_records, release_fleet  # noqa: E402
from urbandp.fleet._plan_forecast import make_plan, paid_pilot, pilot_loss  # noqa: E402


def plan(
    ds: dict[str, Any], cfg: HatReleaseConfig, pilot_epsilon: float | None, fleet_size: float | None = None
) -> dict[str, Any]:
    """What ``urbandp plan`` with these options writes, in-process (with a pilot when ``pilot_epsilon``)."""
    first, last, day_set = public_window(cfg)
    assert first is not None and last is not None
    days = window_days(first, last, day_set)
    domain = load_public_domain(cfg, days)
    assert domain is not None
    pilot = m_histogram = None
    if pilot_epsilon is not None:
        spec = ContributionSpec(
            cfg.resolution, SlotSpec(cfg.slot_minutes, *cfg.hours), first, last, cfg.speed_max, days=day_set
        )
        loaded = load_records(ds["paths"], None, ds["options"], window=spec)
        contributions = get_backend("polars").contributions(loaded.clean_lazy, spec)
        paid = paid_pilot(
            contributions, cfg, len(days), domain, pilot_loss(cfg, pilot_epsilon).rho, OpenDPNoise()
        )
        pilot, m_histogram = paid.pilot, paid.m_histogram
    return make_plan(
        cfg, len(days), domain=domain, pilot=pilot, m_histogram=m_histogram, fleet_size=fleet_size
    )


def row(
    ds: dict[str, Any],
    name: str,
    domain: str,
    bounding: str,
    eps: float,
    runs: int,
    pilot: float | None,
    fleet_size: float | None = None,
) -> dict[str, Any]:
    extra: dict[str, Any] = {"domain_bbox": ds["bbox"]} if domain == "extent" else dict(ds["routes"])
    cfg = HatReleaseConfig(
        epsilon_per_day=eps,
        contribution_bounding=bounding,
        borrow_strength="parent",
        queries="speed",
        **ds["window"],
        **extra,
    )
    t0 = time.perf_counter()
    # a pilot over the extent, or over a GeoJSON route domain without a fleet size; a GTFS schedule is free
    use_pilot = domain == "extent" or ("domain_geojson" in ds["routes"] and fleet_size is None)
    planned = plan(ds, cfg, pilot if use_pilot else None, fleet_size)
    plan_seconds = time.perf_counter() - t0
    prediction = planned["prediction"]
    got: dict[str, list[float]] = {"shown": [], "useful": [], "useful_pooled": []}
    for _ in range(runs):
        p = release_fleet(ds["paths"], cfg, options=ds["options"], noise=OpenDPNoise())[0].privacy
        use = p["usefulness"]
        got["shown"].append(float(use["means_shown"]))
        got["useful"].append(float(use["useful_hats"]))
        got["useful_pooled"].append(float(p["borrow_strength"]["useful_hats_pooled"]))
    out: dict[str, Any] = {
        "data": name,
        "domain": domain,
        "bounding": bounding,
        "epsilon_per_day": eps,
        "plan_source": prediction["source"],
        "pilot_epsilon": pilot if prediction["source"] == "pilot" else None,
        "fleet_size": fleet_size,
        "plan_seconds": round(plan_seconds, 1),
        "runs": runs,
    }
    for key in got:
        released = statistics.fmean(got[key])
        predicted = prediction[key]
        out[key] = {
            "predicted": predicted["mean"],
            "predicted_interval95": [predicted["low"], predicted["high"]],
            "released": round(released, 2),
            "released_per_run": got[key],
            "relative_error": round((predicted["mean"] - released) / released, 3) if released else None,
        }
    return out


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| data | domain (plan from) | bounding | eps | shown: plan / release | useful: plan [95%] / release | off by "
        "| pooled useful: plan [95%] / release | off by |",
        "|" + "---|" * 9,
    ]
    for r in rows:
        s, u, p = r["shown"], r["useful"], r["useful_pooled"]

        def off(v: dict[str, Any]) -> str:
            return "-" if v["relative_error"] is None else f"{100 * v['relative_error']:+.0f}%"

        lines.append(
            f"| {r['data']} | {r['domain']} ({r['plan_source']}) | {r['bounding']} | {r['epsilon_per_day']:g} | "
            f"{s['predicted']:.0f} / {s['released']:.0f} | {u['predicted']:.1f} [{u['predicted_interval95'][0]:.0f}-"
            f"{u['predicted_interval95'][1]:.0f}] / {u['released']:.1f} | {off(u)} | {p['predicted']:.1f} "
            f"[{p['predicted_interval95'][0]:.0f}-{p['predicted_interval95'][1]:.0f}] / {p['released']:.1f} | {off(p)} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--datasets", default="austin4,synth-month")
    ap.add_argument("--epsilons", default="4,10")
    ap.add_argument("--boundings", default="l2,truncate")
    ap.add_argument("--pilot-epsilon", type=float, default=1.0)
    ap.add_argument("--month-extent", action="store_true", help="also the month over the extent with a pilot")
    ap.add_argument(
        "--domains", default=None, help="extent and/or routes (default: extent; the month: routes)"
    )
    ap.add_argument("--fleet-size", type=float, default=None, help="routes: plan from route lengths and this")
    ap.add_argument("--results", default="plan_accuracy")
    args = ap.parse_args()
    load = os.getloadavg()
    rows = []
    for name in args.datasets.split(","):
        ds = datasets()[name]
        domains = ["extent"]
        if name == "synth-month":
            ensure_month()
            domains = ["routes", "extent"] if args.month_extent else ["routes"]
        if args.domains:
            domains = args.domains.split(",")
        for eps in (float(e) for e in args.epsilons.split(",")):
            for domain in domains:
                for bounding in args.boundings.split(","):
                    r = row(ds, name, domain, bounding, eps, args.runs, args.pilot_epsilon, args.fleet_size)
                    print(json.dumps(r), flush=True)
                    rows.append(r)
    write_results(args.results, {"rows": rows, "runs": args.runs, "markdown": table(rows)}, load)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
