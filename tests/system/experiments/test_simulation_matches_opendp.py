"""The numpy Monte Carlo draws from the same distributions as the OpenDP release path."""

from __future__ import annotations

import math

import numpy as np
import opendp.prelude as dp
import pytest

from urbandp._experiments.mean_simulation import _noisy_argmax, simulate_errors
from urbandp._experiments.synthetic_mean import draw_samples
from urbandp._privacy.noise import OpenDPNoise
from urbandp.estimators import ClippedMean, Levy, Quantile
from urbandp.estimators._selection import private_argmax, quantile_scores

dp.enable_features("contrib")


def test_noisy_max_is_report_noisy_max_with_exponential_noise() -> None:
    # scores [0, 1], scale 1: exponential noise gives P(1) = 1 - e^-1 / 2 = 0.8161 (Gumbel would give 0.7311).
    p = 1 - math.exp(-1) / 2
    n_sim, n_dp = 40000, 3000
    sim = _noisy_argmax(np.random.default_rng(3), np.array([0.0, 1.0]), 1.0, n_sim).mean()
    assert abs(sim - p) <= 4 * math.sqrt(p * (1 - p) / n_sim)
    real = np.mean([private_argmax(np.array([0, 1]), 1.0) for _ in range(n_dp)])
    assert abs(real - p) <= 4 * math.sqrt(p * (1 - p) / n_dp)  # 4 binomial standard errors
    assert abs(real - 0.7311) > 4 * math.sqrt(p * (1 - p) / n_dp)


@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.9, 0.0244])
def test_quantile_scores_are_opendps_up_to_a_constant(alpha: float) -> None:
    x = np.random.default_rng(0).uniform(0, 65, 41)
    cands = np.linspace(0, 65, 66)
    ours = quantile_scores(x, cands, alpha)
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=x.size)
    theirs = np.array(
        dp.t.make_quantile_score_candidates(domain, dp.symmetric_distance(), cands.tolist(), alpha)(
            x.tolist()
        ),
        dtype=float,
    )
    ratio = theirs[ours > 0] / ours[ours > 0]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-6)
    np.testing.assert_array_equal(theirs == 0, ours == 0)


@pytest.mark.parametrize(
    "estimator",
    [
        Levy(upper=65.0),
        Quantile(upper=65.0, rule="fixed", n_candidates=131),
        ClippedMean(upper=65.0, m_cap=80),
    ],
)
def test_release_and_simulation_have_the_same_mae(estimator: Levy | Quantile | ClippedMean) -> None:
    # Small HAT: 40 units with 5..60 samples. The release path (OpenDP) is run n_real times; the simulation
    # n_sim times. Both MAEs estimate the same number; their difference has standard error
    # sqrt(sd_real^2 / n_real + sd_sim^2 / n_sim): we allow 4 of them.
    counts = np.random.default_rng(1).integers(5, 61, 40)
    values = draw_samples(counts, 65.0, seed=2)
    eps, n_real, n_sim = 1.0, 400, 40000
    prep = estimator.prepare(values)
    sim = simulate_errors(estimator, prep, eps, n_sim, np.random.default_rng(5))
    noise = OpenDPNoise()
    real = np.array(
        [abs(estimator.estimate(values, eps, noise).estimate - prep.true_mean) for _ in range(n_real)]
    )
    se = math.sqrt(real.var(ddof=1) / n_real + sim.var(ddof=1) / n_sim)
    assert abs(real.mean() - sim.mean()) <= 4 * se
