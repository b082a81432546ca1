"""The shared privacy core: OpenDP noise sources, calibration helpers and the ledger."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from urbandp._privacy.ledger import LedgerEntry, PrivacyLedger
from urbandp._privacy.mechanisms import laplace_epsilon, laplace_scale
from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp._privacy.rounding import round_to_precision
from urbandp.errors import BudgetExceededError


def test_laplace_epsilon_is_sensitivity_over_scale() -> None:
    assert laplace_epsilon(65 / 314, 1.0) == pytest.approx(65 / 314, rel=1e-12)  # report III E, B = 1
    assert laplace_epsilon(1.0, 0.0) == math.inf


def test_laplace_scale_is_the_smallest_within_budget() -> None:
    b = laplace_scale(3.0, 0.7)
    assert laplace_epsilon(3.0, b) <= 0.7
    assert b == pytest.approx(3.0 / 0.7, rel=1e-12)
    with pytest.raises(ValueError):
        laplace_scale(1.0, 0.0)


def test_opendp_laplace_has_the_stated_distribution_per_scale() -> None:
    """Two scales in one call (grouped internally); KS at alpha = 1e-7 per group (OpenDP's draws take no seed;
    a group drawn at the other scale gives p < 1e-60)."""
    values = np.zeros(4000)
    scales = np.where(np.arange(4000) % 2 == 0, 1.0, 3.0)
    noisy = OpenDPNoise().laplace(values, scales)
    for s in (1.0, 3.0):
        assert stats.kstest(noisy[scales == s] / s, stats.laplace.cdf).pvalue > 1e-7


def test_opendp_discrete_laplace_returns_integers_centred_on_the_input() -> None:
    noisy = OpenDPNoise().discrete_laplace(np.full(5000, 7), 2.0)
    assert noisy.dtype == np.int64
    # discrete Laplace(t = 2) variance = 2 e^{-1/2} / (1 - e^{-1/2})^2 ~ 7.92; mean 7, sd of mean ~ 0.04
    assert abs(noisy.mean() - 7) < 5 * math.sqrt(7.92 / 5000)


def test_exact_noise_needs_acknowledgement() -> None:
    with pytest.raises(ValueError, match="acknowledge_not_private"):
        ExactNoiseForTesting()
    exact = ExactNoiseForTesting(acknowledge_not_private=True)
    assert exact.is_private is False and OpenDPNoise.is_private is True
    assert exact.laplace(np.array([1.5]), 9.0).tolist() == [1.5]


def test_ledger_refuses_overspend_and_reports() -> None:
    ledger = PrivacyLedger(budget_epsilon=1.0)
    ledger.charge(LedgerEntry("a", 0.6))
    with pytest.raises(BudgetExceededError, match=r"asked for epsilon=0.5.*left epsilon=0.4"):
        ledger.charge(LedgerEntry("b", 0.5))
    ledger.charge(LedgerEntry("c", 0.4, delta=1e-6))  # unlimited delta by default
    assert ledger.epsilon_spent == pytest.approx(1.0)
    assert ledger.to_dict()["delta_spent"] == 1e-6
    strict = PrivacyLedger(budget_epsilon=None, budget_delta=1e-9)
    with pytest.raises(BudgetExceededError):
        strict.charge(LedgerEntry("d", 0.1, delta=1e-6))


def test_rounding() -> None:
    assert round_to_precision(np.array([1.23456]), 2).tolist() == [1.23]
    assert round_to_precision(np.array([1.23456]), None).tolist() == [1.23456]


def test_long_vectors_are_drawn_on_every_core_without_mixing_up_elements(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Vectors over THREAD_CHUNK values run as one OpenDP call per core (threads): every element keeps its own
    position (values 1,000 apart, noise of scale 1) and the noise is still Laplace(1) (KS test, p > 1e-7: OpenDP's
    draws take no seed), for the finest granularity and for the lattice draws alike."""
    import urbandp._privacy.noise as noise_mod

    monkeypatch.setattr(noise_mod.os, "cpu_count", lambda: 3)  # 3 chunks even on a 2-core machine
    values = np.arange(3 * noise_mod.THREAD_CHUNK, dtype=float) * 1000.0
    source = noise_mod.OpenDPNoise()
    for out in (source.laplace(values, 1.0), source.laplace_on_lattice(values, 1.0, -40)):
        diff = out - values
        assert out.shape == values.shape and np.all(np.abs(diff) < 100)
        assert stats.kstest(diff, stats.laplace(scale=1.0).cdf).pvalue > 1e-7
