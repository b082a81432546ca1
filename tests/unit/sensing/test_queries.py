"""Aggregate queries (Table III) against closed forms and Monte Carlo; DP on the squared error (VII-D)."""

from __future__ import annotations

import numpy as np
import pytest

from urbandp._privacy.mechanisms import laplace_epsilon, laplace_scale
from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp.sensing._queries import (
    clamp_sigma2,
    error2_range,
    privatize_error,
    run_query,
    sigmoid,
)

EXACT = ExactNoiseForTesting(acknowledge_not_private=True)
MU = np.array([3.0, 4.5, 5.2, 6.0, 7.5, 2.2, 5.0, 4.0])
S2 = np.array([0.010, 0.020, 0.015, 0.030, 0.010, 0.025, 0.020, 0.012])
V = np.array([1, 1, 1, 1, 1, 1, 0, 0], dtype=bool)


def test_average_closed_form_eq16() -> None:
    r = run_query("average", MU, S2, V, alpha=3)
    assert r.answered and r.n_selected == 6
    assert r.value == pytest.approx(MU[V].mean())
    assert r.error == pytest.approx(np.sqrt(S2[V].sum()) / 6)


def test_threshold_alpha_refuses_small_selections() -> None:
    r = run_query("average", MU, S2, V, alpha=7)
    assert not r.answered and r.value == 0.0 and r.error == 0.0
    assert privatize_error(r, "average", 1.0, 0.0, 0.1, OpenDPNoise()).noisy_error2 is None


def test_logsumexp_tends_to_exact_extremes() -> None:
    hi = run_query("max", MU, S2, V, rho=50.0)
    lo = run_query("min", MU, S2, V, rho=50.0)
    assert hi.value == pytest.approx(7.5, abs=1e-6) and hi.error == pytest.approx(0.1, rel=1e-6)
    assert lo.value == pytest.approx(2.2, abs=1e-6) and lo.error == pytest.approx(np.sqrt(0.025), rel=1e-6)
    # LogSumExp overestimates the max by at most log(n) / rho and underestimates the min likewise
    soft = run_query("max", MU, S2, V, rho=1.0)
    assert 7.5 <= soft.value <= 7.5 + np.log(6)
    assert run_query("min-exact", MU, S2, V).value == 2.2
    assert run_query("max-exact", MU, S2, V).error == pytest.approx(0.1)


def test_logsumexp_never_overflows() -> None:
    big = np.array([1e4, 2e4, 3e4])
    r = run_query("min", big, np.ones(3), np.ones(3, bool), rho=5.0)
    assert np.isfinite(r.value) and r.value == pytest.approx(1e4, abs=1e-9)


def test_count_and_range_formulas() -> None:
    s = sigmoid(MU[V], 5.0)
    r = run_query("count", MU, S2, V, theta=5.0)
    assert r.value == pytest.approx(s.sum())
    assert r.error == pytest.approx(np.sqrt(np.sum((s * (1 - s)) ** 2 * S2[V])))
    rr = run_query("range", MU, S2, V, theta=4.0, theta2=6.0, steepness=20.0)
    # 4.5 and 5.2 lie inside (4, 6) and count 1 each; 6.0 sits on the upper edge and counts 1/2
    assert rr.value == pytest.approx(2.5, abs=1e-3)
    with pytest.raises(ValueError):
        run_query("range", MU, S2, V, theta=6.0, theta2=4.0)


