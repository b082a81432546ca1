"""The fleet's guards and bad inputs as a new user meets them (issue 30), run as real processes.

Each test fails on the code before issue 30: a delta above 1e-5 released (Laplace with a TOML delta, ``plan``) or
refused only after reading, with a halved figure the user never gave; ``plan --target-error 0`` a division by zero
(exit 70); ``--out owner_only`` losing the quarantine; empty or doubled options read as "not given"; a day file
with a BOM refused; a swapped ``--domain-bbox`` said nowhere but in a table.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from urbandp_process import assert_refused, owner_report, run_urbandp

pytestmark = pytest.mark.system

W = ("--start", "2021-11-15", "--end", "2021-11-16")
HEADER = "vehicle_id,timestamp,speed,latitude,longitude\n"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("guards") / "fleet.parquet"
    made = run_urbandp("synth", "fleet", "--vehicles", "6", "--days", "2", "--out", str(path))
    assert made.returncode == 0, made.stderr
    return path


@pytest.mark.parametrize(
    "extra",
    [
        ("--epsilon-per-day", "4", "--delta", "0.99"),
        ("--epsilon-per-day", "4", "--delta", "0.99", "--domain-bbox", "21.09,72.75,21.25,72.91"),
        ("--epsilon-per-day", "4", "--delta", "0.5", "--mechanism", "laplace"),
        ("--noise-scale", "1", "--delta", "1e-4"),
    ],
    ids=["gaussian", "gaussian-extent", "laplace-selection", "noise-scale"],
)
def test_release_refuses_a_delta_above_1e_5_in_one_line_naming_it(
    fleet: Path, tmp_path: Path, extra: tuple[str, ...]
) -> None:
    res = run_urbandp("release", str(fleet), "--out", str(tmp_path / "r"), *W, "--no-map", *extra)
    assert_refused(res, "delta (--delta)", others="none")
    assert "is above 1e-05" in res.stderr and not (tmp_path / "r").exists()


def test_plan_and_a_toml_config_refuse_a_delta_above_1e_5(fleet: Path, tmp_path: Path) -> None:
    plan = run_urbandp("plan", str(fleet), "--out", str(tmp_path / "p"), *W, "--epsilon-per-day", "4")
    assert plan.returncode == 0, plan.stderr
    plan = run_urbandp(
        "plan", str(fleet), "--out", str(tmp_path / "p2"), *W, "--epsilon-per-day", "4", "--delta", "0.99"
    )
    assert_refused(plan, "delta (--delta) 0.99", others="none")
    config = tmp_path / "c.toml"
    config.write_text('[release]\nepsilon_per_day = 4\ndelta = 0.5\nmechanism = "laplace"\n')
    res = run_urbandp("release", str(fleet), "--out", str(tmp_path / "r"), *W, "--config", str(config))
    assert_refused(res, "delta (--delta) 0.5", others="none")


@pytest.mark.parametrize("target", ["0", "-1"])
def test_plan_refuses_a_target_error_no_release_reaches(fleet: Path, tmp_path: Path, target: str) -> None:
    res = run_urbandp(
        "plan",
        str(fleet),
        "--out",
        str(tmp_path / "p"),
        *W,
        "--epsilon-per-day",
        "4",
        "--target-error",
        target,
    )
    assert_refused(res, "--target-error must be a finite sd in km/h above 0", others="none")


def test_explore_refuses_a_negative_threshold(fleet: Path, tmp_path: Path) -> None:
    res = run_urbandp("explore", str(fleet), "--out", str(tmp_path / "e"), "--min-vehicles-per-day", "-1")
    assert_refused(res, "--min-vehicles-per-day must be a finite number", others="none")
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("--speed-unit", "", "unknown speed unit ''"),
        ("--timezone", "", "--timezone is empty"),
        ("--dates", "", "--dates '' holds an empty date"),
        ("--dates", "2021-11-15,,2021-11-16", "holds an empty date"),
        ("--holidays", "", "--holidays '' holds an empty date"),
    ],
)
def test_an_empty_value_is_refused_never_read_as_not_given(
    fleet: Path, tmp_path: Path, option: str, value: str, needle: str
) -> None:
    args = ["release", str(fleet), "--out", str(tmp_path / "r"), *W, "--epsilon-per-day", "4", "--no-map"]
    res = run_urbandp(*args, option, value)
    assert_refused(res, needle, others="none")


def test_dates_and_dates_file_together_are_refused_and_a_bom_file_is_read(
    fleet: Path, tmp_path: Path
) -> None:
    days = tmp_path / "days.txt"
    days.write_bytes("\ufeff2021-11-15\n2021-11-16\n".encode())  # a day list saved by a Windows editor
    base = ["release", str(fleet), "--epsilon-per-day", "4", "--no-map"]
    both = run_urbandp(
        *base, "--out", str(tmp_path / "r1"), "--dates", "2021-11-15", "--dates-file", str(days)
    )
    assert_refused(both, "give --dates or --dates-file, not both", others="none")
    ok = run_urbandp(*base, "--out", str(tmp_path / "r2"), "--dates-file", str(days))
    assert ok.returncode == 0, ok.stderr
    window = json.loads((tmp_path / "r2" / "privacy.json").read_text())["window"]
    assert window["day_set"] == ["2021-11-15", "2021-11-16"] and window["days"] == 2


@pytest.mark.parametrize("out", ["owner_only", "owner_only/r", "sub/owner_only"])
def test_an_output_named_like_the_owner_folder_is_refused(fleet: Path, tmp_path: Path, out: str) -> None:
    res = run_urbandp(
        "release", str(fleet), "--out", out, *W, "--epsilon-per-day", "4", "--no-map", cwd=tmp_path
    )
    assert_refused(res, "is the name of the owner-only folder", others="none")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _one_cell_fleet(path: Path) -> Path:
    t0 = dt.datetime(2021, 11, 15, 9, tzinfo=dt.UTC)
    rows = [
        f"b{i % 30},{(t0 + dt.timedelta(seconds=5 * i)).isoformat()},{30 + i % 20},{21.17 + (i % 7) * 1e-4},72.83"
        for i in range(1500)
    ]
    path.write_text(HEADER + "\n".join(rows) + "\n")
    return path


def test_a_swapped_domain_bbox_is_said_to_the_owner_on_stderr_only(tmp_path: Path) -> None:
    src = _one_cell_fleet(tmp_path / "fleet.csv")
    args = ["release", str(src), "--start", "2021-11-15", "--end", "2021-11-15", "--epsilon-per-day", "4"]
    swapped = run_urbandp(
        *args, "--no-map", "--out", str(tmp_path / "s"), "--domain-bbox", "72.76,21.10,72.9,21.24"
    )
    assert swapped.returncode == 0, swapped.stderr
    hint = [ln for ln in swapped.stderr.splitlines() if "latitude and longitude swapped" in ln]
    assert len(hint) == 1 and hint[0].startswith("urbandp: warning: most records of the window lie outside")
    assert "(21.1,72.76,21.24,72.9)" in hint[0]
    assert "latitude and longitude swapped" not in (tmp_path / "s" / "privacy.json").read_text()
    assert any("swapped" in w for w in owner_report(tmp_path / "s")["warnings"])
    right = run_urbandp(
        *args, "--no-map", "--out", str(tmp_path / "r"), "--domain-bbox", "21.10,72.76,21.24,72.90"
    )
    assert right.returncode == 0 and "latitude and longitude swapped" not in right.stderr


def test_an_error_names_the_flag_or_the_key_of_the_config_file_that_gave_the_value(
    fleet: Path, tmp_path: Path
) -> None:
    """Issue 31: the library names parameters; the command line shows the flag typed, or the TOML key read."""
    config = tmp_path / "c.toml"
    config.write_text(
        '[release]\nspeed_estimator = "levy"\nnoise_scale = 1\n[input]\ntimezone = "Asia/Kolkata"\n'
    )
    base = ["release", str(fleet), "--out", str(tmp_path / "r"), *W, "--no-map", "--config", str(config)]
    res = run_urbandp(*base)
    line = (
        f"urbandp: error: speed_estimator in {config} [release] other than 'report' needs "
        "--epsilon-per-day (it is calibrated by epsilon)"
    )
    assert_refused(res, line, others="none")
    res = run_urbandp(*base, "--speed-estimator", "baseline")  # the flag typed wins, and is named
    assert_refused(res, "--speed-estimator other than 'report' needs", others="none")
    config.write_text('[release]\nnoise_scale = 1\ndomain_cells = "nowhere.txt"\n[input]\ntimezone = ""\n')
    res = run_urbandp(*base)
    assert_refused(
        res, f"urbandp: error: timezone in {config} [input] is empty: give an IANA zone", others="none"
    )
    res = run_urbandp(
        *base, "--timezone", "UTC"
    )  # past the options: the domain file is looked for on reading
    assert_refused(
        res, f"domain_cells in {config} [release] nowhere.txt: no such file or folder", others="none"
    )


def test_plan_names_the_key_of_the_config_file_that_gave_the_value(fleet: Path, tmp_path: Path) -> None:
    """``urbandp plan`` takes release's config file; before, an error found past the options (the domain file,
    looked for on reading) named the flag ``--domain-cells`` that was never typed."""
    config = tmp_path / "c.toml"
    config.write_text('[release]\nnoise_scale = 1\ndomain_cells = "nowhere.txt"\n')
    res = run_urbandp("plan", str(fleet), "--out", str(tmp_path / "p"), *W, "--config", str(config))
    assert_refused(
        res, f"domain_cells in {config} [release] nowhere.txt: no such file or folder", others="none"
    )
    assert not (tmp_path / "p").exists()


def test_a_window_that_ends_before_it_starts_is_refused_in_one_line(fleet: Path, tmp_path: Path) -> None:
    """Before issue 31 ``--noise-scale`` with ``--start`` after ``--end`` divided by zero days (exit 70)."""
    args = ["release", str(fleet), "--out", str(tmp_path / "r"), "--noise-scale", "1", "--no-map"]
    res = run_urbandp(*args, "--start", "2021-11-16", "--end", "2021-11-15")
    assert_refused(res, "--start 2021-11-16 is after --end 2021-11-15", others="none")
