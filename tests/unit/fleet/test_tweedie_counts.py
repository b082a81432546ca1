"""The pooled intervals' count: ``E[N | N~]`` by Tweedie's formula over the release's noisy counts (fleet/_postprocess_pooling.py).

For an exponential distribution of true counts (mean ``m``) and Gaussian noise (sd ``s``) the posterior of ``N``
given a noisy count ``x`` well above 0 is normal with mean ``x - s^2 / m`` (the prior's ``exp(-N / m)`` times the
noise's ``exp(-(x - N)^2 / 2 s^2)``, completed square), so the formula's estimate is known exactly there.
"""

from __future__ import annotations

import numpy as np

from urbandp.fleet._postprocess_pooling import tweedie_counts


def test_tweedie_count_is_the_posterior_mean_of_an_exponential_fleet() -> None:
    rng = np.random.default_rng(7)
    mean, sd = 20.0, 2.0
    true = rng.exponential(mean, 40_000)
    noisy = true + rng.normal(0.0, sd, true.size)
    at = np.array([30.0, 40.0, 50.0])
    est = tweedie_counts(at, noisy, sd, np.full(at.size, np.nan))
    # exact posterior mean x - s^2/m = x - 0.2 (kernel estimate of the density's slope: within 0.08)
    assert np.allclose(est, at - sd**2 / mean, atol=0.08), est
    # and it is what the true counts average among the draws whose noisy count is near x
    near = np.abs(noisy - 40.0) < 0.5
    assert abs(float(true[near].mean()) - float(est[1])) < 0.15


def test_tweedie_count_never_rises_above_the_noisy_count_nor_falls_below_the_interval() -> None:
    rng = np.random.default_rng(8)
    released = np.concatenate([np.full(50, 6.0) + rng.normal(0.0, 0.3, 50), rng.uniform(6.0, 60.0, 200)])
    at = np.array([6.1, 20.0, 59.0])
    low = np.array([4.0, 19.9, np.nan])
    est = tweedie_counts(at, released, 2.0, low)
    assert (est <= at).all()  # at the display threshold the density rises with x: no count is read higher
    assert est[0] == 6.1 and est[1] >= 19.9
    # too few released counts to estimate a density: the noisy counts as they are
    assert tweedie_counts(at, released[:2], 2.0, low).tolist() == at.tolist()
