"""Events -> dense joint: quarantine with reasons, card-day truncation, pre-aggregated counts."""

from __future__ import annotations

import numpy as np
import polars as pl

from urbandp.counts import CountDomain, PrivacyUnit
from urbandp.counts._aggregate import joint_from_counts, joint_from_events

DOMAIN = CountDomain.from_json({"days": ["2016-08-08"], "places": {"ferry": ["A", "B"]}})


def events() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "mode": ["ferry"] * 7 + ["bus", "ferry"],
            "timestamp": [
                "2016-08-08 08:01",
                "2016-08-08 08:02",
                "2016-08-08 08:03",
                "2016-08-08 08:04",
                "2016-08-08 08:20",
                "2016-08-08 09:00",
                "not a time",
                "2016-08-08 08:00",
                "2016-08-09 08:00",
            ],
            "tap": ["on"] * 9,
            "location": ["A"] * 6 + ["A", "A", "A"],
            "card_id": ["c1"] * 6 + ["c2", "c3", "c4"],
        }
    )


def test_quarantine_reasons_per_row() -> None:
    j = joint_from_events(events(), DOMAIN, PrivacyUnit("event"))
    reasons = sorted(j.quarantine["reason"].to_list())
    assert reasons == [
        "(mode, location) not in the public domain",
        "day not in the public domain",
        "unparsable timestamp",
    ]
    assert j.counts.sum() == 6
    assert j.counts[0, 0, 32, 0] == 4  # 08:00 bin at A


def test_card_day_truncation_bounds_contributions() -> None:
    j = joint_from_events(events(), DOMAIN, PrivacyUnit("card-day", max_events=3, max_per_cell=2))
    # c1 has 6 valid taps: keep its first 3 (08:01, 08:02, 08:03), then at most 2 per cell -> 2 kept
    assert j.counts.sum() == 2
    assert j.n_truncated == 4


def test_pre_aggregated_counts() -> None:
    df = pl.DataFrame(
        {
            "mode": ["ferry", "ferry", "ferry"],
            "day": ["2016-08-08"] * 3,
            "tap": ["on", "off", "on"],
            "bin": ["08:00", "08:30", "25:00"],
            "location": ["A", "B", "A"],
            "count": ["5", "7", "1"],
        }
    )
    j = joint_from_counts(df, DOMAIN)
    assert j.counts[0, 0, 32, 0] == 5 and j.counts[0, 1, 34, 1] == 7
    assert j.quarantine["reason"].to_list() == ["time bin not in the public domain"]
    assert int(np.sum(j.counts)) == 12


def test_utc_offsets_are_read_as_local_wall_clock_time() -> None:
    df = pl.DataFrame(
        {
            "mode": ["ferry"] * 3,
            "tap": ["on"] * 3,
            "location": ["A"] * 3,
            "timestamp": ["2016-08-08T08:00:00+10:00", "2016-08-08 08:20:00Z", "2016-08-08 08:20"],
        }
    )
    j = joint_from_events(df, DOMAIN, PrivacyUnit("event"))
    assert j.quarantine.height == 0
    assert j.counts[0, 0, 32, 0] == 1 and j.counts[0, 0, 33, 0] == 2
