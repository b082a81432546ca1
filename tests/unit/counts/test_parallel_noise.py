"""Chunked OpenDP noise in worker processes: right distribution, independent chunks."""

from __future__ import annotations

import math

import numpy as np

from urbandp._privacy.noise import OpenDPNoise
from urbandp.counts._parallel_noise import CHUNK, add_noise


def test_parallel_chunks_give_discrete_laplace_noise() -> None:
    """600,000 zeros (3 chunks, 2 workers), scale 2: discrete Laplace variance 2a/(1-a)^2 with a = exp(-1/2).

    Tolerances are 5 standard errors: sd(mean) = sd/sqrt(n); sd(var_hat)/var ~ sqrt((kurtosis - 1)/n) with
    kurtosis ~ 6 for a Laplace-like law.
    """
    n, b = 600_000, 2.0
    assert n > 2 * CHUNK
    out = add_noise(np.zeros(n, dtype=np.int64), b, "discrete_laplace", OpenDPNoise(), workers=2)
    a = math.exp(-1 / b)
    var = 2 * a / (1 - a) ** 2
    assert out.dtype == np.int64 and out.shape == (n,)
    assert abs(out.mean()) <= 5 * math.sqrt(var / n)
    assert abs(out.var() / var - 1) <= 5 * math.sqrt(5 / n)
    assert not np.array_equal(out[:1000], out[CHUNK : CHUNK + 1000])  # chunks do not repeat each other
