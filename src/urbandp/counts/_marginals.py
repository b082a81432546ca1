"""Marginal tables derived from the (noisy) joint table, and the optional consistent non-negative fit.

Culnane, Rubinstein and Teague (2017), section 4 and the summary: the Opal time-only and location-only tables were
derived from raw data separately from the time-and-location table, so differences recovered suppressed cells.
Here marginals are sums of the *noisy* joint table (post-processing: no extra privacy cost, and every marginal
is consistent with the joint by construction).

Consistent non-negative least squares (post-processing; docs/counts.md, "Privacy accounting"): per (day, tap,
place) the exact sort-based projection onto ``{x >= 0, sum(x) = max(0, sum(y))}`` (Held, Wolfe, Crowder 1974;
Duchi et al. 2008, Fig. 1), from which all marginals are derived.
"""

from __future__ import annotations

import numpy as np

from urbandp.counts._domain import CountDomain


def time_marginal(joint: np.ndarray, domain: CountDomain) -> np.ndarray:
    """Time-only table ``(day, tap, bin, mode)``: sum of the joint over the places of each mode."""
    d, t, b, p = joint.shape
    mode_idx = domain.place_mode_index()
    indicator = np.zeros((p, len(domain.modes)), dtype=np.float64)
    indicator[np.arange(p), mode_idx] = 1.0
    out = joint.reshape(-1, p).astype(np.float64) @ indicator
    out = out.reshape(d, t, b, len(domain.modes))
    return out.astype(joint.dtype) if joint.dtype.kind in "iu" else out


def location_marginal(joint: np.ndarray) -> np.ndarray:
    """Location-only table ``(day, tap, place)``: sum of the joint over time bins."""
    return joint.sum(axis=2)


def project_rows_to_simplex(rows: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Row-wise Euclidean projection of ``rows`` (G x n) onto ``{x >= 0, sum(x) = total}`` (``totals >= 0``)."""
    rows = np.asarray(rows, dtype=np.float64)
    totals = np.asarray(totals, dtype=np.float64)
    n = rows.shape[1]
    u = -np.sort(-rows, axis=1)
    css = np.cumsum(u, axis=1) - totals[:, None]
    ks = np.arange(1, n + 1, dtype=np.float64)
    cond = u - css / ks > 0
    cond[:, 0] = True  # exact arithmetic: u_1 - (u_1 - total) = total > 0; guards rounding for tiny totals
    rho = n - 1 - np.argmax(cond[:, ::-1], axis=1)  # last index where cond holds (always >= 0 when total > 0)
    theta = css[np.arange(rows.shape[0]), rho] / (rho + 1.0)
    out = np.maximum(rows - theta[:, None], 0.0)
    out[totals <= 0] = 0.0
    return out


def consistent_nonnegative(joint: np.ndarray) -> np.ndarray:
    """Project each (day, tap, place) group of time bins onto its clipped noisy total (see module docstring)."""
    moved = np.moveaxis(np.asarray(joint, dtype=np.float64), 2, 3)  # (day, tap, place, bin)
    shape = moved.shape
    rows = moved.reshape(-1, shape[-1])
    totals = np.maximum(rows.sum(axis=1), 0.0)
    projected = project_rows_to_simplex(rows, totals).reshape(shape)
    return np.moveaxis(projected, 3, 2)


def time_marginal_sparse(index: np.ndarray, values: np.ndarray, domain: CountDomain) -> np.ndarray:
    """Time-only table ``(day, tap, bin, mode)`` from flat joint indices and their values (others count 0)."""
    d, t, b, p = domain.shape
    n_modes = len(domain.modes)
    mode = domain.place_mode_index()[index % p]
    group = (index // p) * n_modes + mode
    out = np.bincount(group, weights=np.asarray(values, dtype=np.float64), minlength=d * t * b * n_modes)
    return out.reshape(d, t, b, n_modes)


def location_marginal_sparse(index: np.ndarray, values: np.ndarray, domain: CountDomain) -> np.ndarray:
    """Location-only table ``(day, tap, place)`` from flat joint indices and their values (others count 0)."""
    d, t, b, p = domain.shape
    group = (index // (b * p)) * p + index % p
    out = np.bincount(group, weights=np.asarray(values, dtype=np.float64), minlength=d * t * p)
    return out.reshape(d, t, p)
