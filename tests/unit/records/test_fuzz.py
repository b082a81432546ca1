"""Fuzz the readers and validators (issue 9, "Engineering habits"): any bytes give records or one InputError, and
rows in = rows kept + quarantined + outside the window, always. Kept fast: modest ``max_examples``, no deadline."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from urbandp._contributions import ContributionSpec
from urbandp._grid.slots import SlotSpec
from urbandp._records.validation import REASONS, ValidationOptions
from urbandp.errors import InputError
from urbandp.fleet._pipeline import load_records

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
HEADER = b"vehicle_id,timestamp,speed,latitude,longitude\n"
WINDOW = ContributionSpec(7, SlotSpec(60, 9, 17), dt.date(2016, 11, 24), dt.date(2016, 11, 26))


def _check(loaded: object) -> None:
    """The counts add up, every kept row is inside the window, and every quarantined row has a known reason."""
    clean = loaded.clean  # type: ignore[attr-defined]
    q = loaded.quarantine  # type: ignore[attr-defined]
    assert clean.height + q.height + loaded.records_outside_window == loaded.records_in  # type: ignore[attr-defined]
    assert clean.height == loaded.records_valid  # type: ignore[attr-defined]
    assert set(q["reason"].to_list()) <= set(REASONS)
    if clean.height:
        days = clean["timestamp"].dt.date()
        hours = clean["timestamp"].dt.hour()
        assert days.min() >= WINDOW.start and days.max() <= WINDOW.end  # type: ignore[operator]
        assert hours.min() >= 9 and hours.max() < 17  # type: ignore[operator]


@FUZZ
@given(
    body=st.binary(max_size=400),
    header=st.booleans(),
    suffix=st.sampled_from([".csv", ".jsonl", ".json", ".parquet"]),
)
def test_any_bytes_give_records_or_one_input_error(
    tmp_path: Path, body: bytes, header: bool, suffix: str
) -> None:
    path = tmp_path / f"fuzz{suffix}"
    path.write_bytes((HEADER if header and suffix == ".csv" else b"") + body)
    try:
        loaded = load_records([path], window=WINDOW)
    except InputError as err:
        message = str(err)
        assert message and "\n" not in message
        assert "__" not in message and "broadcast" not in message  # no Polars internals
        return
    _check(loaded)


TIMESTAMPS = st.one_of(
    st.datetimes(min_value=dt.datetime(1960, 1, 1), max_value=dt.datetime(2200, 1, 1)).map(
        lambda t: t.isoformat()
    ),
    st.datetimes(min_value=dt.datetime(2016, 11, 23), max_value=dt.datetime(2016, 11, 28)).map(
        lambda t: t.strftime("%Y-%m-%d %H:%M:%S")
    ),
    st.datetimes(min_value=dt.datetime(2016, 11, 23), max_value=dt.datetime(2016, 11, 28)).map(
        lambda t: t.strftime("%Y-%m-%dT%H:%M:%S-06:00")
    ),
    st.integers(min_value=-(10**14), max_value=10**14).map(str),  # epoch seconds or milliseconds, or nonsense
    st.sampled_from(
        ["", "  ", "noon", "0000-01-01T00:00:00", "-001-01-01T00:00:00", "2016-13-45T99:99:99", "NaN"]
    ),
)
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.sampled_from(["", "x", " 12.5 ", "1e400", "-0", "30.26", "-97.74", "0"]),
)


def _near(low: float, high: float) -> st.SearchStrategy[str]:
    """Mostly plausible values (so that rows are kept, duplicated and windowed too), sometimes anything."""
    plausible = st.floats(low, high).map(lambda x: f"{x:.5f}")
    return st.integers(0, 9).flatmap(lambda k: plausible if k < 8 else NUMBERS)


ROW = st.tuples(
    st.sampled_from(["", "a", "b", " c ", "bus 7"]),
    st.one_of(
        st.sampled_from(["2016-11-24T10:00:00", "2016-11-25 16:59:59", "1480003200", "1480003200000"]),
        TIMESTAMPS,
    ),
    _near(0, 80),
    _near(30.2, 30.3),
    _near(-97.8, -97.7),
)


@FUZZ
@given(rows=st.lists(ROW, min_size=1, max_size=40), tz=st.sampled_from([None, "America/Chicago"]))
def test_structured_rows_are_all_accounted_for(
    tmp_path: Path, rows: list[tuple[str, ...]], tz: str | None
) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(HEADER.decode() + "".join(",".join(r) + "\n" for r in rows))
    loaded = load_records([path], options=ValidationOptions(timezone=tz), window=WINDOW)
    assert loaded.records_in == len(rows)  # independent of the reader: the rows written
    _check(loaded)
    event(f"kept rows: {min(loaded.clean.height, 3)}")
    quarantined = loaded.quarantine.sort("row")
    written = pl.DataFrame([list(r) for r in rows], schema=["v", "t", "s", "la", "lo"], orient="row")
    for row in quarantined.iter_rows(named=True):  # the quarantine shows the raw text as written
        raw = written.row(row["row"] - 1, named=True)
        assert (row["timestamp_raw"] or "").strip() == raw["t"].strip()


@pytest.mark.parametrize("fmt", ["epoch-s", "epoch-ms", "iso", "%d/%m/%Y %H:%M"])
@FUZZ
@given(rows=st.lists(ROW, min_size=1, max_size=20))
def test_declared_formats_never_crash(tmp_path: Path, fmt: str, rows: list[tuple[str, ...]]) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(HEADER.decode() + "".join(",".join(r) + "\n" for r in rows))
    loaded = load_records([path], options=ValidationOptions(timestamp_format=fmt), window=WINDOW)
    assert loaded.records_in == len(rows)
    _check(loaded)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=300), rows=st.lists(ROW, max_size=15))
def test_the_cli_gives_a_release_or_exit_2(tmp_path: Path, body: bytes, rows: list[tuple[str, ...]]) -> None:
    from typer.testing import CliRunner

    from urbandp.cli import app

    path = tmp_path / "in.csv"
    path.write_bytes(HEADER + "".join(",".join(r) + "\n" for r in rows).encode() + body)
    out = tmp_path / "out"
    args = ["release", str(path), "--out", str(out), "--epsilon-per-day", "10", "--no-map"]
    res = CliRunner().invoke(app, [*args, "--start", "2016-11-24", "--end", "2016-11-26", "--hours", "9-17"])
    assert res.exit_code in (0, 2), res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    if res.exit_code == 0:
        import json

        o = json.loads((out.parent / "owner_only" / out.name / "input_report.json").read_text())
        assert (
            o["records_in"] == o["records_in_window"] + o["records_quarantined"] + o["records_outside_window"]
        )


@FUZZ
@given(
    stamps=st.lists(st.one_of(st.integers(-(2**62), 2**62), st.none()), min_size=1, max_size=30),
    speeds=st.floats(allow_nan=True, allow_infinity=True),
)
def test_parquet_epoch_integers_of_any_size(tmp_path: Path, stamps: list[int | None], speeds: float) -> None:
    path = tmp_path / "p.parquet"
    n = len(stamps)
    pl.DataFrame(
        {
            "vehicle_id": [f"v{i % 3}" for i in range(n)],
            "timestamp": pl.Series(stamps, dtype=pl.Int64),
            "speed": [speeds] * n,
            "latitude": [30.26] * n,
            "longitude": [-97.74] * n,
        }
    ).write_parquet(path)
    loaded = load_records([path], window=WINDOW)
    assert loaded.records_in == n
    _check(loaded)
