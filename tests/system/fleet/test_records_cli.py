"""The record readers through the CLI (issue 9, "Inputs a real agency has"): real processes, exit codes, outputs."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from pathlib import Path

import pytest
from urbandp_process import owner_report
from warm_process import run_warm

HEADER = "vehicle_id,timestamp,speed,latitude,longitude\n"
T0 = dt.datetime(2016, 11, 24, 9, 0, tzinfo=dt.UTC)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_warm(list(args), env={**os.environ, "COLUMNS": "400"}, timeout=300)


def _fleet(path: Path, fmt: object, n: int = 3000) -> Path:
    """``n`` valid records of 40 buses in one cell over one morning, timestamps written by ``fmt``."""
    rows = []
    for i in range(n):
        t = T0 + dt.timedelta(seconds=7 * i)
        rows.append(f"b{i % 40},{fmt(t)},{20 + i % 25},30.2672,-97.7431")  # type: ignore[operator]
    path.write_text(HEADER + "\n".join(rows) + "\n")
    return path


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("urbandp: error: "), proc.stderr
    assert "Traceback" not in proc.stderr and "Usage" not in proc.stderr
    return lines[0]


def test_release_reads_gtfs_realtime_epoch_seconds(tmp_path: Path) -> None:
    src = _fleet(tmp_path / "gtfs.csv", lambda t: int(t.timestamp()))
    out = tmp_path / "rel"
    proc = _run("release", str(src), "--out", str(out), "--epsilon-per-day", "10", "--no-map")
    assert proc.returncode == 0, proc.stderr
    p = json.loads((out / "privacy.json").read_text())
    o = owner_report(out)
    assert o["records_in"] == 3000 and o["records_quarantined"] == 0
    assert p["input"]["timestamp_format"] == "auto"
    assert o["input"]["timestamp_formats_seen"] == {"gtfs.csv": "epoch-s"}
    assert "timestamp_formats_seen" not in p["input"]  # read from the data: owner material (issue 30)
    assert p["window"]["start"] == p["window"]["end"] == "2016-11-24"


def test_release_with_every_row_quarantined_says_why_and_keeps_the_quarantine(tmp_path: Path) -> None:
    src = _fleet(tmp_path / "dm.csv", lambda t: t.strftime("%d/%m/%Y %H:%M"), n=500)
    out = tmp_path / "rel"
    line = _one_error_line(_run("release", str(src), "--out", str(out), "--epsilon-per-day", "10"))
    assert "all 500 records were quarantined (unparseable_timestamp 500)" in line
    assert "--timestamp-format" in line and "window" not in line
    assert not out.exists()  # nothing publishable
    q = tmp_path / "owner_only" / "rel" / "quarantine.csv"
    assert q.is_file() and len(q.read_text().splitlines()) == 501
    # Declared, the same file releases.
    proc = _run(
        "release", str(src), "--out", str(out), "--epsilon-per-day", "10", "--no-map",
        "--timestamp-format", "%d/%m/%Y %H:%M",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "privacy.json").read_text())["input"]["timestamp_format"] == "%d/%m/%Y %H:%M"


def test_release_of_valid_rows_outside_the_hours_does_not_say_no_valid_records(tmp_path: Path) -> None:
    src = _fleet(tmp_path / "a.csv", lambda t: t.isoformat(), n=200)  # 09:00-09:23
    line = _one_error_line(
        _run("release", str(src), "--out", str(tmp_path / "r"), "--epsilon-per-day", "10", "--hours", "14-16")
    )
    assert "none of the 200 valid records lies inside the window" in line and "hours 14-16" in line


def test_explore_refuses_all_bad_input_and_writes_the_quarantine(tmp_path: Path) -> None:
    src = _fleet(tmp_path / "dm.csv", lambda t: t.strftime("%d/%m/%Y %H:%M"), n=300)
    out = tmp_path / "ex"
    line = _one_error_line(_run("explore", str(src), "--out", str(out)))
    assert "all 300 records were quarantined (unparseable_timestamp 300)" in line
    assert (tmp_path / "owner_only" / "ex" / "quarantine.csv").is_file() and not out.exists()


def test_explore_takes_releases_input_options_and_counts_what_it_drops(tmp_path: Path) -> None:
    rows = [f"b{i % 40},{int((T0 + dt.timedelta(seconds=7 * i)).timestamp() * 1000)},{10 + i % 9},30.2672,-97.7431"
            for i in range(2000)]  # fmt: skip
    rows += ["x,0,10,30.2,-97.7", "y,1479978000000,10,0,0", "z,1479978000000,-3,30.2,-97.7"]
    src = tmp_path / "ms.csv"
    src.write_text(HEADER + "\n".join(rows) + "\n")
    config = tmp_path / "c.toml"
    config.write_text('[input]\ntimestamp_format = "epoch-ms"\nspeed_unit = "mph"\n')
    out = tmp_path / "ex"
    proc = _run(
        "explore", str(src), "--out", str(out), "--config", str(config), "--timezone", "America/Chicago",
        "--start", "2016-11-24", "--end", "2016-11-24", "--hours", "3-7",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # 09:00 UTC is 03:00 in Austin: the 2000 rows (3.9 hours) lie inside 3-7 local.
    assert "records in 2,003: used 2,000, quarantined 3" in proc.stdout.replace("\n", " ")
    q = (tmp_path / "owner_only" / "ex" / "quarantine.csv").read_text().splitlines()
    assert len(q) == 4 and {r.split(",")[2] for r in q[1:]} == {
        "implausible_timestamp",
        "null_island",
        "negative_speed",
    }
    assert "resolution_comparison.csv" in {p.name for p in out.iterdir()}
    line = _one_error_line(_run("explore", str(src), "--out", str(tmp_path / "e2"), "--start", "2020-01-01"))
    assert "none of the" in line and "valid records lies inside the window 2020-01-01" in line


def test_explore_on_speeds_in_ms_read_as_kmh_warns(tmp_path: Path) -> None:
    src = _fleet(tmp_path / "ms.csv", lambda t: t.isoformat(), n=600)
    text = src.read_text().splitlines()
    src.write_text(
        "\n".join([text[0], *(ln.rsplit(",", 3)[0] + ",5.5,30.2672,-97.7431" for ln in text[1:])]) + "\n"
    )
    proc = _run("explore", str(src), "--out", str(tmp_path / "ex"))
    assert proc.returncode == 0, proc.stderr
    assert "look like m/s" in proc.stderr
    assert "give --speed-unit m/s (or --speed-unit-since DAY=m/s from that day)" in proc.stderr


def test_a_fifo_input_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "feed.csv"
    os.mkfifo(fifo)
    for cmd in ("release", "explore"):
        line = _one_error_line(_run(cmd, str(fifo), "--out", str(tmp_path / cmd), "--epsilon-per-day", "1")
                               if cmd == "release" else _run(cmd, str(fifo), "--out", str(tmp_path / cmd)))  # fmt: skip
        assert "not a regular file" in line


@pytest.mark.parametrize("command", ["release", "explore"])
def test_latin1_input_gives_one_line(tmp_path: Path, command: str) -> None:
    src = tmp_path / "latin.csv"
    src.write_bytes(HEADER.encode() + "b\xe9,2016-11-24T09:00:00,10,30.2,-97.7\n".encode("latin-1"))
    extra = ["--epsilon-per-day", "1"] if command == "release" else []
    line = _one_error_line(_run(command, str(src), "--out", str(tmp_path / "o"), *extra))
    assert "not UTF-8" in line


def test_busiest_hat_quarantines_bad_rows_with_counts(tmp_path: Path) -> None:
    src = _fleet(tmp_path / "a.csv", lambda t: t.isoformat(), n=300)
    with src.open("a") as f:
        f.write(
            ",2016-11-24T09:00:00+00:00,10,30.2,-97.7\nb1,noon,10,30.2,-97.7\nb2,2016-11-24T09:00:00,x,30.2,-97.7\n"
        )
    hat = tmp_path / "hat.csv"
    proc = _run("experiment", "busiest-hat", str(src), "--out", str(hat), "--hours", "9-10")
    assert proc.returncode == 0, proc.stderr
    assert (
        "records in 303: quarantined 3 (unparseable_timestamp 1, missing_vehicle 1, missing_speed 1)"
        in proc.stdout
    )
    q = (tmp_path / "owner_only" / "hat" / "quarantine.csv").read_text().splitlines()
    assert q[0] == "source,row,reason,vehicle,timestamp_raw,latitude,longitude,speed_raw"
    assert q[1:] == [
        "a.csv,301,missing_vehicle,,2016-11-24T09:00:00+00:00,30.2,-97.7,10",
        "a.csv,302,unparseable_timestamp,b1,noon,30.2,-97.7,10",
        "a.csv,303,missing_speed,b2,2016-11-24T09:00:00,30.2,-97.7,x",
    ]
    line = _one_error_line(
        _run("experiment", "busiest-hat", str(src), "--out", str(hat), "--resolution", "16")
    )
    assert "resolution" in line


def test_plan_reads_with_the_declared_format_and_refuses_a_wrong_one(tmp_path: Path) -> None:
    src = _fleet(tmp_path / "s.csv", lambda t: int(t.timestamp()), n=400)
    base = ["plan", str(src), "--epsilon-per-day", "10", "--start", "2016-11-24", "--end", "2016-11-24"]
    ok = _run(
        *base, "--out", str(tmp_path / "p1"), "--histogram-epsilon", "1", "--timestamp-format", "epoch-s"
    )
    assert ok.returncode == 0, ok.stderr
    line = _one_error_line(
        _run(
            *base, "--out", str(tmp_path / "p2"), "--histogram-epsilon", "1", "--timestamp-format", "epoch-ms"
        )
    )
    assert "all 400 records were quarantined (implausible_timestamp 400)" in line and "'1479978000'" in line
    assert (tmp_path / "owner_only" / "p2" / "quarantine.csv").is_file()


def test_release_warns_the_owner_about_ms_read_as_kmh(tmp_path: Path) -> None:
    """The warning reads a percentile of the true speeds: stderr and owner_only/, never privacy.json (issue 30)."""
    rows = [f"b{i % 40},{(T0 + dt.timedelta(seconds=7 * i)).isoformat()},{(i % 30) / 2:.1f},30.2672,-97.7431"
            for i in range(1500)]  # fmt: skip
    src = tmp_path / "ms.csv"
    src.write_text(HEADER + "\n".join(rows) + "\n")
    out = tmp_path / "rel"
    proc = _run("release", str(src), "--out", str(out), "--epsilon-per-day", "10", "--no-map")
    assert proc.returncode == 0, proc.stderr
    assert "look like m/s" in proc.stderr
    # the command line names the flags; the owner's report, read from Python too, the parameters
    assert "give --speed-unit m/s (or --speed-unit-since DAY=m/s from that day)" in proc.stderr
    p = json.loads((out / "privacy.json").read_text())
    assert not any("look like m/s" in w for w in p["warnings"])
    [owner] = [w for w in owner_report(out)["warnings"] if "read as km/h, look like m/s" in w]
    assert owner.endswith('give speed_unit="m/s" (or speed_unit_since DAY=m/s from that day)')
    assert p["input"]["speed_unit"] == "km/h" and p["input"]["timezone"] is None
    assert p["input"]["column_mapping"]["vehicle"] == "vehicle_id"
    ok = _run(
        "release",
        str(src),
        "--out",
        str(out),
        "--epsilon-per-day",
        "10",
        "--no-map",
        "--speed-unit",
        "m/s",
        "--overwrite",
    )
    assert ok.returncode == 0 and "look like m/s" not in ok.stderr
