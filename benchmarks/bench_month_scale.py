"""What fleet size and period reach a given number of useful HATs: the planner over synthetic schedules.

For each fleet size and period the synthetic fleet's public schedule is written (``urbandp synth fleet
--gtfs-out``: one block per bus over 28 routes of a Surat-like city; no record is generated or read) and the
planner predicts the release of the default configuration (L2-normalised contributions, borrowed strength, the
route domain of the schedule widened by one ring, hours 6-22, 60-minute slots, resolution 7, epsilon per
vehicle-day ``--epsilon``): useful HATs per HAT and pooled, with their 95% interval over the simulated releases
(:func:`urbandp.fleet._predict.predict_release`, which runs the release itself on fleets drawn from the schedule).

docs/fleet.md's "Month-scale releases" table is this script's ``markdown`` (a test checks the two agree).

    .venv/bin/python benchmarks/bench_month_scale.py [--vehicles 30,100,300] [--days 5,14,31] [--runs 3]
Results: benchmarks/results/month_scale.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from results_file import write_results  # noqa: E402
from urbandp._synth.fleet import FleetSpec, write_fleet_gtfs  # noqa: E402
from urbandp.fleet._domain import load_public_domain  # noqa: E402
from urbandp.fleet._options import (  # noqa: E402
    HatReleaseConfig,
    public_window,
    window_days,
)
from urbandp.fleet._predict import predict_release  # noqa: E402

START = dt.date(2021, 11, 15)


def predict(vehicles: int, days: int, epsilon: float, runs: int, folder: Path) -> dict[str, Any]:
    feed = folder / f"gtfs-{vehicles}-{days}"
    write_fleet_gtfs(FleetSpec(vehicles=vehicles, days=days, seed=1, start=START), feed)
    cfg = HatReleaseConfig(
        epsilon_per_day=epsilon,
        start=START,
        end=START + dt.timedelta(days=days - 1),
        hours=(6, 22),
        domain_gtfs=feed,
        domain_ring=1,
        contribution_bounding="l2",
        borrow_strength="parent",
        queries="speed",
    )
    first, last, day_set = public_window(cfg)
    assert first is not None and last is not None
    public = window_days(first, last, day_set)
    got = predict_release(cfg, len(public), load_public_domain(cfg, public), runs=runs)["prediction"]
    assert isinstance(got, dict)
    return {
        "vehicles": vehicles,
        "days": days,
        "epsilon_per_day": epsilon,
        "shown": got["shown"],
        "useful": got["useful"],
        "useful_pooled": got["useful_pooled"],
        "runs": runs,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| buses | days | means shown | useful HATs [95%] | useful, pooled [95%] |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        u, p = r["useful"], r["useful_pooled"]
        lines.append(
            f"| {r['vehicles']} | {r['days']} | {r['shown']['mean']:.0f} | {u['mean']:.0f} [{u['low']:.0f}-"
            f"{u['high']:.0f}] | {p['mean']:.0f} [{p['low']:.0f}-{p['high']:.0f}] |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--vehicles", default="30,100,300")
    ap.add_argument("--days", default="5,14,31")
    ap.add_argument("--epsilon", type=float, default=4.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--results", default="month_scale")
    args = ap.parse_args()
    load = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for vehicles in (int(v) for v in args.vehicles.split(",")):
            for days in (int(d) for d in args.days.split(",")):
                rows.append(predict(vehicles, days, args.epsilon, args.runs, Path(tmp)))
                print(rows[-1], flush=True)
    write_results(args.results, {"rows": rows, "markdown": table(rows)}, load)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
