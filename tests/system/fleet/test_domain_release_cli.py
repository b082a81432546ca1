"""Issue 33 on real data, as an analyst runs it: the four Austin days of 2016 over Capital Metro's routes as the
public domain (``--domain-geojson``, ``--domain-ring 1``) with L2-normalised contributions at epsilon 4, and the
planner over a GTFS feed. Real processes; the figures are checked against the published files."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from urbandp_process import assert_refused, owner_report, run_urbandp

REPO = Path(__file__).resolve().parents[3]
AUSTIN = REPO.parent / "shared" / "data" / "austin-avl"
DAYS = ("2016-11-24", "2016-11-25", "2016-11-27", "2016-12-16")
ROUTES = REPO / "tests" / "fixtures" / "capmetro-routes-2015.geojson"
MINI_GTFS = REPO / "tests" / "fixtures" / "gtfs-mini-schedule"
WINDOW = ["--speed-unit", "m/s", "--dates", ",".join(DAYS), "--hours", "6-22", "--epsilon-per-day", "4"]

pytestmark = pytest.mark.skipif(
    not AUSTIN.exists(), reason="../shared/data/austin-avl is not beside the repo"
)


def test_route_domain_release_on_four_austin_days(tmp_path: Path) -> None:
    out = tmp_path / "rel"
    inputs = [str(AUSTIN / f"{d}.csv") for d in DAYS]
    res = run_urbandp(
        "release", *inputs, "--out", str(out), *WINDOW, "--domain-geojson", str(ROUTES), "--domain-ring", "1",
        "--contribution-bounding", "l2", "--no-map",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    p = json.loads((out / "privacy.json").read_text())
    speed = pl.read_csv(out / "hat_speed.csv")
    # every domain HAT is a row: 265 cells (146 on the routes, 1 ring) x 16 slots
    assert p["domain"]["kind"] == "geojson" and p["domain"]["cells"] == 265
    assert speed.height == p["domain"]["hats"] == 265 * 16
    assert p["selection"]["every_domain_hat_released"] is True
    assert p["contribution_bounding"] == "l2" and p["max_hats_per_vehicle_day"] == 1
    # the same loss as with truncation: 20.49 by the zCDP bound, 19.37 by the exact Gaussian curve
    assert p["epsilon_per_window"] == pytest.approx(19.3666, abs=1e-3)
    u = p["usefulness"]
    assert u["useful_hats"] == int(speed["useful"].sum()) >= 1
    assert u["means_shown"] == speed["mean_speed"].is_not_null().sum()
    shown = speed.filter(pl.col("mean_speed").is_not_null())
    assert (shown["vehicle_days_ci95_low"] > 0).all()  # never a confident value where the count may be 0
    useful = speed.filter(pl.col("useful"))
    assert ((useful["ci95_high"] - useful["ci95_low"]) <= 10.0).all()
    # records off the domain: counted for the owner, never published
    owner = owner_report(out)
    assert owner["records_outside_domain"] > 0
    assert "records_outside_domain" not in p and "records_off_public_domain" not in json.dumps(p)


def test_domain_options_refused_in_one_line(tmp_path: Path) -> None:
    base = ["release", str(AUSTIN / "2016-12-16.csv"), "--out", str(tmp_path / "x"), *WINDOW]
    assert_refused(
        run_urbandp(*base, "--domain-geojson", str(ROUTES), "--domain-bbox", "30.15,-97.95,30.55,-97.6"),
        "give one public domain",
    )
    assert_refused(run_urbandp(*base, "--contribution-bounding", "l2"), "a public domain")
    assert_refused(run_urbandp(*base, "--domain-geojson", str(tmp_path / "nope.geojson")), "nope.geojson")
    bad = tmp_path / "bad.geojson"
    bad.write_text("{not json")
    assert_refused(run_urbandp(*base, "--domain-geojson", str(bad)), "bad.geojson")


def test_plan_over_a_gtfs_feed_predicts_useful_hats_and_spends_nothing(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    res = run_urbandp(
        "plan", str(AUSTIN / "2016-12-16.csv"), "--out", str(out), "--epsilon-per-day", "4",
        "--start", "2024-01-15", "--end", "2024-01-21", "--domain-gtfs", str(MINI_GTFS), "--resolution", "8",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    plan = json.loads((out / "plan.json").read_text())
    prior = plan["schedule_prior"]
    assert plan["spends"]["epsilon"] == 0 and plan["reads_data"] is False
    assert prior["scheduled_hats"] > 0 and prior["target_width_kmh"] == 10.0
    table = [row["expected_useful_hats"] for row in prior["by_epsilon"]]
    assert table == sorted(table)  # more epsilon, never fewer useful HATs


def test_the_spec_hash_takes_a_domain_file_by_content_not_by_path(tmp_path: Path) -> None:
    """Issue 32: the same spec over a copy of the routes in another folder, under another name, hashes alike."""
    hashes = []
    for name in ("a/routes.geojson", "b/other.geojson"):
        routes = tmp_path / name
        routes.parent.mkdir()
        routes.write_bytes(ROUTES.read_bytes())
        out = routes.parent / "rel"
        res = run_urbandp("release", str(AUSTIN / "2016-12-16.csv"), "--out", str(out), *WINDOW[:2],
                          "--start", "2016-12-16", "--end", "2016-12-16", "--hours", "6-22", "--epsilon-per-day", "4",
                          "--domain-geojson", str(routes), "--no-map")  # fmt: skip
        assert res.returncode == 0, res.stderr[-2000:]
        hashes.append(json.loads((out / "privacy.json").read_text())["spec_sha256"])
    assert hashes[0] == hashes[1]
