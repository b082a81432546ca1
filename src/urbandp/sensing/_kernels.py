"""Stationary isotropic kernels used by the fleet-sensing GP (paper section V; Rasmussen & Williams 2006, eq. 4.17).

Each kernel is a function of the distance ``r`` with a variance ``sigma_f^2`` and a length-scale ``l``:

* ``rbf``:       k(r) = sigma_f^2 exp(-r^2 / (2 l^2))
* ``matern32``:  k(r) = sigma_f^2 (1 + a) exp(-a),            a = sqrt(3) r / l   (the paper's choice, VI-A)
* ``matern52``:  k(r) = sigma_f^2 (1 + a + a^2 / 3) exp(-a),  a = sqrt(5) r / l

``value_and_dlog_lengthscale`` returns k and dk/d(log l); dk/d(log sigma_f^2) is k itself. These two
derivatives are all the analytic gradient of the log marginal likelihood needs (:mod:`urbandp.sensing._gp`).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

KERNELS = ("matern32", "matern52", "rbf")


def distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distances between the rows of ``a`` (n x 2) and ``b`` (m x 2)."""
    return cdist(np.asarray(a, dtype=float), np.asarray(b, dtype=float))


def kernel_value(name: str, r: np.ndarray, variance: float, lengthscale: float) -> np.ndarray:
    """k(r) for the named kernel (see the module docstring)."""
    if name == "rbf":
        return variance * np.exp(-0.5 * (r / lengthscale) ** 2)
    if name == "matern32":
        a = np.sqrt(3.0) * r / lengthscale
        return variance * (1.0 + a) * np.exp(-a)
    if name == "matern52":
        a = np.sqrt(5.0) * r / lengthscale
        return variance * (1.0 + a + a * a / 3.0) * np.exp(-a)
    raise ValueError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)}")


def value_and_dlog_lengthscale(
    name: str, r: np.ndarray, variance: float, lengthscale: float
) -> tuple[np.ndarray, np.ndarray]:
    """k(r) and its derivative with respect to log(lengthscale) (in-place arithmetic: this is the hot loop)."""
    if name == "rbf":
        s = r * (1.0 / lengthscale)
        s *= s
        k = np.multiply(s, -0.5)
        np.exp(k, out=k)
        k *= variance
        s *= k
        return k, s
    if name in ("matern32", "matern52"):
        c = np.sqrt(3.0) if name == "matern32" else np.sqrt(5.0)
        a = r * (c / lengthscale)
        e = np.negative(a)
        np.exp(e, out=e)
        e *= variance
        if name == "matern32":
            k = a + 1.0
            k *= e
            a *= a
            a *= e  # dk/dlog l = sigma_f^2 a^2 exp(-a)
            return k, a
        a2 = a * a
        k = a + 1.0
        k += a2 * (1.0 / 3.0)
        k *= e
        a += 1.0
        a *= a2
        a *= e
        a *= 1.0 / 3.0  # dk/dlog l = sigma_f^2 (a^2 / 3)(1 + a) exp(-a)
        return k, a
    raise ValueError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)}")
