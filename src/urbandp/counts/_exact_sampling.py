"""Exact samplers over a cryptographically secure source (the zero cells of a sparse count release).

Randomness comes only from :func:`secrets.token_bytes` (the operating system's CSPRNG). A 64-bit word ``k``
stands for a *real* uniform ``U`` known to lie in the dyadic interval ``[k 2^-64, (k+1) 2^-64)``; more bits of the
same ``U`` are drawn only when they are needed (a "lazy" uniform, as in Knuth and Yao 1976).

Every sampler here is an inversion ``G = F(U)`` of a monotone function (the geometric law by
``floor(ln U / L)``, a Bernoulli(``exp(-gamma)``) coin by ``ln U < -gamma``). An output is returned only once it is
decided for *every* real ``U`` in the current interval, so its law is exactly that of ``F(U)`` for a real uniform
``U``: no floating-point shortcut shifts the distribution (Mironov 2012 is the cautionary tale). The decision is
made in two tiers (stated with their margins in docs/counts.md, section "Sparse sampling"): float64 with a
proven error margin (2^-36 relative, over 2^14 times the float error), and otherwise (about one draw in 10^9, or
on overflow) ``mpmath.iv`` interval arithmetic with outward rounding, drawing 32 more bits of ``U`` and 64 more
bits of precision until the interval decides (each round fails with probability about 2^-32).

The sampled positions of the Bernoulli process (:func:`bernoulli_process`) realise at once the two random
choices of Cormode, Procopiuc, Srivastava and Tran (ICDT 2012, section 4): the number of successes among ``Z``
trials is Binomial(``Z``, ``p``) and, given their number, their positions are a uniform subset.
"""

from __future__ import annotations

import contextlib
import math
import secrets
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from mpmath import iv

#: rigorous interval (``mpmath.iv``) of a quantity at a given working precision in bits
IntervalAt = Callable[[int], Any]

_LN_2_64 = 64.0 * math.log(2.0)
_MARGIN = 2.0**-36
_BASE_PREC = 128
#: draws per vectorised batch (bounds the temporaries to a few hundred MB whatever the threshold)
BATCH = 1 << 22


@contextlib.contextmanager
def iv_precision(bits: int) -> Iterator[None]:
    """Run with ``mpmath.iv`` at ``bits`` of working precision (restored afterwards)."""
    old = iv.prec
    iv.prec = int(bits)
    try:
        yield
    finally:
        iv.prec = old


def uniform_words(n: int) -> np.ndarray:
    """``n >= 0`` independent uniform 64-bit words from the OS CSPRNG (:func:`secrets.token_bytes`)."""
    return np.frombuffer(secrets.token_bytes(8 * int(n)), dtype=np.uint64).copy()


def _dyadic(num: int, bits: int) -> Any:
    """The exact dyadic number ``num * 2^-bits`` as a point interval (exact in mpmath: binary floats)."""
    return iv.ldexp(iv.mpf(num), -bits)


def _floor_resolve(k: int, log_rate: IntervalAt, cap: int) -> int:
    """Exactly decide ``min(cap, floor(ln U / L))`` for the lazy uniform that starts with word ``k``."""
    num, bits, prec = int(k), 64, _BASE_PREC
    while True:
        with iv_precision(prec):
            rate = log_rate(prec)
            x_min = iv.log(_dyadic(num + 1, bits)) / rate  # U < upper end  =>  x > x_min (x decreasing in U)
            # compared as an interval first: with a rate near 0 (a huge --suppress-below) x_min is beyond any
            # float, and floor(x) >= cap iff x >= cap for an integer cap
            if x_min.a >= cap:
                return cap
            low = math.floor(x_min.a)
            if num > 0:
                x_max = iv.log(_dyadic(num, bits)) / rate
                if math.floor(x_max.b) == low:
                    return low
        num = (num << 32) | secrets.randbits(32)
        bits += 32
        prec += 64


