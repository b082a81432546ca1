"""Proof of equality for the count-table release's per-event stage: Spark and Polars give the same joint table.

Synthetic taps (with a known truth) plus injected bad rows (a missing value, an unparsable timestamp, a day and a
location outside the public domain, a missing card_id), released under the ``event`` unit and under ``card-day``
bounding (k = 3 taps per card-day, m = 1 per cell), where truncation keeps a card's first taps of the day: the
same non-zero cells with the same counts, the same number of truncated taps, the same quarantine per reason.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from urbandp._synth.taps import generate_taps
from urbandp._table_reader import read_table
from urbandp.counts import CountDomain, PrivacyUnit
from urbandp.counts._aggregate import joint_from_events

pytestmark = pytest.mark.usefixtures("spark")


@pytest.fixture(scope="module")
def taps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CountDomain]:
    s = generate_taps(trips_per_day=600, ferry_trips_per_day=100, days=2, seed=4)
    events = s.events.with_columns(pl.col("timestamp").dt.strftime("%Y-%m-%dT%H:%M:%S"))
    first = events.row(0, named=True)
    bad = [
        {**first, "location": None},
        {**first, "timestamp": "yesterday"},
        {**first, "timestamp": "2030-01-01T10:00:00"},
        {**first, "location": "nowhere"},
        {**first, "card_id": None},
    ]
    path = tmp_path_factory.mktemp("taps") / "events.csv"
    pl.concat([events, pl.DataFrame(bad, schema=events.schema)]).write_csv(path)
    return path, CountDomain.from_json(s.domain)


@pytest.mark.parametrize(
    "unit", [PrivacyUnit("event"), PrivacyUnit("card-day", 3, 1)], ids=["event", "card-day"]
)
def test_spark_per_event_stage_equals_polars(taps: tuple[Path, CountDomain], unit: PrivacyUnit) -> None:
    from urbandp._contributions.spark_counts import joint_from_events_spark

    path, domain = taps
    ours = joint_from_events(read_table(path), domain, unit)
    theirs = joint_from_events_spark(path, domain, unit, scratch=path.parent)
    assert theirs.n_input_rows == ours.n_input_rows
    np.testing.assert_array_equal(theirs.sparse.index, ours.sparse.index)
    np.testing.assert_array_equal(theirs.sparse.counts, ours.sparse.counts)
    assert theirs.n_truncated == ours.n_truncated
    if unit.kind == "card-day":
        assert ours.n_truncated > 0  # the bounding did something, so its equality means something
    expected = dict(ours.quarantine["reason"].value_counts().iter_rows())
    assert theirs.reasons == expected and sum(expected.values()) >= 4
    written = pl.read_parquet(theirs.quarantine_parquet / "*.parquet")  # type: ignore[operator]
    assert written.height == ours.quarantine.height
    assert sorted(written["reason"].to_list()) == sorted(ours.quarantine["reason"].to_list())
