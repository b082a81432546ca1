"""Bisection for the smallest integer a monotone test passes (thresholds: a sparse release's published count, a
DP selection's threshold at a target delta)."""

from __future__ import annotations

from collections.abc import Callable


def smallest_passing(ok: Callable[[int], bool], lo: int, hi: int) -> int:
    """The smallest integer in ``(lo, hi]`` where ``ok`` holds, given ``ok(hi)`` and ``ok`` monotone in its
    argument (false below some integer, true from it on)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
