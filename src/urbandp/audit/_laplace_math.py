"""Distributions an auditor needs: differences and sums of independent Laplace noise terms.

Culnane, Rubinstein and Teague (2017), Appendix D: the difference ``u`` of two iid Laplace(b) variables has density
``(b + |u|) exp(-|u|/b) / (4 b^2)`` on the whole real line. The report derives ``(u + b) exp(-u/b) / (4 b^2)``
for ``u >= 0`` and states the ``u < 0`` case by symmetry, so it is the density of the *signed* difference (it
integrates to 1 over the real line; as a density of ``|u|`` it would need a factor 2). We fit the signed form; a
constant factor does not move the maximum-likelihood estimate anyway.

For released integer counts with discrete Laplace noise (OpenDP's, used by urbandp) the difference of two iid
discrete Laplace(b) variables, with ``a = exp(-1/b)``, has the exact pmf
``P(U = u) = ((1-a)/(1+a))^2 a^|u| (|u| + 1 + 2 a^2 / (1 - a^2))`` (sum of a geometric series; derived here).

Sums of ``n`` Laplace terms (Appendix E, differencing): for equal scales the density is
``f_n(x) = exp(-|x|/b) / ((n-1)! 2^n b) * sum_{j<n} (n-1+j)! / (j! (n-1-j)!) (|x|/b)^(n-1-j) 2^-j``
(``n = 2`` gives Appendix D), integrated term by term with the incomplete gamma function -- exact tails and
quantiles. Unequal scales use a numerical convolution of the densities on a fine grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, optimize, signal, special, stats


# ----------------------------------------------------------------------------- differences of two Laplace terms
def difference_logpdf(u: np.ndarray, b: float) -> np.ndarray:
    """log of ``(b + |u|) exp(-|u|/b) / (4 b^2)`` (continuous Laplace, Appendix D)."""
    au = np.abs(np.asarray(u, dtype=float))
    return np.log(b + au) - au / b - 2.0 * np.log(b) - math.log(4.0)


def discrete_difference_logpmf(u: np.ndarray, b: float) -> np.ndarray:
    """log pmf of the difference of two iid discrete Laplace(b) variables (see module docstring)."""
    au = np.abs(np.rint(np.asarray(u, dtype=float)))
    log_a = -1.0 / b
    a = math.exp(log_a)
    return 2.0 * (math.log1p(-a) - math.log1p(a)) + au * log_a + np.log(au + 1 + 2 * a * a / (1 - a * a))


@dataclass(frozen=True)
class ScaleFit:
    scale: float
    low: float
    high: float
    standard_error: float
    n_pairs: int
    model: str
    alpha: float


def fit_difference_scale(u: np.ndarray, *, model: str = "continuous", alpha: float = 0.05) -> ScaleFit:
    """Maximum-likelihood Laplace scale from paired differences, with a profile-likelihood CI.

    CI: ``{b : 2 (l(b_hat) - l(b)) <= chi2_1(1 - alpha)}`` (Wilks); the standard error is from the observed
    Fisher information (numerical second derivative of the log-likelihood at ``b_hat``).
    """
    u = np.asarray(u, dtype=float)
    u = u[np.isfinite(u)]
    if u.size < 2:
        raise ValueError("need at least two pairs")
    logf = difference_logpdf if model == "continuous" else discrete_difference_logpmf

    def nll(log_b: float) -> float:
        return -float(np.sum(logf(u, math.exp(log_b))))

    spread = max(float(np.mean(np.abs(u))), 1e-3)
    lo_b = 1e-3 if model == "continuous" else 0.05
    res = optimize.minimize_scalar(
        nll, bounds=(math.log(lo_b), math.log(spread * 20 + 1)), method="bounded", options={"xatol": 1e-10}
    )
    b_hat = math.exp(res.x)
    best = nll(res.x)
    cut = stats.chi2.ppf(1 - alpha, 1) / 2.0

    def excess(log_b: float) -> float:
        return nll(log_b) - best - cut

    floor = math.log(lo_b) - (5.0 if model == "continuous" else 0.0)
    low = math.exp(optimize.brentq(excess, floor, res.x)) if excess(floor) > 0 else lo_b
    hi_arg = res.x + 1.0
    while excess(hi_arg) < 0:
        hi_arg += 1.0
    high = math.exp(optimize.brentq(excess, res.x, hi_arg))
    h = 1e-4 * b_hat
    ll = lambda b: float(np.sum(logf(u, b)))  # noqa: E731
    info = -(ll(b_hat + h) - 2 * ll(b_hat) + ll(b_hat - h)) / (h * h)
    se = 1.0 / math.sqrt(info) if info > 0 else float("inf")
    return ScaleFit(b_hat, low, high, se, int(u.size), model, alpha)


# ----------------------------------------------------------------------------- sums of Laplace terms
def _equal_scale_sf(x: float, n: int, b: float) -> float:
    """P(S > x) for S a sum of ``n`` iid Laplace(b), exact (term-by-term integral of f_n).

    Term ``j`` of f_n integrates to ``(n-1+j)! / (j! (n-1)! 2^(n+j)) Q(n-j, x/b)`` (``Q`` the regularized upper
    incomplete gamma function, ``m! Q(m+1, z) = Gamma(m+1, z)``). The factorials overflow a float from about
    85 terms on, so every term is taken in log space (``gammaln``) and the terms are summed by ``logsumexp``;
    all terms are positive, so nothing cancels.
    """
    if x < 0:
        return 1.0 - _equal_scale_sf(-x, n, b)
    z = x / b
    j = np.arange(n, dtype=float)
    with np.errstate(divide="ignore"):  # a tail Q that underflows to 0 is a term of log 0 = -inf
        log_q = np.log(special.gammaincc(n - j, z))
    log_terms = special.gammaln(n + j) - special.gammaln(j + 1) - special.gammaln(n) - (n + j) * math.log(2.0)
    total = special.logsumexp(log_terms + log_q)
    return float(min(1.0, math.exp(total))) if math.isfinite(total) else 0.0


class LaplaceSum:
    """Distribution of ``sum_i L_i`` with independent ``L_i ~ Laplace(0, scales[i])`` (sign-symmetric)."""

    def __init__(self, scales: list[float] | np.ndarray) -> None:
        s = np.asarray(scales, dtype=float)
        if s.size == 0 or np.any(s <= 0):
            raise ValueError("need at least one positive scale")
        self.scales = s
        self.equal = bool(np.allclose(s, s[0], rtol=1e-9, atol=0.0))
        self._grid: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def std(self) -> float:
        return float(math.sqrt(2.0 * np.sum(self.scales**2)))

    def _numeric(self) -> tuple[np.ndarray, np.ndarray]:
        if self._grid is None:
            h = float(self.scales.min()) / 1000.0
            half = 60.0 * float(self.scales.max()) + 12.0 * self.std
            x = np.arange(-half, half + h / 2, h)
            dens = np.exp(-np.abs(x) / self.scales[0]) / (2 * self.scales[0])
            for b in self.scales[1:]:
                dens = signal.fftconvolve(dens, np.exp(-np.abs(x) / b) / (2 * b), mode="same") * h
            cdf = integrate.cumulative_trapezoid(dens, x, initial=0.0)
            sf = np.clip(1.0 - cdf / cdf[-1], 0.0, 1.0)
            self._grid = (x, sf)
        return self._grid

    def sf(self, x: float) -> float:
        """P(S > x)."""
        if self.equal:
            return _equal_scale_sf(float(x), int(self.scales.size), float(self.scales[0]))
        grid, sf = self._numeric()
        return float(np.interp(x, grid, sf))

    def central_halfwidth(self, alpha: float) -> float:
        """Half-width ``a`` with ``P(|S| <= a) = 1 - alpha`` (exact for equal scales): by symmetry, the ``a`` with
        ``P(S > a) = alpha / 2``."""
        if not 0 < alpha < 1:
            raise ValueError("alpha must be in (0, 1)")
        hi = self.std
        while self.sf(hi) > alpha / 2.0:
            hi *= 2.0
        a = float(optimize.brentq(lambda q: self.sf(q) - alpha / 2.0, 0.0, hi, xtol=1e-10))
        if not self.equal:  # numerical grid: widen by one grid step so coverage errs on the safe side
            a += float(self.scales.min()) / 1000.0
        return a


def theorem5_halfwidth(p: float, alpha: float) -> float:
    """Culnane et al. 2017, Theorem 5: ``p log(1/(4 alpha))`` -- NOT a valid confidence interval.

    Its derivation bounds ``P(mean Z >= z + a)`` from *below* by ``P(all Z_i >= z + a)`` and then sets the
    smaller probability to ``alpha/2``; that does not make the larger one ``<= alpha/2``, so the interval is
    too narrow (for three Laplace(1.4) terms at alpha = 0.05 it covers about half the time).
    """
    return p * math.log(1.0 / (4.0 * alpha))
