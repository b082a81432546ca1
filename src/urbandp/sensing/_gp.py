"""Gaussian-process regression for the fleet-sensing maps (paper sections II and V, eqs. (1)-(5)).

Why not scikit-learn or GPy (measured too slow at 1,400 readings, infeasible at 20,000) and how the engine is
built are in docs/sensing.md, section "Why our own GP engine (measured)". Two models share one interface (``fit``
then ``predict``): :class:`ExactGP` maximises the log marginal likelihood (Rasmussen & Williams 2006, eq. 5.8)
with its analytic gradient (eq. 5.9); :class:`SparseGP` is Titsias (2009) SGPR, refining an exact fit on a
subsample by its collapsed bound (eq. 9). The predictive variance returned is the posterior variance of the
latent field, ``sigma_p^2`` of eq. (5) (the paper's map quantity); it is at most ``sigma_f^2``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.linalg as sla
from scipy.optimize import OptimizeResult, minimize

from urbandp.sensing._kernels import distances, kernel_value, value_and_dlog_lengthscale

LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class Hyperparameters:
    """Kernel variance sigma_f^2, length-scale l (same unit as the inputs) and noise variance sigma_n^2."""

    variance: float
    lengthscale: float
    noise: float

    def as_log(self) -> np.ndarray:
        return np.log([self.variance, self.lengthscale, self.noise])

    @classmethod
    def from_log(cls, theta: np.ndarray) -> Hyperparameters:
        v, ell, s = np.exp(theta)
        return cls(float(v), float(ell), float(s))

    def rescaled(self, ratio: float) -> Hyperparameters:
        """This fit for values standardised by another sd: both variances times ``ratio = (this sd / that sd)^2``."""
        return Hyperparameters(self.variance * ratio, self.lengthscale, self.noise * ratio)


@dataclass(frozen=True)
class Bounds:
    """Box for the optimiser (natural units). ``variance`` may be capped so that a DP sensitivity holds (VI-A)."""

    variance: tuple[float, float] = (1e-2, 1e2)
    lengthscale: tuple[float, float] = (1e-3, 1e3)
    noise_ratio: tuple[float, float] = (1e-6, 10.0)
    """g = sigma_n^2 / sigma_f^2 (the noise-to-signal ratio the profiled optimiser works with)."""

    def as_log(self) -> list[tuple[float, float]]:
        """Log-bounds of the profiled optimiser's parameters (log l, log g)."""
        return [(math.log(a), math.log(b)) for a, b in (self.lengthscale, self.noise_ratio)]


