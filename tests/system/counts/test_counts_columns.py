"""Count tables of any layout: ``counts release --column ROLE=NAME`` and ``counts prepare``.

The Opal daily file (``mode,date,tap,loc,count``, days ``20160814``, no bin, two XML lines at its end) is
released from the raw file with ``--column``, and ``counts prepare`` writes the long table and the domain.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from urbandp_process import assert_refused, owner_report, run_urbandp

import urbandp as ud
from urbandp._privacy.noise import ExactNoiseForTesting
from urbandp.counts._prepare import DOMAIN_WARNING, prepare
from urbandp.errors import InputError, InvalidParameterError

pytestmark = pytest.mark.system
REPO = Path(__file__).resolve().parents[3]
DAILY = REPO.parent / "shared" / "data" / "opal-2016" / "location_20160808-14.csv"
OPAL_COLUMNS = ["day=date", "location=loc"]


def _exact() -> ud.Session:
    return ud.Session(noise=ExactNoiseForTesting(acknowledge_not_private=True))


def _wide(root: Path) -> Path:
    path = root / "wide.csv"
    path.write_text(
        "mode,date,loc,on,off\n"
        "ferry,20160808,Manly Wharf,10,12\n"
        "ferry,20160809,Manly Wharf,11,\n"  # a missing count: dropped, counted
        "ferry,20160809,Circular Quay,7,9\n"
    )
    return path


@pytest.mark.skipif(not DAILY.is_file(), reason="../shared/data/opal-2016 not present")
def test_opal_daily_file_releases_from_the_raw_file_with_column(tmp_path: Path) -> None:
    """``counts prepare`` writes the domain (9,072 cells); the raw file then releases with ``--column`` and the
    same spec hash as the prepared long table (the mapping renames, it changes nothing private)."""
    prep = run_urbandp("counts", "prepare", str(DAILY), "--column", "day=date", "--column", "location=loc",
                       "--out", str(tmp_path / "opal"))  # fmt: skip
    assert prep.returncode == 0, prep.stderr
    summary = json.loads(prep.stdout)
    assert summary["rows"] == 8605 and summary["rows_dropped"] == 2  # the two XML lines
    assert summary["places"] == 648 and summary["cells"] == 7 * 2 * 1 * 648
    assert summary["days"] == ["2016-08-08", "2016-08-14"] and summary["bin_minutes"] == 1440
    assert f"urbandp: warning: {DOMAIN_WARNING}" in prep.stderr
    domain = tmp_path / "opal" / "domain.json"
    args = ["--input-kind", "counts", "--domain", str(domain), "--unit", "card-day", "--max-events", "4",
            "--epsilon", "1", "--suppress-below", "35"]  # fmt: skip
    raw = run_urbandp("counts", "release", str(DAILY), "--column", "day=date", "--column", "location=loc",
                      *args, "--out", str(tmp_path / "rel"))  # fmt: skip
    assert raw.returncode == 0, raw.stderr
    report = owner_report(tmp_path / "rel")
    assert report["non_zero_cells"] == 8605 and report["quarantined_rows"] == 2
    long = ud.counts.release(tmp_path / "opal" / "counts.csv", input_kind="counts", domain=domain,
                             unit="card-day", max_events=4, epsilon=1, suppress_below=35, session=_exact())  # fmt: skip
    privacy = json.loads((tmp_path / "rel" / "privacy.json").read_text())
    assert privacy["spec_sha256"] == long.privacy.to_dict()["spec_sha256"]
    # the raw file and the prepared table hold the same counts: the noise-free releases are equal
    from_raw = ud.counts.release(DAILY, input_kind="counts", column=OPAL_COLUMNS, domain=domain, unit="card-day",
                                 max_events=4, epsilon=1, suppress_below=35, session=_exact())  # fmt: skip
    at_least_35 = (
        pl.read_csv(tmp_path / "opal" / "counts.csv", infer_schema=False)
        .filter(pl.col("count").cast(pl.Int64) >= 35)
        .height
    )
    assert from_raw.table.equals(long.table) and from_raw.table.height == at_least_35 == 8601


def test_column_mapping_from_python_and_a_config_file(tmp_path: Path) -> None:
    """A list of items or a mapping; a ``--config`` file's ``column = [...]``; a daily table (no bin) over a
    domain of one bin a day; days written ``YYYYMMDD``."""
    data = tmp_path / "daily.csv"
    data.write_text(
        "mode,date,tap,loc,count\nferry,20160808,on,Manly Wharf,40\nferry,20160809,off,Manly Wharf,7\n"
    )
    domain = {"days": ["2016-08-08", "2016-08-09"], "bin_minutes": 1440, "places": {"ferry": ["Manly Wharf"]}}
    kw = {"input_kind": "counts", "domain": domain, "epsilon": 1.0, "session": _exact()}
    by_list = ud.counts.release(data, column=["day=date", "location=loc"], **kw)  # type: ignore[arg-type]
    by_map = ud.counts.release(data, column={"day": "date", "location": "loc"}, **kw)  # type: ignore[arg-type]
    config = tmp_path / "c.toml"
    config.write_text('[counts.release]\ncolumn = ["day=date", "location=loc"]\n')
    by_file = ud.counts.release(data, config=config, **kw)  # type: ignore[arg-type]
    counts = by_list.table.sort("day", "tap")["count"].to_list()
    assert by_map.table.equals(by_list.table) and by_file.table.equals(by_list.table)
    assert by_list.table.height == 2 * 2 * 1 * 1 and sorted(counts) == [0, 0, 7, 40]
    with pytest.raises(InputError, match="no bin column: it is a daily table, but the domain has 96 bins"):
        ud.counts.release(
            data, column=["day=date", "location=loc"], **{**kw, "domain": {**domain, "bin_minutes": 15}}
        )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("column", "says"),
    [
        (["dy=date"], "column dy=date: 'dy' is not a role of counts input"),
        (["day"], "column must look like ROLE=NAME"),
        (["day=date", "day=loc"], "column: role 'day' is mapped twice"),
        (["day=date", "tap=date"], "column: the input's field 'date' is given two roles"),
        (["day=dat"], "column day=dat: the input has no field 'dat'"),
    ],
)
def test_a_bad_mapping_names_column(tmp_path: Path, column: list[str], says: str) -> None:
    data = _wide(tmp_path)
    with pytest.raises(InvalidParameterError, match=says) as err:
        ud.counts.release(data, input_kind="counts", column=column, domain={"days": ["2016-08-08"],
                          "places": {"ferry": ["Manly Wharf"]}}, epsilon=1.0, session=_exact())  # fmt: skip
    assert "column" in err.value.parameters


def test_the_command_names_the_flag(tmp_path: Path) -> None:
    res = run_urbandp(
        "counts", "prepare", str(_wide(tmp_path)), "--column", "day=dat", "--out", str(tmp_path / "o")
    )
    assert_refused(res, "--column day=dat: the input has no field 'dat' (its header: mode, date, loc, on, off)",
                   others="none")  # fmt: skip
    assert not (tmp_path / "o").exists()


def test_prepare_melts_tap_columns_and_reads_bins(tmp_path: Path) -> None:
    wide = prepare(_wide(tmp_path), column=["day=date", "location=loc"], taps_as_columns=["on", "off"])
    assert wide.table.rows() == [
        ("ferry", "2016-08-08", "off", "00:00", "Manly Wharf", 12),
        ("ferry", "2016-08-08", "on", "00:00", "Manly Wharf", 10),
        ("ferry", "2016-08-09", "off", "00:00", "Circular Quay", 9),
        ("ferry", "2016-08-09", "on", "00:00", "Circular Quay", 7),
        ("ferry", "2016-08-09", "on", "00:00", "Manly Wharf", 11),
    ]
    assert wide.dropped == {"missing value": 1}
    assert wide.domain.to_json() == {
        "days": ["2016-08-08", "2016-08-09"],
        "taps": ["on", "off"],
        "bin_minutes": 1440,
        "places": {"ferry": ["Circular Quay", "Manly Wharf"]},
    }
    timed = tmp_path / "timed.csv"
    timed.write_text(
        "mode,day,tap,time,loc,count\ntrain,2016-07-25,on,09:45,A,3\ntrain,2016-07-25,on,13:15,B,4\n"
    )
    places = tmp_path / "places.csv"
    places.write_text("mode,location\ntrain,A\ntrain,B\ntrain,C\n")
    got = prepare(timed, column=["bin=time", "location=loc"], places=places)
    assert got.domain.bin_minutes == 15 and got.domain.places == (
        ("train", "A"),
        ("train", "B"),
        ("train", "C"),
    )
    assert got.places_from == str(places)
    assert prepare(timed, column=["bin=time", "location=loc"], bin_minutes=5).domain.bin_minutes == 5
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "mode,day,tap,loc,count\ntrain,2016-07-25,on,A,-3\ntrain,25/07/2016,on,A,3\ntrain,2016-07-25,on,A,2\n"
    )
    got = prepare(bad, column=["location=loc"])
    assert got.dropped == {
        "count is not a non-negative integer": 1,
        "day is not a date (YYYY-MM-DD or YYYYMMDD)": 1,
    }
    assert got.table.rows() == [("train", "2016-07-25", "on", "00:00", "A", 2)]
    assert pl.read_csv(places).height == 3


def test_event_input_with_its_own_names(tmp_path: Path) -> None:
    """Events whose timestamp and card columns are named otherwise release, with ``column``, the same table."""
    from urbandp._synth.taps import generate_taps

    taps = generate_taps(trips_per_day=30, ferry_trips_per_day=5, days=1, seed=1)
    plain, renamed = tmp_path / "plain.csv", tmp_path / "renamed.csv"
    taps.events.write_csv(plain)
    taps.events.rename({"timestamp": "tapped_at", "card_id": "card"}).write_csv(renamed)
    kw = {"domain": taps.domain, "unit": "card-day", "max_events": 4, "epsilon": 1.0}
    want = ud.counts.release(plain, session=_exact(), **kw)  # type: ignore[arg-type]
    got = ud.counts.release(renamed, column=["timestamp=tapped_at", "card_id=card"], session=_exact(), **kw)  # type: ignore[arg-type]
    assert (
        got.table.equals(want.table) and int(got.table["count"].sum()) == int(want.table["count"].sum()) > 0
    )
    with pytest.raises(InvalidParameterError, match="'day' is not a role of events input"):
        ud.counts.release(renamed, column=["day=tapped_at"], session=_exact(), **kw)  # type: ignore[arg-type]
