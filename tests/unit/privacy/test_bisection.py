"""The one bisection of integer thresholds (the sparse counts release, DP selection)."""

from __future__ import annotations

import pytest

from urbandp._privacy.bisection import smallest_passing


@pytest.mark.parametrize(("first", "lo", "hi"), [(37, 0, 64), (1, 0, 1), (64, 0, 64), (-3, -10, 10)])
def test_the_smallest_integer_a_monotone_test_passes_in_log_steps(first: int, lo: int, hi: int) -> None:
    asked: list[int] = []

    def ok(t: int) -> bool:
        asked.append(t)
        return t >= first

    assert smallest_passing(ok, lo, hi) == first
    assert len(asked) <= (hi - lo).bit_length() and all(lo < t < hi for t in asked)
