"""The recommended suppression threshold: the smallest with at most one expected noise-only cell."""

from __future__ import annotations

import math

import pytest

from urbandp.counts._tails import IntegerNoise
from urbandp.counts._threshold_advice import advice, expected_noise_only, recommended_threshold


@pytest.mark.parametrize(
    ("scale", "cells", "expected"),
    [
        (4.0, 9_072, 35),  # Opal daily, card-day k = 4 at epsilon 1
        (1.0, 9_072, 9),  # Opal daily, one unit per count at epsilon 1
        (4.0, 57_792, 42),  # counts synth's domain, card-day k = 4 at epsilon 1
        (4.0, 137_088, 46),  # the Opal 15-minute extracts' domain
        (0.5, 3, 1),  # already below one at t = 1
    ],
)
def test_laplace_recommendation_is_the_closed_form(scale: float, cells: int, expected: int) -> None:
    """``a^t / (1 + a) n <= 1`` first at ``t = ceil(b ln(n / (1 + a)))`` (``a = exp(-1/b)``), and at least 1."""
    law = IntegerNoise("discrete_laplace", scale)
    a = math.exp(-1 / scale)
    closed = max(1, math.ceil(scale * math.log(cells / (1 + a))))
    t = recommended_threshold(law, cells)
    assert t == closed == expected
    assert cells * a**t / (1 + a) <= 1.0
    assert t == 1 or cells * a ** (t - 1) / (1 + a) > 1.0


@pytest.mark.parametrize("target", [0.01, 1.0, 25.0])
def test_gaussian_recommendation_is_the_smallest(target: float) -> None:
    law = IntegerNoise("discrete_gaussian", 9.06)
    t = recommended_threshold(law, 10_000_704, target)
    assert expected_noise_only(law, t, 10_000_704) <= target < expected_noise_only(law, t - 1, 10_000_704)
    stated = advice(law, 10_000_704, target)
    assert stated["recommended_suppress_below"] == t
    assert stated["expected_noise_only_cells_at_most"] == expected_noise_only(law, t, 10_000_704)
