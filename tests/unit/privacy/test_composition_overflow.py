"""The optimal composition stays finite and exact where e^epsilon overflows (issue 30: dp-map --epsilon 1e300 ended
with exit 70, OverflowError in homogeneous_delta)."""

from __future__ import annotations

import pytest

from urbandp._privacy.loss import homogeneous_delta, optimal_homogeneous_epsilon


@pytest.mark.parametrize("epsilon", [710.0, 1e5, 1e300])
def test_large_epsilons_compose_without_overflow(epsilon: float) -> None:
    # at such epsilons randomized response reveals the answer: delta(e') = 1 - e^(e' - k eps) ~ 1 below k eps
    assert homogeneous_delta(epsilon, 10, 0.0) == pytest.approx(1.0)
    assert optimal_homogeneous_epsilon(epsilon, 10, 1e-6) == pytest.approx(10 * epsilon, rel=1e-9)


def test_the_kolkata_figures_are_unchanged() -> None:
    """docs/privacy-core.md: the 414-cell map at delta 1e-6 composes to 272.2 at 1 per cell and 11.15 at 0.1."""
    assert optimal_homogeneous_epsilon(1.0, 414, 1e-6) == pytest.approx(272.1933, abs=1e-4)
    assert optimal_homogeneous_epsilon(0.1, 414, 1e-6) == pytest.approx(11.1475, abs=1e-4)
