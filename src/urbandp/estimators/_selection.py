"""Private selection steps, run by OpenDP, with the epsilon read from OpenDP's privacy map.

* :func:`private_quantile` -- OpenDP ``make_private_quantile`` (Smith 2011 scores over a public candidate grid,
  selected by report-noisy-max with exponential noise). Used by QUANTILE (paper section III-E, which cites Smith
  2011's Algorithm 2 [10]).
* :func:`private_argmax` -- OpenDP ``make_noisy_max`` over integer scores (bin counts). Used by LEVY's private
  interval (section III-D 1): the most populated ``tau``-wide bin of the array means.

Both are calibrated by :func:`calibrate_scale`: start from the analytic scale and move it up until OpenDP's map
says the step costs at most its share of epsilon. The epsilon we report is the map's value, never a typed number.

Distances are in OpenDP's input metric. The number of arrays is fixed under the paper's relation (counts are
public), so one unit touching ``influence`` arrays moves ``influence`` array means: symmetric distance
``2 * influence`` on the vector of array means, and L-infinity distance ``influence`` on the vector of bin counts
(a moved mean leaves one bin and enters another; the scores are not monotonic).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import urbandp._privacy.dp_prelude as dp

dp.enable_features("contrib")


def calibrate_scale(
    map_at_scale: Callable[[float], float], epsilon: float, scale: float
) -> tuple[float, float]:
    """Smallest scale at or above ``scale`` (by relative steps of 1e-12) whose mapped epsilon is ``<= epsilon``."""
    if not (epsilon > 0 and np.isfinite(epsilon)):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon}")
    eps = map_at_scale(scale)
    step = 1e-12
    while eps > epsilon:
        scale = scale * (1.0 + step)
        step *= 2.0
        eps = map_at_scale(scale)
    return float(scale), float(eps)


def quantile_measurement(
    candidates: Sequence[float] | np.ndarray,
    alpha: float,
    scale: float,
    *,
    size: int | None = None,
    atom: type = float,
    gaussian: bool = False,
) -> dp.Measurement:
    """OpenDP's ``make_private_quantile`` over the public ``candidates`` (of type ``atom``), on ``size`` values or,
    with ``size`` None, on a vector of unknown size (DP under add/remove of values too); pure epsilon (max
    divergence), or with ``gaussian`` OpenDP's zero-concentrated divergence (a rho, composed with a Gaussian release
    in rho)."""
    atoms = dp.atom_domain(T=float, nan=False) if atom is float else dp.atom_domain(T=atom)
    measure = dp.zero_concentrated_divergence() if gaussian else dp.max_divergence()
    return dp.m.make_private_quantile(
        dp.vector_domain(atoms, size=size),
        dp.symmetric_distance(),
        measure,
        [atom(c) for c in candidates],
        float(alpha),
        float(scale),
    )


def quantile_scale(
    n: int, candidates: Sequence[float] | np.ndarray, alpha: float, d_in: int, epsilon: float
) -> tuple[float, float]:
    """Scale of ``make_private_quantile`` on ``n`` known-size values so that ``map(d_in) <= epsilon``.

    For a known size OpenDP's map is ``epsilon = d_in / scale`` (a replacement moves every score by at most 1 and
    the selection is not monotonic), so the analytic start is ``d_in / epsilon``.
    """

    def at(scale: float) -> float:
        return float(quantile_measurement(candidates, alpha, scale, size=int(n)).map(int(d_in)))

    return calibrate_scale(at, epsilon, float(d_in) / float(epsilon))


def quantile_scores(values: np.ndarray, candidates: np.ndarray, alpha: float) -> np.ndarray:
    """Smith's scores as OpenDP computes them (in real units): ``|(1 - alpha) #{x < c} - alpha #{x > c}|``."""
    xs = np.sort(np.asarray(values, dtype=float))
    below = np.searchsorted(xs, candidates, side="left")
    above = xs.size - np.searchsorted(xs, candidates, side="right")
    return np.abs((1.0 - alpha) * below - alpha * above)


def best_candidate(values: np.ndarray, candidates: Sequence[float] | np.ndarray, alpha: float) -> float:
    """The candidate of best score: what a private quantile draws without noise (exact-answer tests only; not
    differentially private)."""
    cands = np.asarray(candidates, dtype=float)
    return float(cands[int(np.argmin(quantile_scores(values, cands, alpha)))])


def private_quantile(
    values: np.ndarray,
    candidates: Sequence[float] | np.ndarray,
    alpha: float,
    scale: float,
    *,
    private: bool = True,
    known_size: bool = True,
    gaussian: bool = False,
) -> float:
    """One draw of OpenDP's private ``alpha``-quantile (:func:`quantile_measurement`) on a vector whose size is
    public, or (``known_size`` False) itself private. ``private=False`` returns the best-scoring candidate
    (exact-answer tests only; not differentially private)."""
    vals = np.asarray(values, dtype=float)
    if not private:
        return best_candidate(vals, candidates, alpha)
    size = vals.size if known_size else None
    return float(quantile_measurement(candidates, alpha, scale, size=size, gaussian=gaussian)(vals.tolist()))


def _noisy_max_measurement(scale: float) -> dp.Measurement:
    return dp.m.make_noisy_max(
        dp.vector_domain(dp.atom_domain(T=int)),
        dp.linf_distance(T=int),
        dp.max_divergence(),
        scale=float(scale),
    )


def noisy_max_scale(d_in: int, epsilon: float) -> tuple[float, float]:
    """Scale of ``make_noisy_max`` (non-monotonic L-inf scores) with ``map(d_in) <= epsilon``; map is ``2 d_in / scale``."""

    def at(scale: float) -> float:
        return float(_noisy_max_measurement(scale).map(int(d_in)))

    return calibrate_scale(at, epsilon, 2.0 * float(d_in) / float(epsilon))


def private_argmax(scores: np.ndarray, scale: float, *, private: bool = True) -> int:
    """Index of the (noisy) largest integer score via OpenDP. ``private=False``: the true argmax (tests only)."""
    s = np.asarray(scores, dtype=np.int64)
    if not private:
        return int(np.argmax(s))
    return int(_noisy_max_measurement(scale)([int(v) for v in s]))
