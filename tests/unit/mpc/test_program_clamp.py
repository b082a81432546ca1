"""The batched clamp of the SPU program (one secure comparison instead of four) equals the sequential
``clip(clip(e2, lo, hi) + noise, lo, hi)`` of section VII-D, on every case (no SPU needed: numpy as ``xp``)."""

from __future__ import annotations

import numpy as np

from urbandp.mpc._program import clamp_noisy


def _reference(e2: float, noise: float, lo: float, hi: float) -> float:
    return float(np.clip(np.clip(e2, lo, hi) + noise, lo, hi))


def test_clamp_noisy_equals_two_clips_on_random_and_edge_cases() -> None:
    rng = np.random.default_rng(7)
    step = 2.0**-18  # the fixed-point lattice: exact binary fractions, so equality is exact
    cases = []
    for _ in range(20_000):
        lo = float(rng.integers(0, 200)) * step * rng.choice([1, 1000])
        hi = lo + float(rng.integers(0, 400)) * step * rng.choice([1, 1000])
        e2 = float(rng.integers(-300, 900)) * step * rng.choice([1, 1000])
        noise = float(rng.integers(-900, 900)) * step * rng.choice([1, 1000])
        cases.append((e2, noise, lo, hi))
    # boundaries: e2 or e2 + noise exactly on lo / hi, zero noise, lo == hi
    for lo, hi in [(0.0, 1.0), (0.5, 0.5), (2.0, 40.0)]:
        for e2 in (lo - 1, lo, (lo + hi) / 2, hi, hi + 1):
            for noise in (0.0, lo - e2, hi - e2, hi - lo, lo - hi, -(hi - lo) - step, 3.0, -3.0):
                cases.append((e2, noise, lo, hi))
    seen = set()
    for e2, noise, lo, hi in cases:
        got = float(clamp_noisy(np, e2, noise, lo, hi))
        want = _reference(e2, noise, lo, hi)
        assert got == want, (e2, noise, lo, hi, got, want)
        seen.add((e2 < lo, e2 > hi, want == lo, want == hi))
    # every branch was exercised: e2 below / inside / above the range, result clamped low / high / inside
    assert {(True, False), (False, True), (False, False)} <= {s[:2] for s in seen}
    assert any(s[2] and not s[3] for s in seen) and any(s[3] and not s[2] for s in seen)
    assert any(not s[2] and not s[3] for s in seen)


def test_clamp_noisy_vectorised_over_a_batch() -> None:
    e2 = np.array([-1.0, 0.5, 3.0])
    noise = np.array([0.25, -1.0, -0.5])
    got = clamp_noisy(np, e2, noise, np.zeros(3), np.full(3, 2.0))
    assert got.tolist() == [0.25, 0.0, 1.5]
