"""Issue 33: the planner's prediction from the GTFS schedule against releases. The synthetic fleet writes its own
public schedule (``urbandp synth fleet --gtfs-out``); ``urbandp plan --domain-gtfs`` predicts the useful HATs from
it without reading a record, and the releases must land within 25% of it."""

from __future__ import annotations

import datetime as dt
import json
import statistics
from pathlib import Path

from urbandp_process import run_urbandp

from urbandp._privacy.noise import OpenDPNoise
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._pipeline import release_fleet


def test_plan_over_the_fleet_s_schedule_predicts_the_useful_hats_of_its_releases(tmp_path: Path) -> None:
    """150 buses x 7 days (seed 3), routes plus one ring, L2-normalised, epsilon 4: the plan, which reads only the
    feed, predicted 173 useful HATs; three releases gave 158, 157 and 154 (within 12%)."""
    fleet, feed = tmp_path / "fleet.parquet", tmp_path / "gtfs"
    made = run_urbandp("synth", "fleet", "--vehicles", "150", "--days", "7", "--seed", "3", "--out", str(fleet),
                       "--gtfs-out", str(feed))  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    window = ["--start", "2021-11-15", "--end", "2021-11-21", "--hours", "6-22", "--epsilon-per-day", "4"]
    domain = ["--domain-gtfs", str(feed), "--domain-ring", "1", "--contribution-bounding", "l2"]
    planned = run_urbandp("plan", str(fleet), "--out", str(tmp_path / "plan"), *window,
                          *domain)  # fmt: skip
    assert planned.returncode == 0, planned.stderr[-2000:]
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
    assert plan["spends"]["epsilon"] == 0 and plan["reads_data"] is False
    predicted = plan["schedule_prior"]["expected_useful_hats"]
    assert plan["schedule_prior"]["hats_per_vehicle_day"] > 50  # from the feed's block_id
    cfg = HatReleaseConfig(
        epsilon_per_day=4.0, start=dt.date(2021, 11, 15), end=dt.date(2021, 11, 21), hours=(6, 22),
        domain_gtfs=feed, domain_ring=1, contribution_bounding="l2",
    )  # fmt: skip
    got = [
        release_fleet([fleet], cfg, noise=OpenDPNoise())[0].privacy["usefulness"]["useful_hats"]  # type: ignore[index]
        for _ in range(3)
    ]
    assert abs(predicted - statistics.fmean(got)) <= 0.25 * statistics.fmean(got), (predicted, got)
