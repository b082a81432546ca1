"""Noise sources for releases.

docs/design.md privacy rule 1: every number that leaves the system is perturbed by a floating-point-safe sampler.
:class:`OpenDPNoise` is the only source a release uses by default; it calls OpenDP's measurements
(``make_laplace`` samples continuous Laplace through the discrete Laplace, so it is immune to the
Mironov 2012 least-significant-bit attack on naive floating-point Laplace).

:class:`ExactNoiseForTesting` adds no noise. It exists so that system tests can check the exact answers of a
release (Tumult-style "infinite budget"); it cannot be built without an explicit acknowledgement, the CLI
offers no way to select it, and a release drawn from it is labelled NOT DP (never booked to a budget). Monte Carlo
simulation noise (numpy) lives in :mod:`urbandp._experiments` and is never imported by a release.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, runtime_checkable

import numpy as np

import urbandp._privacy.dp_prelude as dp

dp.enable_features("contrib")


@runtime_checkable
class NoiseSource(Protocol):
    """Adds zero-mean noise of a given scale to every element of an array.

    ``is_private``: the source's declaration that its draws are those of the mechanism the release accounts
    (OpenDP's samplers). Only ``True`` itself counts: any other source makes every release drawn from it NOT DP,
    labelled so in privacy.json and refused with a budget dataset (:func:`urbandp._privacy.guards.noise_reasons`,
    applied by the Session to every charge).
    """

    is_private: bool

    def laplace(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        """Continuous Laplace noise with scale ``b`` (variance ``2 b^2``) added to float values."""
        ...

    def discrete_laplace(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        """Discrete Laplace (two-sided geometric) noise with scale ``b`` added to integer values."""
        ...

    def gaussian(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        """Gaussian noise with standard deviation ``scale`` added to float values."""
        ...

    def discrete_gaussian(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        """Discrete Gaussian noise with scale ``sigma`` added to integer values."""
        ...


def _check_scale(scale: float) -> float:
    scale = float(scale)
    if not np.isfinite(scale) or scale < 0:
        raise ValueError(f"noise scale must be finite and >= 0, got {scale}")
    return scale


def _per_scale(
    values: np.ndarray, scale: float | np.ndarray, one: Callable[[np.ndarray, float], np.ndarray]
) -> np.ndarray:
    """Apply ``one(values_subset, scale)`` for every distinct scale (OpenDP measurements take one scale)."""
    values = np.asarray(values)
    scales = np.broadcast_to(np.asarray(scale, dtype=float), values.shape)
    if values.size == 0:
        return values.copy()
    distinct = np.unique(scales)
    if distinct.size == 1:
        return one(values.ravel(), _check_scale(distinct[0])).reshape(values.shape)
    out = np.empty(
        values.shape,
        dtype=np.result_type(values.dtype, np.float64) if values.dtype.kind == "f" else values.dtype,
    )
    for s in distinct:
        mask = scales == s
        out[mask] = one(values[mask], _check_scale(s))
    return out


THREAD_CHUNK = 100_000
"""Vectors longer than this are drawn in chunks on every core (threads: OpenDP's ctypes calls release the GIL)."""


def on_every_core(v: np.ndarray, draw: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``draw`` applied to ``v`` in one chunk per core, in threads (each chunk is drawn by its own OpenDP call,
    so every element still gets independent noise of the same distribution). Measured: 2 threads take 0.53-0.75x
    the time of one call on the 2-core machine."""
    workers = min(os.cpu_count() or 1, -(-v.size // THREAD_CHUNK))
    if workers <= 1:
        return draw(v)
    parts = np.array_split(v, workers)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return np.concatenate(list(pool.map(draw, parts)))


class OpenDPNoise:
    """Floating-point-safe noise from OpenDP 0.16 measurements (the default and only CLI noise source)."""

    is_private = True

    @staticmethod
    def _draw(values: np.ndarray, scale: float | np.ndarray, *, gaussian: bool, integer: bool) -> np.ndarray:
        """``values`` plus noise of one OpenDP vector measurement per distinct scale (Laplace over L1 or Gaussian
        over L2; float or i64)."""
        atom = dp.atom_domain(T="i64") if integer else dp.atom_domain(T=float, nan=False)
        dtype = np.int64 if integer else float
        metric = (dp.l2_distance if gaussian else dp.l1_distance)(T="i64" if integer else float)
        make = dp.m.make_gaussian if gaussian else dp.m.make_laplace

        def sample(v: np.ndarray, scale: float) -> np.ndarray:
            m = make(dp.vector_domain(atom), metric, scale)
            return on_every_core(v, lambda part: np.asarray(m(part.astype(dtype).tolist()), dtype=dtype))

        return _per_scale(np.asarray(values, dtype=dtype), scale, sample)

    def laplace(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        return self._draw(values, scale, gaussian=False, integer=False)

    def discrete_laplace(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        return self._draw(values, scale, gaussian=False, integer=True)

    def gaussian(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        return self._draw(values, scale, gaussian=True, integer=False)

    def discrete_gaussian(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        return self._draw(values, scale, gaussian=True, integer=True)

    def laplace_on_lattice(self, values: np.ndarray, scale: float, exponent: int) -> np.ndarray:
        """Laplace noise on the lattice ``2^exponent Z``: OpenDP ``make_laplace(..., k=exponent)`` over a sized
        vector (inputs rounded to the lattice, discrete Laplace on it). About 3x faster per draw than the finest
        granularity; the caller accounts the lattice (e.g. :func:`urbandp.sensing._bounded_laplace.lattice_epsilon`).
        """
        v = np.asarray(values, dtype=float).ravel()
        if v.size == 0:
            return v.copy()
        atom = dp.atom_domain(T=float, nan=False)
        scale = _check_scale(scale)

        def draw(part: np.ndarray) -> np.ndarray:
            domain = dp.vector_domain(atom, size=int(part.size))
            m = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale, k=exponent)
            return np.asarray(m(part.tolist()), dtype=float)

        return on_every_core(v, draw).reshape(np.shape(values))


class ExactNoiseForTesting:
    """Adds no noise at all: NOT differentially private. For system tests that check exact answers.

    Construct with ``ExactNoiseForTesting(acknowledge_not_private=True)``; anything else raises. A release drawn
    from it (``urbandp.Session(noise=...)``) is labelled NOT DP in privacy.json, and refused with a budget dataset.
    """

    is_private = False

    def __init__(self, *, acknowledge_not_private: bool = False) -> None:
        if acknowledge_not_private is not True:
            raise ValueError("ExactNoiseForTesting releases true values; pass acknowledge_not_private=True")

    def laplace(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=float).copy()

    def discrete_laplace(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=np.int64).copy()

    def gaussian(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=float).copy()

    def discrete_gaussian(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=np.int64).copy()


@functools.lru_cache(maxsize=1024)
def zcdp_epsilon(rho: float, delta: float) -> float:
    """Epsilon of a rho-zCDP release at ``delta``, from OpenDP's ``make_zCDP_to_approxDP`` privacy profile
    (cached: a pure function of its two floats, asked for the same loss by the plan, the accounting and the report).

    The conversion is applied to a unit-scale Gaussian measurement whose map at ``sqrt(2 rho)`` is ``rho``
    (OpenDP offers the conversion on measurements only); it is tighter than ``rho + 2 sqrt(rho ln(1/delta))``.
    """
    if rho <= 0:
        return 0.0
    if not (0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    m = dp.m.make_gaussian(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), 1.0)
    d_in = float(np.nextafter(np.sqrt(2.0 * rho), np.inf))
    return float(dp.c.make_zCDP_to_approxDP(m).map(d_in).epsilon(float(delta)))


@functools.lru_cache(maxsize=256)
def rho_for_epsilon(epsilon: float, delta: float) -> float:
    """Largest rho whose OpenDP conversion gives at most ``epsilon`` at ``delta``.

    The classic bound ``epsilon = rho + 2 sqrt(rho ln(1/delta))`` (Bun and Steinke 2016, Prop. 1.3) is looser than
    OpenDP's conversion, so its inverse is a safe lower bracket; the root of the increasing map is then found by
    the Illinois variant of regula falsi on OpenDP's map (about ten evaluations instead of ~45 for bisection). The
    result is within a relative 1e-13 of the exact inverse, and always on the safe side (a rho whose map was
    checked to give at most ``epsilon``).
    """
    if epsilon <= 0 or not np.isfinite(epsilon):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon}")
    log_term = float(np.log(1.0 / delta)) if 0 < delta < 1 else 0.0
    lo = (np.sqrt(log_term + epsilon) - np.sqrt(log_term)) ** 2
    f_lo = zcdp_epsilon(lo, delta) - epsilon
    if f_lo > 0:  # cannot happen for OpenDP's conversion; bisect from zero rather than trust it
        lo, f_lo = 0.0, -epsilon
    hi = min(float(epsilon), 2.0 * lo) if lo > 0 else float(epsilon)
    f_hi = zcdp_epsilon(hi, delta) - epsilon
    while f_hi <= 0 and hi < epsilon:
        lo, f_lo = hi, f_hi
        hi = min(float(epsilon), 2.0 * hi)
        f_hi = zcdp_epsilon(hi, delta) - epsilon
    if f_hi <= 0:
        return hi
    side = 0
    for _ in range(200):
        if hi - lo <= 1e-13 * hi:
            break
        mid = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        if not lo < mid < hi:
            mid = (lo + hi) / 2
        f_mid = zcdp_epsilon(mid, delta) - epsilon
        if f_mid <= 0:
            lo, f_lo = mid, f_mid
            if side == -1:
                f_hi /= 2
            side = -1
        else:
            hi, f_hi = mid, f_mid
            if side == 1:
                f_lo /= 2
            side = 1
    return float(lo)
