"""Upper tails of OpenDP's integer noise laws, exactly: probabilities (rigorous intervals) and conditioned draws.

The laws are those of OpenDP's ``make_laplace`` / ``make_gaussian`` on integers (the scale is the float given,
read as an exact rational):

* discrete Laplace of scale ``b``: ``P(X = k) = (1 - a) / (1 + a) a^|k|`` with ``a = exp(-1/b)``
  (Canonne, Kamath, Steinke 2020, Definition 28). For ``t >= 1``: ``P(X >= t) = a^t / (1 + a)``, and
  ``X | X >= t`` is ``t + Y`` with ``P(Y >= y) = a^y`` (memorylessness), i.e. ``Y = floor(ln U / (-1/b))``.
* discrete Gaussian of scale ``sigma``: ``P(X = k) = exp(-k^2 / 2 sigma^2) / S`` with ``S`` the sum over all
  integers (Canonne, Kamath, Steinke 2020, Definition 1). The tail is summed term by term in interval
  arithmetic, with the rest bounded by a geometric series (``k^2 >= K^2 + 2K(k - K)``).
  ``X | X >= t`` is drawn by rejection from ``t + J`` with ``P(J = j) ~ exp(-lambda j)``,
  ``lambda = (t + c) / sigma^2``: the target-to-proposal ratio is ``exp(-(j - c)^2 / 2 sigma^2)`` up to a constant,
  at most 1, so a proposal is kept with exactly that probability (the same device as CKS 2020, Algorithm 3).
  ``c = max(0, ceil(sigma - t))`` keeps the acceptance rate near 1/2 or better.

All random choices go through :mod:`urbandp.counts._exact_sampling` (CSPRNG bits, exact decisions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
from mpmath import iv, libmp

from urbandp.counts._exact_sampling import IntervalAt, bernoulli_exp_neg, floor_log_uniform, iv_precision

MECHANISMS = ("discrete_laplace", "discrete_gaussian")


@lru_cache(maxsize=256)
def _laplace_tail(scale: float, t: int, prec: int) -> Any:
    with iv_precision(prec + 32):
        a = iv.exp(-1 / iv.mpf(scale))
        return a**t / (1 + a)


@lru_cache(maxsize=256)
def _gaussian_tail(scale: float, t: int, prec: int) -> Any:
    """``P(X >= t)`` for the discrete Gaussian, as an interval (term-by-term sums plus rigorous rest bounds)."""
    with iv_precision(prec + 32):
        two_s2 = 2 * iv.mpf(scale) ** 2
        s2 = iv.mpf(scale) ** 2

        def weight(k: int) -> Any:
            return iv.exp(-(iv.mpf(k) ** 2) / two_s2)

        def sum_from(start: int) -> Any:
            """``sum_{k >= start} exp(-k^2 / 2 s^2)`` for ``start >= 1``, as an interval."""
            total = iv.mpf(0)
            k = start
            while True:
                w = weight(k)
                total += w
                k += 1
                # rest bound for k >= K: exp(-K^2/2s^2) / (1 - exp(-K/s^2)); stop when it is negligible
                if k > start + 8 and w.b < total.a * iv.ldexp(iv.mpf(1), -(prec + 16)).a:
                    rest = weight(k) / (1 - iv.exp(-iv.mpf(k) / s2))
                    return total + iv.mpf([0, rest.b])

        positive = sum_from(1)
        return (positive if t == 1 else sum_from(t)) / (1 + 2 * positive)


@dataclass(frozen=True)
class IntegerNoise:
    """An OpenDP integer noise law: ``mechanism`` in :data:`MECHANISMS`, ``scale`` (b or sigma) > 0."""

    mechanism: str
    scale: float

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"mechanism must be one of {MECHANISMS}, got {self.mechanism!r}")
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"noise scale must be finite and > 0, got {self.scale}")

    def tail(self, t: int, prec: int = 128) -> Any:
        """``P(X >= t)`` for ``t >= 1`` (the thresholds that publish few zero cells) as an ``mpmath.iv`` interval
        at ``prec`` bits (width about 2^-prec relative)."""
        if t < 1:
            raise ValueError(f"tail needs t >= 1, got {t}")
        if self.mechanism == "discrete_laplace":
            return _laplace_tail(float(self.scale), int(t), int(prec))
        return _gaussian_tail(float(self.scale), int(t), int(prec))

    def tail_float(self, t: int) -> float:
        return float(self.tail(t).mid)

    def log_not_tail(self, t: int) -> IntervalAt:
        """``L(prec) = ln(1 - P(X >= t))`` as an exact interval function (the geometric skip rate)."""

        def at(prec: int) -> Any:
            p = self.tail(t, prec)
            with iv_precision(prec + 32):
                if p.b < iv.ldexp(iv.mpf(1), -(prec // 2)).a:
                    # -p - p^2 / (2 (1 - p)) <= ln(1 - p) <= -p - p^2 / 2   (series of ln(1 - p), 0 < p < 1)
                    lo = -p.b - p.b**2 / (2 * (1 - p.b))
                    hi = -p.a - p.a**2 / 2
                    return iv.mpf([lo.a, hi.b])
                return iv.log(1 - p)

        return at

    def sample_tail(self, t: int, n: int) -> np.ndarray:
        """``n`` iid draws of ``X`` conditioned on ``X >= t`` (``t >= 1``), exactly."""
        if n <= 0:
            return np.zeros(0, dtype=np.int64)
        if t < 1:
            raise ValueError("sample_tail needs t >= 1")
        cap = 2**62  # a draw this large has probability below 2^-(2^62 / scale): never reached in practice
        if self.mechanism == "discrete_laplace":
            b = float(self.scale)
            return t + floor_log_uniform(n, lambda prec: -1 / iv.mpf(b), cap)
        return self._gaussian_tail_draws(int(t), int(n))

    def _gaussian_tail_draws(self, t: int, n: int) -> np.ndarray:
        sigma = Fraction(float(self.scale))
        s2 = sigma * sigma
        c = max(0, math.ceil(float(sigma) - t))
        while Fraction(c) < sigma - t:  # ceil in exact arithmetic (the float guess can be off by one)
            c += 1
        lam = Fraction(t + c) / s2
        rate = (lam.numerator, lam.denominator)

        def neg_lambda(prec: int) -> Any:
            return -iv.mpf(rate[0]) / iv.mpf(rate[1])

        out: list[np.ndarray] = []
        need = n
        while need > 0:
            batch = min(1 << 22, max(16, int(need * 2.5)))
            j = floor_log_uniform(batch, neg_lambda, cap=2**62)
            gamma_f = (j.astype(np.float64) - c) ** 2 / (2.0 * float(s2))

            def gamma_exact(i: int, jj: np.ndarray = j) -> IntervalAt:
                d = int(jj[i]) - c
                num, den = (d * d) * s2.denominator, 2 * s2.numerator
                return lambda prec: iv.mpf(num) / iv.mpf(den)

            keep = bernoulli_exp_neg(gamma_f, gamma_exact)
            got = t + j[keep]
            out.append(got[:need])
            need -= min(need, got.size)
        return np.concatenate(out)


def interval_bounds(x: Any) -> tuple[Fraction, Fraction]:
    """The exact end points of an ``mpmath.iv`` interval as Fractions."""
    lo, hi = x._mpi_
    return Fraction(*libmp.to_rational(lo)), Fraction(*libmp.to_rational(hi))


def tail_brute_force(mechanism: str, scale: float, t: int, digits: int = 60) -> Fraction:
    """Reference for tests: ``P(X >= t)`` by direct summation of the pmf (mpmath, ``digits`` decimal digits).

    Sums ``k`` from ``-K`` to ``K`` with ``K`` far in the tail; the truncation error is far below ``10^-digits``.
    Returned as a Fraction of the mpmath value.
    """
    import mpmath

    with mpmath.workdps(digits + 20):
        s = mpmath.mpf(scale)
        span = int(abs(t) + (200 if mechanism == "discrete_laplace" else 30) * scale + 50)
        if mechanism == "discrete_laplace":
            a = mpmath.exp(-1 / s)
            w = [a ** abs(k) for k in range(-span, span + 1)]
        else:
            w = [mpmath.exp(-(mpmath.mpf(k) ** 2) / (2 * s * s)) for k in range(-span, span + 1)]
        total = mpmath.fsum(w)
        tail = mpmath.fsum(w[k + span] for k in range(t, span + 1)) if t <= span else mpmath.mpf(0)
        return Fraction(*libmp.to_rational((tail / total)._mpf_))
