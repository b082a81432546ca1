"""GP engine: analytic gradients, agreement with scikit-learn, SGPR reduces to the exact GP."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

from urbandp.sensing._gp import (
    Bounds,
    ExactGP,
    Hyperparameters,
    SparseGP,
    method_name,
    profiled_log_marginal_likelihood,
    sgpr_bound,
)
from urbandp.sensing._interpolation import fit_window
from urbandp.sensing._kernels import distances


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 5, (n, 2))
    y = np.sin(x[:, 0]) + 0.5 * np.cos(1.3 * x[:, 1]) + 0.1 * rng.normal(size=n)
    return x, y


def _sk_kernel(kernel: str, hp: Hyperparameters):  # type: ignore[no-untyped-def]
    base = {
        "rbf": RBF(hp.lengthscale),
        "matern32": Matern(hp.lengthscale, nu=1.5),
        "matern52": Matern(hp.lengthscale, nu=2.5),
    }[kernel]
    return ConstantKernel(hp.variance) * base


@pytest.mark.parametrize("kernel", ["matern32", "matern52", "rbf"])
def test_gradients_match_finite_differences(kernel: str) -> None:
    x, y = _data(60)
    ys = (y - y.mean()) / y.std()
    r = distances(x, x)
    h = 1e-6
    th2 = np.log([1.3, 0.05])
    _, g2, _ = profiled_log_marginal_likelihood(kernel, r, ys, th2, (1e-2, 1e2))
    fd2 = [
        (
            profiled_log_marginal_likelihood(kernel, r, ys, th2 + h * e, (1e-2, 1e2), False)[0]
            - profiled_log_marginal_likelihood(kernel, r, ys, th2 - h * e, (1e-2, 1e2), False)[0]
        )
        / (2 * h)
        for e in np.eye(2)
    ]
    np.testing.assert_allclose(g2, fd2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kernel", ["matern32", "matern52", "rbf"])
def test_fixed_hyperparameters_agree_with_sklearn(kernel: str) -> None:
    x, y = _data(200, seed=1)
    hp = Hyperparameters(variance=0.9, lengthscale=1.1, noise=0.02)
    ours = ExactGP(kernel=kernel, hyperparameters=hp).fit(x, y)
    ys = (y - y.mean()) / y.std()
    sk = GaussianProcessRegressor(
        _sk_kernel(kernel, hp), alpha=hp.noise, optimizer=None, normalize_y=False
    ).fit(x, ys)
    grid = np.stack(np.meshgrid(np.linspace(-0.5, 5.5, 25), np.linspace(-0.5, 5.5, 25)), -1).reshape(-1, 2)
    m, v = ours.predict_standardised(grid)
    sm, ss = sk.predict(grid, return_std=True)
    np.testing.assert_allclose(m, sm, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(v, ss**2, rtol=1e-6, atol=1e-9)
    assert ours.log_marginal_likelihood_ == pytest.approx(sk.log_marginal_likelihood_value_, rel=1e-9)


def test_optimised_likelihood_at_least_sklearns() -> None:
    x, y = _data(150, seed=2)
    ys = (y - y.mean()) / y.std()
    ours = ExactGP(kernel="matern32").fit(x, y)
    kernel = ConstantKernel(1.0, (1e-2, 1e2)) * Matern(1.0, (1e-3, 1e3), nu=1.5) + WhiteKernel(
        0.1, (1e-6, 10.0)
    )
    sk = GaussianProcessRegressor(kernel, n_restarts_optimizer=1, random_state=0).fit(x, ys)
    assert ours.log_marginal_likelihood_ >= sk.log_marginal_likelihood_value_ - 1e-6
    # the reported optimum is the likelihood of the returned hyper-parameters
    hp = ours.hyperparameters_
    lml = ExactGP(kernel="matern32", hyperparameters=hp).fit(x, ys).log_marginal_likelihood_
    assert lml == pytest.approx(ours.log_marginal_likelihood_, rel=1e-9)


def test_variance_cap_is_respected() -> None:
    x, y = _data(150, seed=3)
    gp = ExactGP(bounds=Bounds(variance=(1e-2, 0.5))).fit(x, y)
    assert gp.hyperparameters_.variance <= 0.5 + 1e-12
    _, v = gp.predict_standardised(np.array([[2.0, 2.0], [50.0, 50.0]]))
    assert np.all(v <= gp.hyperparameters_.variance + 1e-12)
    assert v[1] == pytest.approx(gp.hyperparameters_.variance, rel=1e-9)  # far away: prior variance


def test_sgpr_with_all_points_inducing_equals_exact() -> None:
    x, y = _data(120, seed=4)
    hp = Hyperparameters(1.0, 1.0, 0.05)
    exact = ExactGP(hyperparameters=hp).fit(x, y)
    sparse = SparseGP(hyperparameters=hp, n_inducing=500).fit(x, y)
    g = np.random.default_rng(0).uniform(0, 5, (50, 2))
    m1, v1 = exact.predict_standardised(g)
    m2, v2 = sparse.predict_standardised(g)
    # the only difference is the 1e-8 * sigma_f^2 jitter on K_mm
    np.testing.assert_allclose(m2, m1, atol=1e-5)
    np.testing.assert_allclose(v2, v1, atol=1e-5)
    assert sparse.elbo_ == pytest.approx(exact.log_marginal_likelihood_, abs=1e-3)


def test_sgpr_close_to_exact_with_few_inducing_points() -> None:
    x, y = _data(800, seed=5)
    hp = Hyperparameters(1.0, 1.5, 0.02)
    exact = ExactGP(hyperparameters=hp).fit(x, y)
    sparse = SparseGP(n_inducing=150, hyperparameters=hp).fit(x, y)
    g = np.random.default_rng(1).uniform(0, 5, (200, 2))
    m1, _ = exact.predict(g)
    m2, _ = sparse.predict(g)
    assert np.sqrt(np.mean((m1 - m2) ** 2)) < 0.05 * np.std(y)
    assert sparse.elbo_ <= exact.log_marginal_likelihood_ + 1e-6  # a lower bound (Titsias 2009)


def test_fit_window_switches_to_sparse() -> None:
    x, y = _data(400, seed=6)
    assert isinstance(fit_window(x[:100], y[:100], exact_max=300), ExactGP)
    sp = fit_window(x, y, exact_max=300, n_inducing=50)
    assert isinstance(sp, SparseGP) and method_name(sp) == "sgpr(m=50)"


@pytest.mark.parametrize("kernel", ["matern32", "matern52", "rbf"])
def test_sgpr_bound_gradient_and_full_inducing_limit(kernel: str) -> None:
    x, y = _data(150, seed=7)
    ys = (y - y.mean()) / y.std()
    z = x[np.random.default_rng(0).choice(150, 25, replace=False)]
    r_uf, r_uu = distances(z, x), distances(z, z)
    theta = np.log([0.9, 1.2, 0.05])
    _, grad = sgpr_bound(kernel, r_uf, r_uu, ys, theta)
    h = 1e-5
    fd = [
        (
            sgpr_bound(kernel, r_uf, r_uu, ys, theta + h * e, False)[0]
            - sgpr_bound(kernel, r_uf, r_uu, ys, theta - h * e, False)[0]
        )
        / (2 * h)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-5)
    # with every reading as an inducing point the bound is the exact log marginal likelihood (up to the jitter)
    full, _ = sgpr_bound(kernel, distances(x, x), distances(x, x), ys, theta, False)
    exact = (
        ExactGP(kernel=kernel, hyperparameters=Hyperparameters.from_log(theta))
        .fit(x, ys)
        .log_marginal_likelihood_
    )
    assert full == pytest.approx(exact, abs=5e-3)
    assert full <= exact + 1e-9


def test_sgpr_bound_optimisation_improves_the_bound() -> None:
    x, y = _data(1200, seed=8)
    sp = SparseGP(n_inducing=100, opt_inducing=60, subsample=300).fit(x, y)
    assert sp.bound_optimised_ >= sp.bound_start_
