"""Randomized response: epsilons pinned to the travel-survey report, de-biasing unbiased within Monte Carlo error.

OpenDP randomness cannot be seeded, so statistical checks use tolerances of 5.3 standard errors (false-failure
probability about 1.2e-7 per compared number) or p-value thresholds of 1e-7.
"""

from __future__ import annotations

import math

import numpy as np
import opendp.prelude as dp
import pytest
from scipy import stats

from urbandp.survey import _randomized_response as rr
from urbandp.survey._sampling import OpenDPBits, OSRandomBits
from urbandp.survey._trips import od_epsilon

dp.enable_features("contrib")


def test_binary_epsilon_is_ln3_for_theta_half() -> None:
    assert rr.binary_epsilon(0.5) == pytest.approx(math.log(3), rel=1e-12)  # report eq. 3
    assert rr.binary_epsilon(0.0) == 0.0
    assert rr.binary_epsilon(0.8) == pytest.approx(math.log(1.8 / 0.2), rel=1e-12)  # eq. 4


def test_krr_epsilon_is_opendp_map_and_closed_form() -> None:
    for k, prob in [(5, 0.6), (19 * 19, 0.5 + 0.5 / 361), (3, 0.9)]:
        expected = math.log(prob * (k - 1) / (1 - prob))
        assert rr.krr_epsilon(k, prob) == pytest.approx(expected, rel=1e-12)
        m = dp.m.make_randomized_response(categories=list(range(k)), prob=prob)
        assert rr.krr_epsilon(k, prob) == m.map(1)


def test_krr_prob_spends_at_most_epsilon() -> None:
    for k, eps in [(2, 0.5), (6, 2.0), (50, 1.0)]:
        prob = rr.krr_prob(k, eps)
        assert rr.krr_epsilon(k, prob) <= eps
        assert rr.krr_epsilon(k, prob) == pytest.approx(eps, rel=1e-9)


def test_report_eq13_worked_numbers() -> None:
    """Report section 4.2 (~16 for 2,500 blocks) and section 6.1 (~6 for 19 counties), p = 1/2."""
    blocks = od_epsilon(2500, 0.5)
    counties = od_epsilon(19, 0.5)
    assert round(blocks) == 16 and blocks == pytest.approx(math.log(2500**2 + 1), rel=1e-12)
    assert round(counties) == 6 and counties == pytest.approx(math.log(19**2 + 1), rel=1e-12)


def test_report_replacement_epsilon_depends_on_data() -> None:
    """Eq. (10)/(12): ln((p t + (1 - p) n) / ((1 - p) n)); one respondent moving changes n and with it epsilon."""
    assert rr.report_replacement_epsilon(0.5, [10, 5, 1]) == pytest.approx(math.log((16 + 1) / 1))
    # neighbouring data set: the single owner of the rarest model reports another model instead
    assert rr.report_replacement_epsilon(0.5, [11, 5, 0]) == pytest.approx(math.log((16 + 5) / 5))


@pytest.mark.parametrize("source", [OpenDPBits(), OSRandomBits()], ids=["opendp", "os"])
def test_randomize_codes_transition_probabilities(source: OpenDPBits | OSRandomBits) -> None:
    """From a fixed truth the output is the truth w.p. prob, each other category w.p. (1 - prob)/(k - 1)."""
    k, prob, n = 5, 0.55, 40_000
    out = rr.randomize_codes(np.full(n, 2), k, prob, source)
    expected = np.full(k, (1 - prob) / (k - 1) * n)
    expected[2] = prob * n
    # the sources take no seed: chi-square at 1e-7 (2e-7 a run for both; a probability 0.05 off is rejected at
    # p < 1e-80 at n = 40,000)
    assert stats.chisquare(np.bincount(out, minlength=k), expected).pvalue > 1e-7


def test_krr_debiasing_unbiased_within_monte_carlo_error() -> None:
    k, n, eps = 6, 200_000, 1.0
    truth = np.array([0.4, 0.25, 0.15, 0.1, 0.07, 0.03])
    codes = np.repeat(np.arange(k), (truth * n).astype(int))
    prob = rr.krr_prob(k, eps)
    out = rr.randomize_codes(codes, k, prob, OSRandomBits())
    est, se = rr.debias_counts(np.bincount(out, minlength=k), prob)
    assert np.all(np.abs(est - truth) < 5.3 * se)  # 6 shares: 7e-7 a run (4 se: about 4e-4)
    # the naive (not de-biased) shares are far off: the test can fail
    naive = np.bincount(out, minlength=k) / n
    assert np.abs(naive - truth).max() > 10 * se.max()


def test_binary_rr_is_krr_of_two_with_the_eq6_estimate() -> None:
    """Binary RR with theta is 2-RR with truth probability (1 + theta) / 2 (its epsilon, eq. 4), and de-biasing
    its counts is eq. (6): (p_hat + p_t - 1) / (2 p_t - 1) with p_t = (1 + theta) / 2, standard error
    sqrt(p_hat (1 - p_hat) / n) / theta."""
    theta, yes, n = 0.5, 4_000, 10_000
    p_t = (1 + theta) / 2
    assert rr.krr_epsilon(2, p_t) == pytest.approx(rr.binary_epsilon(theta), rel=1e-12)
    est, se = rr.debias_counts(np.array([yes, n - yes]), p_t)
    assert est[0] == pytest.approx((0.4 + p_t - 1) / (2 * p_t - 1), rel=1e-12)  # 0.3
    assert se[0] == pytest.approx(math.sqrt(0.4 * 0.6 / n) / theta, rel=1e-12)


def test_randomize_within_keeps_groups_and_declared_lists() -> None:
    groups = np.repeat([0, 1], [3000, 1000])
    codes = np.concatenate([np.zeros(3000, int), np.ones(1000, int)])
    out, probs = rr.randomize_within(codes, groups, {0: 6, 1: 3}, 1.0, OSRandomBits())
    assert out[groups == 0].max() < 6 and out[groups == 1].max() < 3
    assert rr.krr_epsilon(6, probs[0]) <= 1.0 and rr.krr_epsilon(3, probs[1]) <= 1.0