def _chol(k: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor, adding jitter only if the matrix is numerically not positive definite."""
    jitter = 0.0
    scale = float(np.mean(np.diag(k)))
    for _ in range(6):
        try:
            if jitter:
                k = k + jitter * np.eye(k.shape[0])
            return sla.cholesky(k, lower=True, check_finite=False)
        except sla.LinAlgError:
            jitter = scale * (1e-10 if jitter == 0.0 else jitter / scale * 100.0)
    raise sla.LinAlgError("covariance matrix is not positive definite even with jitter")


def _kinv_lower(chol: np.ndarray) -> np.ndarray:
    """Lower triangle of K^{-1} from its Cholesky factor (LAPACK dpotri); the upper triangle is zero."""
    k_inv, info = sla.lapack.dpotri(chol, lower=1)
    if info != 0:
        raise sla.LinAlgError("dpotri failed")
    return k_inv


def _sym_inner(lower: np.ndarray, full: np.ndarray) -> float:
    """sum(S * D) for symmetric S given by its lower triangle ``lower`` and symmetric ``full`` D."""
    return 2.0 * float(np.sum(lower * full)) - float(np.dot(np.diag(lower), np.diag(full)))


def profiled_log_marginal_likelihood(
    kernel: str,
    r: np.ndarray,
    y: np.ndarray,
    theta: np.ndarray,
    variance_bounds: tuple[float, float],
    with_gradient: bool = True,
) -> tuple[float, np.ndarray, float]:
    """Log marginal likelihood with the kernel variance profiled out; ``theta = (log l, log g)``.

    Writing ``K_y = sigma_f^2 (R + g I)`` (``g = sigma_n^2 / sigma_f^2``), the maximising
    ``sigma_f^2 = y^T (R + g I)^{-1} y / n`` is closed-form; it is clamped to ``variance_bounds`` (the likelihood
    is unimodal in sigma_f^2, so the clamp is the constrained maximiser). By the envelope theorem the gradient in
    (log l, log g) is the partial gradient of eq. 5.9 at that sigma_f^2. Returns (lml, gradient, sigma_f^2).
    Maximising this over two parameters gives the same optimum as the likelihood over three (eq. 5.8, the one
    :class:`ExactGP` reports), in fewer L-BFGS-B iterations.
    """
    ell, g = float(np.exp(theta[0])), float(np.exp(theta[1]))
    n = y.shape[0]
    rk, dr = value_and_dlog_lengthscale(kernel, r, 1.0, ell)
    rk[np.diag_indices(n)] += g
    chol = _chol(rk)
    beta = sla.cho_solve((chol, True), y, check_finite=False)
    quad = float(y @ beta)
    sf2 = float(np.clip(quad / n, *variance_bounds))
    logdet = 2.0 * float(np.sum(np.log(np.diag(chol))))
    lml = -0.5 * quad / sf2 - 0.5 * logdet - 0.5 * n * math.log(sf2) - 0.5 * n * LOG_2PI
    if not with_gradient:
        return lml, np.zeros(2), sf2
    r_inv = _kinv_lower(chol)
    tr_inv = float(np.sum(np.diag(r_inv)))
    grad = np.array(
        [
            0.5 * (float(beta @ (dr @ beta)) / sf2 - _sym_inner(r_inv, dr)),
            0.5 * g * (float(beta @ beta) / sf2 - tr_inv),
        ]
    )
    return lml, grad, sf2


def _lbfgsb(
    objective: Callable[[np.ndarray], tuple[float, np.ndarray]],
    theta0: np.ndarray,
    log_bounds: list[tuple[float, float]],
    max_iter: int,
) -> OptimizeResult:
    """Minimise ``objective`` (value and analytic gradient) over log hyper-parameters within ``log_bounds`` by
    L-BFGS-B, as both GP engines fit theirs (the exact GP's marginal likelihood, the sparse GP's bound)."""
    return minimize(
        objective,
        theta0,
        jac=True,
        method="L-BFGS-B",
        bounds=log_bounds,
        options={"maxiter": max_iter, "ftol": 1e-9},
    )


class _OriginalUnits:
    """``predict`` in the original units of ``y``, shared by both GP engines (they fit on standardised values)."""

    kernel: str
    value_mean_: float
    value_sd_: float
    hyperparameters_: Hyperparameters

    def _standardise(self, y: np.ndarray) -> np.ndarray:
        """``y`` in standardised units (its mean and sd, 1 for constant values, kept for :meth:`predict`)."""
        sd = float(np.std(y))
        self.value_mean_, self.value_sd_ = float(np.mean(y)), sd if sd > 0 else 1.0
        return (y - self.value_mean_) / self.value_sd_

    def _posterior(self, xs: np.ndarray, hp: Hyperparameters) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and (unclipped) latent variance at the points ``xs``, in standardised units."""
        raise NotImplementedError

    def predict_standardised(self, x_new: np.ndarray, chunk: int = 1024) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and latent variance in standardised units (eqs. (4) and (5)), ``chunk`` points at a
        time; the variance clipped to [0, sigma_f^2] against rounding."""
        hp = self.hyperparameters_
        x_new = np.asarray(x_new, dtype=float)
        mean = np.empty(len(x_new))
        var = np.empty(len(x_new))
        for s in range(0, len(x_new), chunk):
            mean[s : s + chunk], var[s : s + chunk] = self._posterior(x_new[s : s + chunk], hp)
        return mean, np.clip(var, 0.0, hp.variance)

    def predict(self, x_new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and latent variance sigma_p^2 in the original units of ``y``."""
        m, v = self.predict_standardised(x_new)
        return m * self.value_sd_ + self.value_mean_, v * self.value_sd_**2


@dataclass
class ExactGP(_OriginalUnits):
    """Exact GP regression with hyper-parameters optimised on standardised values (paper section V).

    L-BFGS-B starts from the best of ``n_initial`` log-spaced initial length-scales between 5% and 100% of the
    input extent (deterministic: no randomness, so results are reproducible). ``hyperparameters`` fixes them and
    skips the optimisation.
    """

    kernel: str = "matern32"
    n_initial: int = 5
    bounds: Bounds = field(default_factory=Bounds)
    hyperparameters: Hyperparameters | None = None
    max_iter: int = 200

    def fit(self, x: np.ndarray, y: np.ndarray) -> ExactGP:
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        if x.ndim != 2 or x.shape[0] != y.shape[0] or y.shape[0] < 2:
            raise ValueError("need at least 2 readings with 2-D inputs")
        ys = self._standardise(y)
        r = distances(x, x)
        hp = self.hyperparameters if self.hyperparameters is not None else self._optimise(r, ys)
        k_y = kernel_value(self.kernel, r, hp.variance, hp.lengthscale)
        k_y[np.diag_indices(len(ys))] += hp.noise
        self.chol_ = _chol(k_y)
        self.alpha_ = sla.cho_solve((self.chol_, True), ys, check_finite=False)
        # Rasmussen & Williams (2006) eq. 5.8: -1/2 y^T K_y^{-1} y - 1/2 log|K_y| - n/2 log 2 pi
        logdet_half = float(np.sum(np.log(np.diag(self.chol_))))
        self.log_marginal_likelihood_ = -0.5 * float(ys @ self.alpha_) - logdet_half - 0.5 * len(ys) * LOG_2PI
        self.hyperparameters_, self.x_train_ = hp, x
        return self

    def _optimise(self, r: np.ndarray, ys: np.ndarray) -> Hyperparameters:
        extent = float(np.max(r)) if r.size else 1.0
        extent = extent if extent > 0 else 1.0
        log_bounds = self.bounds.as_log()
        lo = [b[0] for b in log_bounds]
        hi = [b[1] for b in log_bounds]
        vb = self.bounds.variance

        def profiled(theta: np.ndarray, grad: bool) -> tuple[float, np.ndarray, float]:
            return profiled_log_marginal_likelihood(self.kernel, r, ys, theta, vb, with_gradient=grad)

        starts = []
        for ell in np.geomspace(0.05 * extent, extent, self.n_initial):
            theta = np.clip(np.log([ell, 0.1]), lo, hi)
            try:
                lml, _, _ = profiled(theta, False)
            except sla.LinAlgError:
                continue
            starts.append((lml, theta))
        if not starts:
            raise sla.LinAlgError("no initial hyper-parameters gave a positive definite covariance")
        best_lml, best_theta = max(starts, key=lambda s: s[0])

        def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
            try:
                lml, grad, _ = profiled(theta, True)
            except sla.LinAlgError:
                return 1e25, np.zeros(2)
            return -lml, -grad

        res = _lbfgsb(objective, best_theta, log_bounds, self.max_iter)
        if np.isfinite(res.fun) and -res.fun > best_lml:
            best_theta = np.asarray(res.x)
        _, _, sf2 = profiled(best_theta, False)
        ell, g = np.exp(best_theta)
        return Hyperparameters(sf2, float(ell), float(g) * sf2)

    def _posterior(self, xs: np.ndarray, hp: Hyperparameters) -> tuple[np.ndarray, np.ndarray]:
        """Eqs. (4) and (5): ``k*^T alpha`` and ``sigma_f^2 - v^T v`` with ``v = L^-1 k*``."""
        ks = kernel_value(self.kernel, distances(xs, self.x_train_), hp.variance, hp.lengthscale)
        v = sla.solve_triangular(self.chol_, ks.T, lower=True, check_finite=False)
        return ks @ self.alpha_, hp.variance - np.einsum("ij,ij->j", v, v)


def choose_inducing_points(x: np.ndarray, m: int, seed: int = 0) -> np.ndarray:
    """``m`` inducing locations by k-means (scipy ``kmeans2``, k-means++ start) over the readings."""
    from scipy.cluster.vq import kmeans2  # sparse GP only; scipy.cluster pulls in scipy.spatial (slow import)

    x = np.asarray(x, dtype=float)
    unique = np.unique(x, axis=0)
    if len(unique) <= m:
        return unique
    rng = np.random.default_rng(seed)
    sample = x if len(x) <= 20 * m else x[rng.choice(len(x), 20 * m, replace=False)]
    centroids, _ = kmeans2(sample, m, minit="++", seed=rng, iter=10)
    return np.unique(centroids, axis=0)


def sgpr_bound(
    kernel: str,
    r_uf: np.ndarray,
    r_uu: np.ndarray,
    y: np.ndarray,
    theta: np.ndarray,
    with_gradient: bool = True,
) -> tuple[float, np.ndarray]:
    """Titsias (2009) collapsed bound (eq. 9) and its analytic gradient in (log sigma_f^2, log l, log sigma_n^2).

    ``F = log N(y | 0, Q + s^2 I) - tr(K_ff - Q) / (2 s^2)``, ``Q = K_fu K_uu^{-1} K_uf``. With ``Lambda = Q + s^2 I``,
    ``alpha = Lambda^{-1} y`` and ``H = (alpha alpha^T - Lambda^{-1}) / 2 + I / (2 s^2)``, the adjoints are
    ``dF/dK_uf = 2 P H``, ``dF/dK_uu = -P H P^T`` (``P = K_uu^{-1} K_uf``), ``dF/dk_ii = -1/(2 s^2)`` and
    ``dF/ds^2 = tr(G) + (tr K_ff - tr Q) / (2 s^4)``; in the whitened form ``A = L^{-1} K_uf / s``,
    ``B = I + A A^T`` these need only M x N products (Woodbury: ``Lambda^{-1} = (I - A^T B^{-1} A) / s^2``).
    ``r_uf`` (M x N) and ``r_uu`` are distance matrices; the jitter on K_uu is ``1e-6 sigma_f^2``.
    """
    sf2, ell, s2 = (float(v) for v in np.exp(theta))
    m, n = r_uf.shape
    kuu, dkuu = value_and_dlog_lengthscale(kernel, r_uu, sf2, ell)
    kuu[np.diag_indices(m)] += 1e-6 * sf2
    kuf, dkuf = value_and_dlog_lengthscale(kernel, r_uf, sf2, ell)
    chol = _chol(kuu)
    sigma = math.sqrt(s2)
    a = sla.solve_triangular(chol, kuf, lower=True, check_finite=False)
    a /= sigma
    aat = a @ a.T
    b = aat + np.eye(m)
    chol_b = _chol(b)
    ay = a @ y
    c = sla.solve_triangular(chol_b, ay, lower=True, check_finite=False) / sigma
    tr_aat = float(np.trace(aat))
    bound = (
        -0.5 * n * LOG_2PI
        - float(np.sum(np.log(np.diag(chol_b))))
        - 0.5 * n * math.log(s2)
        - 0.5 * float(y @ y) / s2
        + 0.5 * float(c @ c)
        - 0.5 * n * sf2 / s2
        + 0.5 * tr_aat
    )
    if not with_gradient:
        return bound, np.zeros(3)
    b_inv = sla.cho_solve((chol_b, True), np.eye(m), check_finite=False)
    b_inv_a = sla.cho_solve((chol_b, True), a, check_finite=False)
    alpha = (y - a.T @ (b_inv @ ay)) / s2
    a_alpha = a @ alpha
    inner = np.outer(0.5 * a_alpha, alpha)
    inner += (a - b_inv_a) * (0.5 / s2)
    ph = sla.solve_triangular(chol, inner, lower=True, trans="T", check_finite=False)
    ph *= sigma  # P H = s L^{-T} [(A alpha) alpha^T / 2 + (A - B^{-1} A) / (2 s^2)]
    inner_uu = 0.5 * np.outer(a_alpha, a_alpha) + (b - 2.0 * np.eye(m) + b_inv) * (0.5 / s2)
    w = sla.solve_triangular(chol, inner_uu, lower=True, trans="T", check_finite=False)
    php = s2 * sla.solve_triangular(chol, w.T, lower=True, trans="T", check_finite=False).T
    tr_g = 0.5 * (float(alpha @ alpha) - (n - m + float(np.trace(b_inv))) / s2)
    d_s2 = tr_g + (n * sf2 - s2 * tr_aat) / (2.0 * s2 * s2)
    grad = np.array(
        [
            2.0 * float(np.sum(ph * kuf)) - float(np.sum(php * kuu)) - 0.5 * n * sf2 / s2,
            2.0 * float(np.sum(ph * dkuf)) - float(np.sum(php * dkuu)),
            d_s2 * s2,
        ]
    )
    return bound, grad


@dataclass
class SparseGP(_OriginalUnits):
    """Titsias (2009) variational sparse GP regression (SGPR) with k-means inducing points.

    Hyper-parameters: an :class:`ExactGP` fitted on ``subsample`` random readings (``seed``) gives the start;
    then L-BFGS-B maximises the collapsed bound (:func:`sgpr_bound`, analytic gradient) over *all* readings with
    ``opt_inducing`` k-means inducing points for at most ``opt_iter`` iterations (fewer inducing points than the
    final ``n_inducing`` keep each bound evaluation O(N M^2) cheap). With them fixed, q(u) is the optimal
    variational distribution of Titsias (2009) eq. (10) and prediction is
    ``mu = K_*m L^-T LB^-T c`` with variance ``k_** - |L^-1 k_m*|^2 + |LB^-1 L^-1 k_m*|^2``.
    """

    kernel: str = "matern32"
    n_inducing: int = 500
    subsample: int = 1000
    bounds: Bounds = field(default_factory=Bounds)
    hyperparameters: Hyperparameters | None = None
    seed: int = 0
    opt_inducing: int = 200
    opt_iter: int = 30

    def fit(self, x: np.ndarray, y: np.ndarray) -> SparseGP:
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        rng = np.random.default_rng(self.seed)
        ys = self._standardise(y)
        if self.hyperparameters is None:
            idx = rng.choice(len(x), min(self.subsample, len(x)), replace=False)
            exact = ExactGP(kernel=self.kernel, bounds=self.bounds).fit(x[idx], y[idx])
            # the subsample was standardised with its own mean/sd; rescale variances to the full-data sd
            hp = exact.hyperparameters_.rescaled((exact.value_sd_ / self.value_sd_) ** 2)
            start = replace(hp, variance=float(np.clip(hp.variance, *self.bounds.variance)))
            self.hyperparameters_ = self._optimise_bound(x, ys, start)
        else:
            self.hyperparameters_ = self.hyperparameters
        hp = self.hyperparameters_
        z = choose_inducing_points(x, self.n_inducing, self.seed)
        sigma = math.sqrt(hp.noise)
        kmm = kernel_value(self.kernel, distances(z, z), hp.variance, hp.lengthscale)
        kmm[np.diag_indices(len(z))] += 1e-8 * hp.variance
        self.chol_mm_ = _chol(kmm)
        a = np.empty((len(z), len(x)))
        for s in range(0, len(x), 8192):
            kmn = kernel_value(self.kernel, distances(z, x[s : s + 8192]), hp.variance, hp.lengthscale)
            a[:, s : s + 8192] = (
                sla.solve_triangular(self.chol_mm_, kmn, lower=True, check_finite=False) / sigma
            )
        b = a @ a.T
        b[np.diag_indices(len(z))] += 1.0
        self.chol_b_ = _chol(b)
        self.c_ = sla.solve_triangular(self.chol_b_, a @ ys, lower=True, check_finite=False) / sigma
        n = len(x)
        # Titsias (2009) eq. (9): log N(y | 0, Q + s^2 I) - tr(K - Q) / (2 s^2)
        self.elbo_ = float(
            -0.5 * n * LOG_2PI
            - np.sum(np.log(np.diag(self.chol_b_)))
            - 0.5 * n * math.log(hp.noise)
            - 0.5 * float(ys @ ys) / hp.noise
            + 0.5 * float(self.c_ @ self.c_)
            - 0.5 * (n * hp.variance - hp.noise * float(np.sum(a * a))) / hp.noise
        )
        self.inducing_points_ = z
        return self

    def _optimise_bound(self, x: np.ndarray, ys: np.ndarray, start: Hyperparameters) -> Hyperparameters:
        """Maximise the collapsed bound over all readings (``opt_inducing`` k-means points, ``opt_iter`` steps)."""
        z = choose_inducing_points(x, min(self.opt_inducing, self.n_inducing), self.seed)
        r_uf = distances(z, x)
        r_uu = distances(z, z)
        vb, lb, gb = self.bounds.variance, self.bounds.lengthscale, self.bounds.noise_ratio
        log_bounds = [
            (math.log(vb[0]), math.log(vb[1])),
            (math.log(lb[0]), math.log(lb[1])),
            (math.log(gb[0] * vb[0]), math.log(gb[1] * vb[1])),
        ]
        theta0 = np.clip(start.as_log(), [b[0] for b in log_bounds], [b[1] for b in log_bounds])

        def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
            try:
                f, g = sgpr_bound(self.kernel, r_uf, r_uu, ys, theta)
            except sla.LinAlgError:
                return 1e25, np.zeros(3)
            return -f, -g

        f0, _ = objective(theta0)
        res = _lbfgsb(objective, theta0, log_bounds, self.opt_iter)
        self.bound_start_, self.bound_optimised_ = -f0, -float(res.fun)
        return Hyperparameters.from_log(res.x) if res.fun <= f0 else start

    def _posterior(self, xs: np.ndarray, hp: Hyperparameters) -> tuple[np.ndarray, np.ndarray]:
        """The SGPR predictive mean and latent variance through the inducing points' Cholesky factors."""
        kms = kernel_value(self.kernel, distances(self.inducing_points_, xs), hp.variance, hp.lengthscale)
        t1 = sla.solve_triangular(self.chol_mm_, kms, lower=True, check_finite=False)
        t2 = sla.solve_triangular(self.chol_b_, t1, lower=True, check_finite=False)
        return t2.T @ self.c_, hp.variance - np.einsum("ij,ij->j", t1, t1) + np.einsum("ij,ij->j", t2, t2)


def blas_threads_limit(default: int = 1):
    """Context manager limiting BLAS threads (env ``URBANDP_BLAS_THREADS``, default 1; 0 = library default).

    Measured on the shared 2-core machine (docs/sensing.md): fitting 1,400 readings took 3.1 s with one BLAS
    thread and 11.7 s with OpenBLAS's default two under load from other processes (spinning worker threads).
    Uses threadpoolctl when installed (it comes with scikit-learn); otherwise does nothing.
    """
    import contextlib
    import os

    n = int(os.environ.get("URBANDP_BLAS_THREADS", default))
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas") if n > 0 else contextlib.nullcontext()


def method_name(model: ExactGP | SparseGP) -> str:
    if isinstance(model, SparseGP):
        return f"sgpr(m={len(model.inducing_points_)})"
    return "exact"