def floor_log_uniform(n: int, log_rate: IntervalAt, cap: int) -> np.ndarray:
    """``n`` iid draws of ``min(cap, floor(ln U / L))`` for a constant ``L < 0`` given as an exact interval.

    ``P(G >= g) = P(U <= exp(g L)) = exp(g L)``: ``G`` counts the failures before the first success of
    Bernoulli trials with success probability ``1 - exp(L)`` (the geometric law; with ``L = -1/b`` it is the
    tail of a discrete Laplace of scale ``b``). ``cap`` keeps values finite (callers only need ``min(G, cap)``).
    """
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    if n > BATCH:
        return np.concatenate(
            [floor_log_uniform(min(BATCH, n - s), log_rate, cap) for s in range(0, n, BATCH)]
        )
    with iv_precision(_BASE_PREC):
        rate = log_rate(_BASE_PREC)
        rate_f = float(rate.mid)
    if not rate.b < 0:
        raise ValueError("floor_log_uniform needs L < 0")
    words = uniform_words(n)
    out = np.empty(n, dtype=np.int64)
    decided = np.zeros(n, dtype=bool)
    if math.isfinite(rate_f) and rate_f < 0 and abs(rate_f) > 1e-290:
        kf = words.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ln_lo = np.log(kf) - _LN_2_64  # ln of the interval's lower end (k = 0: -inf, never decided here)
            ln_hi = np.log(kf + 1.0) - _LN_2_64
            x_max = ln_lo / rate_f
            x_min = ln_hi / rate_f
            margin = _MARGIN * ((1.0 + np.abs(ln_lo)) / abs(rate_f) + np.abs(x_max))
            low = np.floor(x_min - margin)
            high = np.floor(x_max + margin)
            beyond = (x_min - margin) >= cap
            same = (low == high) & np.isfinite(low)
        decided = beyond | same
        out[beyond] = cap
        keep = same & ~beyond
        out[keep] = np.minimum(low[keep], cap).astype(np.int64)
    for i in np.flatnonzero(~decided):
        out[i] = _floor_resolve(int(words[i]), log_rate, cap)
    return out


def _bernoulli_resolve(k: int, gamma: IntervalAt) -> bool:
    """Exactly decide ``U < exp(-gamma)`` (i.e. ``ln U < -gamma``) for the lazy uniform starting with ``k``."""
    num, bits, prec = int(k), 64, _BASE_PREC
    while True:
        with iv_precision(prec):
            neg_gamma = -gamma(prec)
            if iv.log(_dyadic(num + 1, bits)).b <= neg_gamma.a:  # whole interval below exp(-gamma)
                return True
            if num > 0 and iv.log(_dyadic(num, bits)).a >= neg_gamma.b:
                return False
        num = (num << 32) | secrets.randbits(32)
        bits += 32
        prec += 64


def bernoulli_exp_neg(gamma_f: np.ndarray, gamma_exact: Callable[[int], IntervalAt]) -> np.ndarray:
    """Coins with ``P(True) = exp(-gamma_i)`` for ``gamma_i >= 0``.

    ``gamma_f`` are float64 values within 2^-50 relative of the exact ``gamma_i``; ``gamma_exact(i)`` returns the
    exact interval function of element ``i`` (used only when the float margin does not decide).
    """
    gamma_f = np.asarray(gamma_f, dtype=np.float64)
    n = gamma_f.size
    words = uniform_words(n)
    kf = words.astype(np.float64)
    with np.errstate(divide="ignore"):
        ln_lo = np.log(kf) - _LN_2_64
        ln_hi = np.log(kf + 1.0) - _LN_2_64
    slack = _MARGIN * (1.0 + np.abs(ln_lo) + gamma_f)
    yes = ln_hi + slack < -gamma_f
    no = ln_lo - slack > -gamma_f
    out = yes.copy()
    for i in np.flatnonzero(~(yes | no)):
        out[i] = _bernoulli_resolve(int(words[i]), gamma_exact(int(i)))
    return out


def bernoulli_process(n_trials: int, log_fail: IntervalAt, expected_successes: float) -> np.ndarray:
    """Sorted positions (0-based) of the successes among ``n_trials`` iid Bernoulli trials.

    The failure probability is ``exp(L)`` with ``L = log_fail(prec)`` exact. Gaps between successes are
    geometric (:func:`floor_log_uniform`), drawn in batches sized from ``expected_successes`` (a public number:
    ``n_trials * p``); the batch size affects speed only, never the law.
    """
    if n_trials <= 0:
        return np.zeros(0, dtype=np.int64)
    positions: list[np.ndarray] = []
    start = 0  # index of the next trial
    while start < n_trials:
        batch = min(BATCH, int(expected_successes + 6.0 * math.sqrt(expected_successes) + 16))
        gaps = floor_log_uniform(batch, log_fail, cap=n_trials)
        pos = start + np.cumsum(gaps + 1) - 1  # each success sits after its gap of failures
        inside = pos < n_trials
        positions.append(pos[inside])
        if not inside.all():
            break
        start = int(pos[-1]) + 1
    return np.concatenate(positions) if positions else np.zeros(0, dtype=np.int64)
