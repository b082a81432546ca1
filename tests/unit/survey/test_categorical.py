"""Declared lists, aliases and quarantine reasons: nothing is mapped silently."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from urbandp.survey._categorical import Declared, decode, validate


def test_validate_reasons_and_aliases() -> None:
    declared = Declared(
        {"gas": ["Chevrolet Malibu", "Honda Civic"], "electric": ["Tesla Model 3", "Nissan Leaf"]}
    )
    frame = pl.DataFrame(
        {
            "fuel": ["gas", "gas", "electric", "steam", "gas", "gas"],
            "model": ["Chevy Malibu", "Honda Civic", "Honda Civic", "Stanley", None, "Chevvy Malibu"],
        }
    )
    v = validate(frame, "model", declared, "fuel", {"Chevy Malibu": "Chevrolet Malibu"})
    # an answer missing or off its group's list stays (code -1, filled) for a uniform draw; an undeclared group goes
    assert (
        v.good.height == 5 and v.codes.tolist() == [0, 1, -1, -1, -1] and v.groups.tolist() == [0, 0, 1, 0, 0]
    )
    assert v.filled.tolist() == [False, False, True, True, True]
    drawn = ": released as a uniform draw over the declared list"
    assert dict(zip(v.quarantine["row"], v.quarantine["reason"], strict=True)) == {
        3: "not_in_declared_list" + drawn,  # Honda Civic is not an electric model: never re-mapped
        4: "group_not_declared",
        5: "missing_value" + drawn,
        6: "not_in_declared_list" + drawn,  # a misspelling outside the alias table is never re-mapped either
    }
    assert v.alias_report.to_dicts() == [
        {"original": "Chevy Malibu", "normalised": "Chevrolet Malibu", "rows": 1}
    ]
    assert decode(declared, np.array([1, 0]), np.array([1, 0])).tolist() == [
        "Nissan Leaf",
        "Chevrolet Malibu",
    ]


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.floats(0.05, 0.95), st.lists(st.integers(0, 1000), min_size=1, max_size=200))
def test_randomize_codes_stays_in_declared_range(k: int, prob: float, raw: list[int]) -> None:
    from urbandp.survey._randomized_response import randomize_codes
    from urbandp.survey._sampling import OSRandomBits

    codes = np.array(raw) % k
    out = randomize_codes(codes, k, prob, OSRandomBits())
    assert out.shape == codes.shape and out.min() >= 0 and out.max() < k
