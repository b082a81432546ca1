"""A seeded numpy noise source for tests of a statistical property of a mechanism: NOT private.

OpenDP's samplers take no seed, so a test that asserts a statistic (a coverage, an sd, a mean within k standard
errors) over OpenDP draws fails by chance now and then. Where the property is one of the mechanism or its
post-processing given the noise law (and not of the sampler, whose scale is tested on OpenDP's own draws), the
test draws from :class:`SeededNoise` instead: the same laws at the same scales as
:class:`urbandp._privacy.noise.OpenDPNoise`, from a seeded generator, so the outcome is the same on every run.

The laws, as OpenDP defines its scale parameters: Laplace with scale b (density exp(-|x|/b) / 2b); discrete
Laplace with pmf proportional to exp(-|k|/b); Gaussian with sd sigma; discrete Gaussian with pmf proportional to
exp(-k^2 / 2 sigma^2) (Canonne, Kamath and Steinke 2020).
"""

from __future__ import annotations

import math

import numpy as np

from urbandp._privacy.noise import ExactNoiseForTesting


class SeededNoise(ExactNoiseForTesting):
    """numpy noise from ``np.random.default_rng(seed)``: NOT private (``is_private`` False, labelled NOT DP)."""

    def __init__(self, seed: int) -> None:
        super().__init__(acknowledge_not_private=True)
        self.rng = np.random.default_rng(seed)

    def _scales(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.asarray(scale, dtype=float), np.shape(values))

    def laplace(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        v = np.asarray(values, dtype=float)
        return v + self.rng.laplace(0.0, 1.0, v.shape) * self._scales(v, scale)

    def gaussian(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        v = np.asarray(values, dtype=float)
        return v + self.rng.normal(0.0, 1.0, v.shape) * self._scales(v, scale)

    def discrete_laplace(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        """Two-sided geometric: the difference of two geometric counts of failures with ratio a = exp(-1/b)."""
        v = np.asarray(values, dtype=np.int64)
        s = self._scales(v, scale)
        out = v.copy()
        positive = s > 0
        a = np.exp(-1.0 / s[positive])
        n = int(positive.sum())
        out[positive] += self.rng.geometric(1 - a, n) - self.rng.geometric(1 - a, n)
        return out

    def discrete_gaussian(self, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
        """Drawn from the pmf over the integers within 40 sigma (the mass beyond is below 1e-300)."""
        v = np.asarray(values, dtype=np.int64)
        s = self._scales(v, scale)
        out = v.copy()
        for sigma in np.unique(s):
            if sigma <= 0:
                continue
            half = math.ceil(40 * sigma) + 1
            support = np.arange(-half, half + 1)
            pmf = np.exp(-(support.astype(float) ** 2) / (2 * sigma**2))
            mask = s == sigma
            out[mask] += self.rng.choice(support, int(mask.sum()), p=pmf / pmf.sum())
        return out
