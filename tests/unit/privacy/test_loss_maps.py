"""Issue 30: the privacy maps and compositions pinned at exact values, so that an off-by-a-factor sensitivity, a
composition by max instead of sum, or linear group privacy in rho fails here and not only in an end-to-end run."""

from __future__ import annotations

import math

import pytest

from urbandp._privacy.loss import Loss
from urbandp._privacy.mechanisms import Gaussian, Laplace, gaussian_rho, laplace_epsilon


def test_gaussian_rho_is_the_squared_sensitivity_over_twice_the_variance() -> None:
    """Bun and Steinke 2016, Prop. 1.6: rho = Delta^2 / (2 sigma^2); OpenDP rounds outward (never below)."""
    for sensitivity, sigma in [(3.0, 2.0), (math.sqrt(12), 1.0), (1.0, 0.1), (32.5, 7.0)]:
        expected = sensitivity**2 / (2 * sigma**2)
        assert gaussian_rho(sensitivity, sigma) == pytest.approx(expected, rel=1e-12)
        assert gaussian_rho(sensitivity, sigma) >= expected * (1 - 1e-15)
    assert gaussian_rho(1.0, 0.0) == math.inf


def test_laplace_epsilon_is_the_sensitivity_over_the_scale() -> None:
    for sensitivity, b in [(2.0, 4.0), (65.0, 13.0), (1.0, 0.25)]:
        assert laplace_epsilon(sensitivity, b) == pytest.approx(sensitivity / b, rel=1e-12)


def test_the_loss_functions_are_the_mechanisms_maps() -> None:
    """One map per law: the functions read the mechanisms' own loss, bit for bit."""
    assert laplace_epsilon(65 / 314, 0.3) == Laplace(0.3).loss(65 / 314).epsilon
    assert gaussian_rho(math.sqrt(12), 1.7) == Gaussian(1.7).loss(math.sqrt(12)).rho
    assert laplace_epsilon(1.0, 0.0) == gaussian_rho(1.0, -1.0) == math.inf


def test_losses_add_in_each_currency_and_group_by_d_squared_in_rho() -> None:
    total = Loss.zcdp(0.25) + Loss.zcdp(0.5) + Loss(epsilon=1.0) + Loss(epsilon=0.5)
    assert (total.rho, total.epsilon, total.delta) == (0.75, 1.5, 0.0)
    grouped = Loss(epsilon=0.5, rho=0.5).group(3)
    assert (grouped.epsilon, grouped.rho) == (1.5, 4.5)  # epsilon D times, rho D^2 times (Prop. 1.9)
