"""Issue 30: the samplers' SCALE, tested with enough power to see a 10% error.

A Kolmogorov-Smirnov test on 4,000 draws passed a bounded Laplace at 0.9 b twenty times out of twenty, and the
Gaussian and discrete Gaussian samplers had no distribution test. Each test here draws n values of zero through
one sampler and compares the mean of a scale statistic g (|X| for the Laplace laws, X^2 for the Gaussian ones)
with its exact expectation mu at the stated scale.

Power calculation (normal approximation of a mean of n i.i.d. values, z = 5.3):

* accept iff |mean g - mu_0| <= z tau_0 / sqrt(n), with mu_s, tau_s the mean and sd of g at scale s (computed
  exactly from the density or pmf below, truncation included);
* false failure at the stated scale: 2 Phi(-5.3) = 1.2e-7;
* at 0.9 s or 1.1 s the mean must stray z tau_1 / sqrt(n) towards mu_0 to pass, which has probability
  Phi(-5.3) = 5.8e-8 when |mu_1 - mu_0| sqrt(n) >= z (tau_0 + tau_1): n is the smallest such size for both
  alternatives (``required_n``: 12,388 draws for |X| of a Laplace, 6,222 for X^2 of a Gaussian, 25,003 for the
  bounded Laplace below, whose truncation hides part of a scale change; the 1.1 s alternative is the harder one);
* the skewness of these means is at most 2 / sqrt(n) (|X|) and sqrt(8 / n) (X^2), about 0.02 and 0.04 here; the
  Edgeworth correction at 5.3 sd multiplies a tail by at most 1 + skew (z^3 - 3 z) / 6 < 1.9, so both error rates
  stay below 1e-6.

OpenDP's samplers take no seed, hence the one-in-a-million design instead of a fixed seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from urbandp._privacy.noise import OpenDPNoise
from urbandp.sensing._bounded_laplace import BoundedLaplace

Z = 5.3
Moments = Callable[[float], tuple[float, float]]  # scale -> (mean, sd) of g(X)


def required_n(moments: Moments, scale: float) -> int:
    """Smallest n with |mu_1 - mu_0| sqrt(n) >= z (tau_0 + tau_1) at both 0.9 and 1.1 times the scale."""
    mu0, tau0 = moments(scale)
    need = 0.0
    for factor in (0.9, 1.1):
        mu1, tau1 = moments(factor * scale)
        need = max(need, (Z * (tau0 + tau1) / abs(mu1 - mu0)) ** 2)
    return math.ceil(need)


def check_scale(
    draws: np.ndarray, g: Callable[[np.ndarray], np.ndarray], moments: Moments, scale: float
) -> None:
    mu, tau = moments(scale)
    n = draws.size
    mean = float(np.mean(g(draws.astype(float))))
    assert abs(mean - mu) <= Z * tau / math.sqrt(n), (mean, mu, Z * tau / math.sqrt(n))


def lattice_moments(
    weight: Callable[[np.ndarray], np.ndarray], g: Callable[[np.ndarray], np.ndarray]
) -> Moments:
    """Mean and sd of g(X) for an integer law with pmf proportional to weight(k / scale), summed over |k| <= 60 s."""

    def moments(scale: float) -> tuple[float, float]:
        k = np.arange(-math.ceil(60 * scale) - 5, math.ceil(60 * scale) + 6, dtype=float)
        p = weight(k / scale)
        p /= p.sum()
        m1 = float(np.sum(p * g(k)))
        m2 = float(np.sum(p * g(k) ** 2))
        return m1, math.sqrt(m2 - m1 * m1)

    return moments


def absolute(x: np.ndarray) -> np.ndarray:
    return np.abs(x)


def square(x: np.ndarray) -> np.ndarray:
    return x * x


def laplace_moments(b: float) -> tuple[float, float]:
    return b, b  # |X| ~ Exponential(b)


def gaussian_moments(sigma: float) -> tuple[float, float]:
    return sigma**2, math.sqrt(2.0) * sigma**2  # X^2 ~ sigma^2 chi^2_1


DISCRETE_LAPLACE = lattice_moments(lambda t: np.exp(-np.abs(t)), absolute)
DISCRETE_GAUSSIAN = lattice_moments(lambda t: np.exp(-t * t / 2.0), square)

CASES: dict[str, tuple[Moments, Callable[[np.ndarray], np.ndarray], type]] = {
    "laplace": (laplace_moments, absolute, float),
    "discrete_laplace": (DISCRETE_LAPLACE, absolute, np.int64),
    "gaussian": (gaussian_moments, square, float),
    "discrete_gaussian": (DISCRETE_GAUSSIAN, square, np.int64),
}


@pytest.mark.parametrize("sampler", list(CASES))
def test_sampler_has_its_stated_scale_within_a_tenth(sampler: str) -> None:
    moments, g, dtype = CASES[sampler]
    scale = 3.0
    n = required_n(moments, scale)
    assert 6_000 <= n <= 13_000  # the power calculation of the module docstring, and under ~1 s of draws
    draws = getattr(OpenDPNoise(), sampler)(np.zeros(n, dtype=dtype), scale)
    check_scale(draws, g, moments, scale)


def test_required_n_gives_the_stated_power_against_ten_percent() -> None:
    """The sizes that the docstring states: at 1.1 b, |X| has mean 1.1 b and sd 1.1 b, so n = (5.3 x 2.1 / 0.1)^2;
    at 1.1 sigma, X^2 has mean 1.21 sigma^2 and sd 1.21 sqrt 2 sigma^2, so n = (5.3 x 2.21 sqrt 2 / 0.21)^2."""
    assert required_n(laplace_moments, 3.0) == math.ceil((5.3 * 2.1 / 0.1) ** 2) == 12_388
    assert required_n(gaussian_moments, 3.0) == math.ceil((5.3 * math.sqrt(2) * 2.21 / 0.21) ** 2) == 6_222


def bounded_laplace_moments(half_width: float) -> Moments:
    """Mean and sd of |Y - x| for the bounded Laplace centred at the middle x of a domain of half-width a:
    density exp(-t / b) on 0 <= t <= a, normalised (Holohan et al. 2018): with r = a / b and e = exp(-r),
    int_0^a t^j exp(-t/b) dt = b^(j+1) (j! - e sum_{i<=j} j!/i! r^i)."""

    def moments(b: float) -> tuple[float, float]:
        r = half_width / b
        e = math.exp(-r)
        i0 = b * (1.0 - e)
        i1 = b**2 * (1.0 - e * (1.0 + r))
        i2 = b**3 * (2.0 - e * (r * r + 2.0 * r + 2.0))
        m1, m2 = i1 / i0, i2 / i0
        return m1, math.sqrt(m2 - m1 * m1)

    return moments


def test_bounded_laplace_draws_at_its_calibrated_scale_within_a_tenth() -> None:
    """The Holohan-calibrated bounded Laplace on [0, 10] at epsilon 1 (b = 1.61), inputs at the middle 5: the mean
    of |Y - 5| is that of the Laplace truncated to |t| <= 5 at the scale the mechanism states (``mech.scale``)."""
    mech = BoundedLaplace(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=10.0)
    moments = bounded_laplace_moments(5.0)
    n = required_n(moments, mech.scale)
    assert n == 25_003  # the docstring's figure
    out = mech.release(np.full(n, 5.0), OpenDPNoise())
    assert out.min() >= 0.0 and out.max() <= 10.0
    check_scale(out - 5.0, absolute, moments, mech.scale)
