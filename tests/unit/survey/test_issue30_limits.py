"""Issue 30: k-RR at large epsilon (float limit), eq. (13) from a target epsilon, the SSD work bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from urbandp.errors import InvalidParameterError
from urbandp.survey import _randomized_response as rr
from urbandp.survey import _ssd as ssd
from urbandp.survey import _trips as tr


@pytest.mark.parametrize("k", [2, 3, 14, 361])
@pytest.mark.parametrize("epsilon", [38.0, 40.0, 99.0])
def test_krr_prob_at_large_epsilon_is_the_largest_float_below_one(k: int, epsilon: float) -> None:
    """e^eps / (e^eps + k - 1) rounds to 1.0 above ~36.7 + ln(k - 1) (exit 70 before): the truth probability is
    then 1 - 2^-53 and the map, ln(prob (k - 1) / (1 - prob)), is what is spent (below the asked epsilon)."""
    prob = rr.krr_prob(k, epsilon)
    assert prob < 1.0
    spent = rr.krr_epsilon(k, prob)
    assert spent <= epsilon
    closed = math.log(prob) + math.log(k - 1) + 53 * math.log(2)  # 1 - prob = 2^-53 exactly at the limit
    if epsilon > rr.krr_max_epsilon(k):
        assert prob == 1.0 - 2.0**-53 and spent == pytest.approx(closed, rel=1e-12)
    assert rr.krr_max_epsilon(2) == pytest.approx(53 * math.log(2), rel=1e-12)  # 36.74


def test_within_probs_depend_on_the_declared_lists_only() -> None:
    """Every declared group gets its probability, whether or not a row of the data is in it (public)."""
    lists = {0: 3, 1: 2, 2: 1}
    probs = rr.within_probs(lists, 1.0)
    assert probs[2] == 1.0 and probs[1] == rr.krr_prob(2, 1.0) and probs[0] == rr.krr_prob(3, 1.0)
    out, used = rr.randomize_within(np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64), lists, 1.0)
    assert used == probs and out.shape == (4,)
    assert rr.within_epsilon(lists, probs) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.5, 5.0, 30.0, 60.0, 99.0])
def test_od_keep_probability_never_spends_more_than_asked(epsilon: float) -> None:
    p = tr.od_keep_probability(19, epsilon)
    assert 0 <= p < 1 and tr.od_epsilon(19, p) <= epsilon
    if epsilon < 30:
        assert tr.od_epsilon(19, p) == pytest.approx(epsilon, rel=1e-9)


def test_ssd_work_bound_refuses_small_epsilon_from_epsilon_alone() -> None:
    """Worst-case Laplace draws per point, 100 x (1 / C_length + 1 / C_angle), grow as 1 / epsilon: 2,606 at
    epsilon 1, 240,200 at 0.01 (the hang); the bound (25,000) admits epsilon >= ~0.0968."""
    assert ssd.draws_per_point(1.0) == pytest.approx(2606.245, rel=1e-6)
    assert ssd.draws_per_point(0.01) == pytest.approx(240_200.06, rel=1e-6)
    low = ssd.min_epsilon()
    assert 0.0967 < low < 0.0969 and ssd.draws_per_point(low) <= ssd.MAX_DRAWS_PER_POINT
    ssd.check_work(0.097)
    ssd.check_work(50.0)
    for bad in (0.096, 0.01, 1e-300):
        with pytest.raises(InvalidParameterError, match="Laplace draws per point"):
            ssd.check_work(bad)