@pytest.mark.parametrize(
    ("query", "kwargs"),
    [
        ("average", {}),
        ("max", {"rho": 1.0}),
        ("min", {"rho": 1.0}),
        ("count", {"theta": 5.0}),
        ("range", {"theta": 4.0, "theta2": 6.0}),
        ("max-exact", {}),
        ("min-exact", {}),
    ],
)
def test_error_propagation_matches_monte_carlo(query: str, kwargs: dict[str, float]) -> None:
    """E of eq. (13) is the first-order (delta-method) standard deviation of f(y), y_i ~ N(mu_i, sigma_i^2).

    Tolerance: with N = 40,000 draws the sample standard deviation has relative standard error
    1/sqrt(2N) = 0.35%, so 4% is > 10 standard errors; the remaining slack covers the delta method's
    second-order term, which is O(sigma^2 |f''| / |f'|) ~ 1% here (sigma_i <= 0.17, curvatures <= 1).
    The exact min/max are checked where the extreme is >= 7 sigma from the runner-up.
    """
    rng = np.random.default_rng(12345)
    res = run_query(query, MU, S2, V, **kwargs)
    draws = MU[None, :] + rng.normal(size=(40_000, len(MU))) * np.sqrt(S2)[None, :]
    values = np.array([run_query(query, d, S2, V, **kwargs).value for d in draws])
    assert values.std(ddof=1) == pytest.approx(res.error, rel=0.04)
    # the mean moves only by the second-order term (bias), well under 0.05 for these inputs
    assert values.mean() == pytest.approx(res.value, abs=0.05)


def test_sensitivity_of_squared_error_is_per_reading() -> None:
    # one reading moves every cell's sigma^2: AVERAGE is (max - min) / n, not the paper's per-cell / n^2
    def width(*args: object, **kwargs: float) -> float:
        lo, hi = error2_range(*args, **kwargs)  # type: ignore[arg-type]
        return hi - lo

    assert width("average", 10, 0.0, 2.0) == pytest.approx(2.0 / 10)
    assert width("min", 10, 0.5, 2.0) == pytest.approx(2.0 - 0.05)
    assert width("max-exact", 10, 0.5, 2.0) == 1.5
    assert width("count", 10, 0.0, 1.0, steepness=2.0) == pytest.approx(10 * 4 / 16)
    assert error2_range("average", 4, 1.0, 3.0) == (0.25, 0.75)
    # brute force: moving EVERY sigma_i^2 (and every mu_i) at once keeps E^2 inside the range
    rng = np.random.default_rng(0)
    for q, kw in [
        ("average", {}),
        ("max", {"rho": 2.0}),
        ("min-exact", {}),
        ("count", {"theta": 5.0}),
        ("range", {"theta": 4.0, "theta2": 6.0}),
    ]:
        lo, hi = error2_range(q, 6, 0.2, 1.0)
        worst = 0.0
        for _ in range(300):
            a = run_query(q, MU, rng.uniform(0.2, 1, 8), V, **kw).error2
            b = run_query(q, MU + rng.normal(0, 2, 8), rng.uniform(0.2, 1, 8), V, **kw).error2
            assert lo - 1e-12 <= a <= hi + 1e-12
            worst = max(worst, abs(a - b))
        assert worst <= hi - lo + 1e-12
    # the per-cell bound of the paper is exceeded by one reading that lowers every cell's variance
    s2_all_max, s2_all_min = np.full(8, 1.0), np.full(8, 0.2)
    d = run_query("average", MU, s2_all_max, V).error2 - run_query("average", MU, s2_all_min, V).error2
    assert d == pytest.approx(0.8 / 6) and d > 0.8 / 36


def test_privatize_error_epsilon_is_from_opendp_map() -> None:
    r = run_query("average", MU, S2, V, alpha=3)
    out = privatize_error(r, "average", 0.5, 0.0, 0.05, EXACT)
    delta = 0.05 / 6
    scale = laplace_scale(delta, 0.5)
    assert out.epsilon == laplace_epsilon(delta, scale)
    assert out.epsilon <= 0.5
    assert out.noisy_error2 == pytest.approx(np.clip(r.error2, 0.0, 0.05 / 6))
    noisy = privatize_error(r, "average", 0.5, 0.0, 0.05, OpenDPNoise())
    assert 0.0 <= noisy.noisy_error2 <= 0.05 / 6


def test_clamp_and_validation() -> None:
    np.testing.assert_array_equal(clamp_sigma2(np.array([-1.0, 0.5, 3.0]), 0.1, 2.0), [0.1, 0.5, 2.0])
    with pytest.raises(ValueError):
        run_query("average", MU, S2[:3], V)
    with pytest.raises(ValueError):
        run_query("median", MU, S2, V)
    with pytest.raises(ValueError):
        run_query("max", MU, S2, V, rho=0.0)
