"""The fleet's best release by default, as a new user runs it: no bounding or pooling flag. One real process on a
small synthetic fleet with a public extent; the published files are read back."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from urbandp_process import run_urbandp

from urbandp._synth.fleet import generate_fleet, write_fleet

BBOX = "21.09,72.75,21.25,72.91"


def test_a_release_without_flags_is_l2_and_pooled_and_names_what_it_shows(tmp_path: Path) -> None:
    data = write_fleet(
        generate_fleet(vehicles=40, days=2, seed=5, records_per_vehicle_day=200), tmp_path / "fleet.parquet"
    )
    out = tmp_path / "rel"
    res = run_urbandp(
        "release", str(data), "--out", str(out), "--epsilon-per-day", "10", "--domain-bbox", BBOX,
        "--start", "2021-11-15", "--end", "2021-11-16",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    p = json.loads((out / "privacy.json").read_text())
    # chosen automatically, stated beside the value
    assert p["contribution_bounding"] == "l2" and p["max_hats_per_vehicle_day"] == 1
    assert p["contribution_bounding_chosen"] == "auto: l2 (a public domain and Gaussian noise allow it)"
    assert p["borrow_strength_chosen"] == "auto: parent (add-remove and the report estimator allow it)"
    assert p["borrow_strength"]["hats_pooled"] >= 2
    # the estimand and the promise of the values shown
    assert p["estimand"]["name"] == "weighted mean of vehicle-day mean speeds"
    assert "1/sqrt(m)" in p["estimand"]["definition"]
    assert p["usefulness"]["values_shown"].startswith("pooled")
    assert p["borrow_strength"]["promise_shown"] == "95% on average over the pooled HATs"
    page = (out / "map.html").read_text()
    assert "Mean of vehicle-day mean speeds per hexagon and hour" in page
    assert "95% on average over the pooled hexagons" in page
    # hex_id beside h3_cell, in every released format
    speed = pl.read_csv(out / "hat_speed.csv")
    assert speed.columns[:2] == ["h3_cell", "hex_id"] and speed.height > 0
    assert (speed["hex_id"] == speed["h3_cell"]).all()
    assert (pl.read_parquet(out / "hat_speed.parquet")["hex_id"] == speed["h3_cell"]).all()
    features = json.loads((out / "hat_speed.geojson").read_text())["features"]
    assert [f["properties"]["hex_id"] for f in features] == speed["h3_cell"].to_list()
