"""System tests of the fleet release: the CLI on generated data, the real Austin AVL data and bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import h3
import numpy as np
import pandas as pd
import polars as pl
import pytest
from scipy import stats
from typer.testing import CliRunner
from warm_process import run_warm

from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp._synth.fleet import generate_fleet, write_fleet
from urbandp.cli import app
from urbandp.fleet._hat_release import _release_hats
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._pipeline import load_records, release_fleet

runner = CliRunner()
REQUIRED_PRIVACY_KEYS = {
    "noise_scale",
    "epsilon_per_hat_per_day",
    "epsilon_per_day",
    "cumulative_epsilon_per_day",
    "max_hats_per_vehicle_day",
    "hats_released",
    "neighbouring",
}


@pytest.fixture(scope="module")
def fleet_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    df = generate_fleet(vehicles=80, days=4, seed=3, records_per_vehicle_day=500)
    return write_fleet(df, tmp_path_factory.mktemp("fleet") / "fleet.parquet")


def test_cli_release_writes_every_output_with_consistent_accounting(fleet_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel"
    res = runner.invoke(
        app,
        [
            "release",
            str(fleet_file),
            "--out",
            str(out),
            "--epsilon-per-day",
            "20",
            "--max-hats-per-vehicle-day",
            "16",
            "--hours",
            "9-11",  # 2 slots: threshold 57 vehicle-days; the busiest HATs hold ~270 (about 23 pass)
            "--domain-bbox",
            "21.09,72.75,21.25,72.91",
            "--min-vehicles-per-day",
            "5",
            "--mechanism",
            "laplace",
            "--queries",
            "speed,speeding",
        ],
    )
    assert res.exit_code == 0, res.output
    for name in ("hat_speed.csv", "hat_speeding.csv", "privacy.json", "map.html"):
        assert (out / name).is_file(), name
    assert not (out / "quarantine.csv").exists()  # raw rejected rows are data-owner material (issue 9 item 2)
    owner = tmp_path / "owner_only" / "rel"
    speed = pl.read_csv(out / "hat_speed.csv")
    speeding = pl.read_csv(out / "hat_speeding.csv")
    assert {"h3_cell", "slot", "mean_speed", "noise_scale", "epsilon_hat_day"} <= set(speed.columns)
    assert {"h3_cell", "slot", "vehicles_over_limit_per_day", "noise_scale", "epsilon_hat_day"} <= set(
        speeding.columns
    )
    p = json.loads((out / "privacy.json").read_text())
    assert set(p) >= REQUIRED_PRIVACY_KEYS
    for key in ("noise_scale", "epsilon_per_hat_per_day", "epsilon_per_day"):
        assert {"speed", "speeding"} <= set(p[key])
    o = json.loads((owner / "input_report.json").read_text())
    assert "records_in" not in p and o["records_in"] == pl.read_parquet(fleet_file).height
    q = pl.read_csv(owner / "quarantine.csv")
    assert "../owner_only/rel/quarantine.csv" in p["not_dp_outputs"]
    assert o["records_quarantined"] == q.height == sum(o["quarantine_reasons"].values())
    assert q.height > 0 and q["reason"].null_count() == 0
    parts = p["epsilon_per_day"]
    assert p["cumulative_epsilon_per_day"] == pytest.approx(
        parts["speed"] + parts["speeding"] + parts["selection"]
    )
    assert p["cumulative_epsilon_per_day"] <= 20.0 + 1e-12
    assert p["hats_released"] == speed.height == speeding.height
    assert speed.height > 0
    # per-day epsilon is the sum of the K largest per-HAT epsilons (report III E)
    k = min(p["max_hats_per_vehicle_day"], speed.height)
    assert parts["speed"] == pytest.approx(
        float(np.sort(speed["epsilon_hat_day"].to_numpy())[::-1][:k].sum())
    )
    html = (out / "map.html").read_text()
    # Leaflet is inlined: nothing is loaded but the basemap tiles (OpenStreetMap's by default, with attribution)
    assert re.search(r"<(link|img|iframe)\b|<script[^>]*\bsrc=|@import", html) is None
    from urbandp._reports.map import leaflet_assets

    found = set(re.findall(r"https?://[^\"'\s<>)\\]+", html))
    inlined = set(re.findall(r"https?://[^\"'\s<>)\\]+", "".join(leaflet_assets()[:2])))
    assert found - inlined <= {
        "http://www.w3.org/2000/svg",
        "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
        "https://www.openstreetmap.org/copyright",
    }
    assert "map.html" in res.output.replace("\n", "")  # Rich wraps a long temporary path at any character


def test_exact_answers_match_an_independent_pandas_h3_computation(fleet_file: Path) -> None:
    """With no noise (test-only source), Query 1 and 2 equal a row-wise pandas + h3-py recomputation."""
    cfg = HatReleaseConfig(
        noise_scale=1.0,
        neighbouring="replace-one",
        selection="public-threshold",
        min_vehicles_per_day=0,
        max_hats_per_vehicle_day=10_000,
        precision=9,
        queries=("speed", "speeding"),
    )
    # K = 10,000 at B = 1 states epsilon 3,520 per vehicle-day: the library refuses it like the CLI (issue 30), so
    # this exact-answer check runs labelled NOT DP
    release, _ = release_fleet(
        [fleet_file],
        cfg,
        noise=ExactNoiseForTesting(acknowledge_not_private=True),
        allow_meaningless_epsilon=True,
    )
    assert release.privacy["differentially_private"] is False
    from urbandp._records.validation import ValidationOptions

    # every valid record, with coordinates; presence-public keeps bad speeds for presence, imputed (issue 21)
    df = load_records([fleet_file], options=ValidationOptions(impute_speed_kmh=32.5)).clean.to_pandas()
    df = df[(df.timestamp.dt.hour >= 9) & (df.timestamp.dt.hour < 21)].copy()
    df["cell"] = [h3.latlng_to_cell(a, b, 7) for a, b in zip(df.latitude, df.longitude, strict=True)]
    df["slot"] = df.timestamp.dt.strftime("%H:00-") + (df.timestamp.dt.hour + 1).map("{:02d}:00".format)
    df["day"] = df.timestamp.dt.date
    df["clipped"] = df.speed.clip(0, 65)
    per_vd = df.groupby(["cell", "slot", "day", "vehicle"]).agg(mean=("clipped", "mean"), mx=("speed", "max"))
    per_hat = per_vd.groupby(["cell", "slot"]).agg(
        q1=("mean", "mean"), q2=("mx", lambda s: (s > 35).sum() / 4)
    )
    per_hat.index = per_hat.index.set_names(["h3_cell", "slot"])
    # public-threshold with threshold 0 keeps the cells seen in all 12 slots (report IV B)
    full_cells = per_hat.groupby(level="h3_cell").size().loc[lambda s: s == 12].index
    per_hat = per_hat[per_hat.index.get_level_values("h3_cell").isin(full_cells)]
    ours = (
        release.speed.join(release.speeding, on=["h3_cell", "slot"])
        .to_pandas()
        .set_index(["h3_cell", "slot"])
    )
    joined = per_hat.join(ours, how="inner")
    assert len(joined) == len(per_hat) == len(ours) > 0
    np.testing.assert_allclose(joined["mean_speed"], joined["q1"], atol=1e-6)
    np.testing.assert_allclose(joined["vehicles_over_limit_per_day"], joined["q2"], atol=1e-9)


def test_release_noise_is_laplace_with_the_stated_scale() -> None:
    """OpenDP noise (never seeded): (released - true) / B over 3,000 HATs must be Laplace(0, 1).

    Kolmogorov-Smirnov at alpha = 1e-7 (three tests: a false alarm 3e-7 of runs; at 1e-4 it was 3e-4, and the
    variance check below is what sees a scale 10% off); the sample variance of Laplace(b = 2) has
    sd sqrt((24 - 4) b^4 / n) = 0.33 at n = 3,000, so [8 - 5 sd, 8 + 5 sd] is the tolerance for 2 b^2 = 8.
    """
    n_hats = 3000
    contrib = pl.DataFrame(
        {
            "cell": pl.Series(np.arange(n_hats) + 0x8742D9D69FFFFFF, dtype=pl.UInt64),
            "slot": pl.Series([9] * n_hats, dtype=pl.Int16),
            "day": [pd.Timestamp("2021-11-15").date()] * n_hats,
            "vehicle": [f"v{i}" for i in range(n_hats)],
            "n_records": pl.Series([1] * n_hats, dtype=pl.UInt32),
            "mean_speed": [30.0] * n_hats,
            "max_speed": [30.0] * n_hats,
        }
    )
    cfg = HatReleaseConfig(
        noise_scale=2.0,
        neighbouring="replace-one",
        selection="public-threshold",
        hours=(9, 10),
        min_vehicles_per_day=0,
        max_hats_per_vehicle_day=1,
        precision=9,
        queries=("speed", "speeding"),
    )
    r = _release_hats(contrib, cfg, 1, OpenDPNoise())
    z = r.speed["mean_speed"].to_numpy() - 30.0
    assert z.size == n_hats
    assert stats.kstest(z / 2.0, stats.laplace.cdf).pvalue > 1e-7
    assert 8 - 5 * 0.33 < z.var() < 8 + 5 * 0.33
    w = r.speeding["vehicles_over_limit_per_day"].to_numpy()  # true value 0, noisy value clipped at 0
    # max(Laplace, 0): half are 0 (binomial sd sqrt(0.25 / 3000) = 0.0091, 5 sd tolerance), the rest Exp(b = 2)
    assert abs((w == 0).mean() - 0.5) < 5 * 0.0091
    assert stats.kstest(w[w > 0] / 2.0, stats.expon.cdf).pvalue > 1e-7
    # The Gaussian mechanism with sigma = 2: (released - true) / sigma is N(0, 1) (same KS level).
    g = _release_hats(contrib, cfg.model_copy(update={"mechanism": "gaussian"}), 1, OpenDPNoise())
    zg = g.speed["mean_speed"].to_numpy() - 30.0
    assert stats.kstest(zg / 2.0, stats.norm.cdf).pvalue > 1e-7


def test_other_formats_give_the_same_records(fleet_file: Path, tmp_path: Path) -> None:
    df = pl.read_parquet(fleet_file).head(5000)
    counts = set()
    for ext in ("csv", "jsonl", "json", "parquet"):
        path = write_fleet(df, tmp_path / f"f.{ext}")
        loaded = load_records([path])
        counts.add((loaded.clean.height, loaded.quarantine.height))
    assert len(counts) == 1


def test_explore_writes_the_resolution_table_and_histograms(fleet_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "explore"
    res = runner.invoke(app, ["explore", str(fleet_file), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "DATA OWNER ONLY" in res.output
    table = pl.read_csv(out / "resolution_comparison.csv")
    assert table["resolution"].to_list() == [6, 7, 8]
    assert table["cells"].to_list() == sorted(table["cells"].to_list())  # finer grid, more cells
    assert (out / "vehicles_per_hat_per_day.png").stat().st_size > 5000
    assert (out / "hats_per_vehicle_day.png").stat().st_size > 5000
    assert "NOT differentially private" in (out / "README.txt").read_text()


# --- bad input: one line on stderr, exit code 2 (run as a real process) ------------------------------------------


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_warm(list(args), timeout=120)


@pytest.mark.parametrize(
    ("make_args", "message"),
    [
        (
            lambda d, f: ["release", str(d / "nope.parquet"), "--out", str(d / "o"), "--noise-scale", "1"],
            "nope.parquet: not found",
        ),
        (
            lambda d, f: ["release", str(f), "--out", str(d / "o")],
            "exactly one of --noise-scale or --epsilon-per-day",
        ),
        (
            lambda d, f: [
                "release",
                str(f),
                "--out",
                str(d / "o"),
                "--noise-scale",
                "1",
                "--epsilon-per-day",
                "2",
            ],
            "exactly one",
        ),
        (
            lambda d, f: ["release", str(f), "--out", str(d / "o"), "--noise-scale", "1", "--hours", "21-9"],
            "--hours must satisfy 0 <= start < end <= 24",
        ),
        (
            lambda d, f: [
                "release",
                str(f),
                "--out",
                str(d / "o"),
                "--noise-scale",
                "1",
                "--selection",
                "magic",
            ],
            "selection",
        ),
        (
            lambda d, f: ["release", str(d / "nocol.csv"), "--out", str(d / "o"), "--noise-scale", "1"],
            "missing required column",
        ),
        (
            lambda d, f: ["release", str(d / "empty.csv"), "--out", str(d / "o"), "--noise-scale", "1"],
            "no records",
        ),
        (
            lambda d, f: ["release", str(f), "--out", str(d / "o"), "--config", str(d / "bad.toml")],
            "bad.toml: not TOML",
        ),
        (
            lambda d, f: ["release", str(f), "--out", str(d / "o"), "--config", str(d / "unknown.toml")],
            "bogus in {d}/unknown.toml [release] is not an option",
        ),
        (
            lambda d, f: [
                "release",
                str(f),
                "--out",
                str(d / "o"),
                "--noise-scale",
                "1",
                "--speed-unit",
                "furlongs",
            ],
            "speed unit",
        ),
        (
            lambda d, f: [
                "release",
                str(f),
                "--out",
                str(d / "o"),
                "--noise-scale",
                "1",
                "--start",
                "2030-01-01",
                "--end",
                "2030-01-02",
            ],
            "valid records lies inside the window",
        ),
        (
            lambda d, f: [
                "release",
                str(f),
                "--out",
                str(d / "o"),
                "--noise-scale",
                "0.01",
                "--budget-per-day",
                "1",
                "--neighbouring",
                "replace-one",
                "--selection",
                "public-threshold",
                "--min-vehicles-per-day",
                "0",
            ],
            "privacy budget exceeded",
        ),
    ],
)
def test_unusable_input_exits_2_with_one_line(
    fleet_file: Path, tmp_path: Path, make_args, message: str
) -> None:
    (tmp_path / "nocol.csv").write_text("a,b\n1,2\n")
    (tmp_path / "empty.csv").write_text("license_plate,observationDateTime,location.coordinates,speed\n")
    (tmp_path / "bad.toml").write_text("[release\nnoise_scale = 1\n")
    (tmp_path / "unknown.toml").write_text("[release]\nnoise_scale = 1\nbogus = 3\n")
    proc = _run(*make_args(tmp_path, fleet_file))
    message = message.format(d=tmp_path)  # a config file's key is named with the file
    assert proc.returncode == (4 if "budget" in message else 2), proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("urbandp: error:") and message in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


# --- real data -----------------------------------------------------------------------------------------------------


@pytest.mark.real_data
def test_release_on_real_austin_avl(shared_data: Path, tmp_path: Path) -> None:
    """Austin CapMetro AVL: mph in 2015 files, m/s from 2016 (values are multiples of 0.447), UTC offsets written."""
    austin = shared_data / "austin-avl"
    out = tmp_path / "austin"
    res = runner.invoke(
        app,
        [
            "release",
            str(austin),
            "--out",
            str(out),
            "--speed-unit",
            "mph",
            "--speed-unit-since",
            "2016-01-01=m/s",
            "--neighbouring",
            "replace-one",
            "--selection",
            "public-threshold",
            "--min-vehicles-per-day",
            "3",
            "--start",
            "2016-11-24",
            "--end",
            "2016-11-27",
            "--epsilon-per-day",
            "10",
        ],
    )
    assert res.exit_code == 0, res.output
    p = json.loads((out / "privacy.json").read_text())
    # exact counts of the owner's records are owner material, never in the public privacy.json (issue 21)
    owner = json.loads((tmp_path / "owner_only" / "austin" / "input_report.json").read_text())
    for key in ("records_in", "records_quarantined", "quarantine_reasons", "vehicle_hat_days_truncated"):
        assert key not in p and key in owner
    raw_rows = sum(sum(1 for _ in f.open()) - 1 for f in austin.glob("*.csv"))
    assert owner["records_in"] == raw_rows
    assert owner["records_quarantined"] == sum(owner["quarantine_reasons"].values())
    assert owner["records_outside_window"] > 0  # the other 15 days
    assert owner["records_in"] == (
        owner["records_quarantined"] + owner["records_outside_window"] + owner["records_in_window"]
    )
    # the feed repeats (vehicle, timestamp) rows, e.g. 12,244 times on 2016-03-22
    everything = load_records([austin])
    assert everything.reasons["duplicate"] == 16579
    assert (
        everything.quarantine.filter(pl.col("source") == "2016-03-22.csv")["reason"]
        .to_list()
        .count("duplicate")
        == 12244
    )
    assert p["hats_released"] > 0 and p["days"] == 4
    assert p["cumulative_epsilon_per_day"] == pytest.approx(
        9.3979, rel=1e-4
    )  # 10 a day: Gaussian, exact curve
    # unit handling: a 2016 value of 7.15264 m/s (16 mph) becomes 25.749504 km/h
    raw = load_records([austin / "2016-11-25.csv"]).clean["speed"].to_numpy()
    in_mph_steps = np.abs(raw / 0.44704 - np.round(raw / 0.44704)) < 1e-3  # whole mph expressed in m/s
    assert in_mph_steps.mean() > 0.99
    import datetime as dt

    from urbandp._records.validation import ValidationOptions

    conv = load_records(
        [austin / "2016-11-25.csv"],
        options=ValidationOptions(speed_unit="mph", speed_unit_since=((dt.date(2016, 1, 1), "m/s"),)),
    )
    assert conv.clean.filter(pl.col("vehicle") == "8940")["speed"][0] == pytest.approx(7.15264 * 3.6)


@pytest.mark.real_data
def test_four_austin_days_from_two_months_are_four_public_days(shared_data: Path, tmp_path: Path) -> None:
    """--dates makes D the number of listed days (4), not the 23 calendar days they span; other days' records are
    outside the window; speeding is not released unless asked for."""
    austin = shared_data / "austin-avl"
    days = ["2016-11-24", "2016-11-25", "2016-11-27", "2016-12-16"]
    out = tmp_path / "four"
    args = ["release", *(str(austin / f"{d}.csv") for d in days), str(austin / "2016-12-18.csv")]
    args += ["--out", str(out), "--speed-unit", "m/s", "--dates", ",".join(days), "--epsilon-per-day", "10"]
    args += ["--max-hats-per-vehicle-day", "32", "--hours", "0-24", "--no-map"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    p = json.loads((out / "privacy.json").read_text())
    assert p["days"] == 4 and p["window"]["day_set"] == days
    assert p["hats_released"] > 100  # at D = 23 the window's epsilon was 2,000+ and far fewer HATs passed
    owner = json.loads((tmp_path / "owner_only" / "four" / "input_report.json").read_text())
    assert owner["records_outside_window"] > 0  # 2016-12-18 is not a public day
    assert not (out / "hat_speeding.csv").exists()


def test_toml_config_sets_release_input_and_columns(tmp_path: Path) -> None:
    """A non-ITMS shape released through a TOML config; a flag overrides the file's epsilon/scale choice."""
    src = tmp_path / "bus.csv"
    rows = ["bus,t,y,x,v_mph"]
    for day in (1, 2):
        for v in range(12):
            for minute in range(0, 60, 10):
                rows.append(f"B{v},2021-03-0{day} 10:{minute:02d}:00,21.17,72.83,{20 + v}")
    src.write_text("\n".join(rows) + "\n")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(
        '[release]\nnoise_scale = 0.5\nneighbouring = "replace-one"\nselection = "public-threshold"\n'
        "hours = [10, 11]\nmin_vehicles_per_day = 10\nmax_hats_per_vehicle_day = 4\nprecision = 3\n"
        'queries = "speed,speeding"\n'
        '[input]\nspeed_unit = "mph"\n'
        '[columns]\nvehicle = "bus"\ntimestamp = "t"\nlatitude = "y"\nlongitude = "x"\nspeed = "v_mph"\n'
    )
    out = tmp_path / "o"
    res = runner.invoke(app, ["release", str(src), "--out", str(out), "--config", str(cfg), "--no-map"])
    assert res.exit_code == 0, res.output
    p = json.loads((out / "privacy.json").read_text())
    assert p["noise_scale"]["speed"] == 0.5 and p["hats_released"] == 1 and p["precision"] == 3
    # replace-one, N = 24 vehicle-days, U = 65: epsilon per HAT per day = (65 / 24) / 0.5
    assert p["epsilon_per_hat_per_day"]["speed"] == pytest.approx(65 / 24 / 0.5, rel=1e-12)
    assert p["epsilon_per_hat_per_day"]["speeding"] == pytest.approx(1 / 2 / 0.5, rel=1e-12)
    res = runner.invoke(
        app,
        [
            "release",
            str(src),
            "--out",
            str(out),
            "--config",
            str(cfg),
            "--no-map",
            "--epsilon-per-day",
            "3",
            "--overwrite",
        ],
    )
    assert res.exit_code == 0, res.output
    # epsilon 3 a day by the zCDP bound the noise is calibrated to: 2.80 by the exact Gaussian curve
    assert json.loads((out / "privacy.json").read_text())["cumulative_epsilon_per_day"] == pytest.approx(
        2.7986512352, rel=1e-9
    )


def test_a_cli_release_never_loads_the_numpy_simulation(fleet_file: Path, tmp_path: Path) -> None:
    """docs/design.md rule 1: numpy noise lives in urbandp._experiments' simulation, which a release never imports."""
    code = (
        "import sys; from typer.testing import CliRunner; from urbandp.cli import app; "
        f"r = CliRunner().invoke(app, ['release', {str(fleet_file)!r}, '--out', {str(tmp_path / 'o')!r}, "
        "'--noise-scale', '1', '--no-map']); assert r.exit_code == 0, r.output; "
        "print(sorted(m for m in sys.modules if m.startswith('urbandp._experiments')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "['urbandp._experiments', 'urbandp._experiments.cli']"
