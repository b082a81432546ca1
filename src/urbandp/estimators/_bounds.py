"""Choice of the per-unit sample bound ``m_UB`` (section III-C, Lemma III.2, and eq. (1)).

Both rules are functions of the counts ``m_l`` only. The paper assumes ``L`` and ``{m_l}`` are *known to the
client* (section II-C) and its neighbouring relation keeps them fixed (Def. II.1), so under that relation the
choice costs no privacy. If the counts were private, both rules would be data-dependent choices that leak: we do
not pretend otherwise; every estimate carries ``counts_public=True`` and the docs (docs/estimators.md) say so.

The second half is a DP-chosen *value* bound (the QUANTILE estimator's idea, section III-E, applied to the fleet
release's clip bound U'): OpenDP's private quantile on an unknown-size dataset, so that it is DP under add/remove
of a value as well as under replacement; its cost is read from OpenDP's map (epsilon or rho).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from urbandp.estimators._selection import calibrate_scale, quantile_measurement


def paper_median(counts: Sequence[int] | np.ndarray) -> int:
    """``med(m_1, ..., m_L)``: the value with ``|{l : m_l >= x}| = ceil(L/2)``, i.e. the ``ceil(L/2)``-th largest.

    Section II-A defines the median this way; Lemma III.2 shows it keeps a gain of at least OPT/2.
    """
    c = np.sort(np.asarray(counts, dtype=np.int64))[::-1]
    if c.size == 0:
        raise ValueError("no counts")
    return int(c[math.ceil(c.size / 2) - 1])


def eq1_objective(counts: Sequence[int] | np.ndarray, m_values: np.ndarray) -> np.ndarray:
    """``sum_l min(m_l, m) / sqrt(m)`` for every ``m`` in ``m_values`` (the objective of eq. (1))."""
    c = np.sort(np.asarray(counts, dtype=np.int64))
    prefix = np.concatenate([[0], np.cumsum(c)])
    m = np.asarray(m_values, dtype=np.int64)
    below = np.searchsorted(c, m, side="left")  # units with m_l < m
    clipped = prefix[below] + m * (c.size - below)
    return clipped / np.sqrt(m)


def eq1_argmax(counts: Sequence[int] | np.ndarray) -> int:
    """``m_UB = argmax_{m_* <= m <= m^*} sum_l min(m_l, m) / sqrt(m)`` over the integers (eq. (1)).

    Solved exactly by evaluating every integer in ``[m_*, m^*]``; ties go to the smallest ``m``.
    """
    c = np.asarray(counts, dtype=np.int64)
    if c.size == 0:
        raise ValueError("no counts")
    grid = np.arange(int(c.min()), int(c.max()) + 1)
    return int(grid[int(np.argmax(eq1_objective(c, grid)))])


M_UB_RULES = {"median": paper_median, "eq1": eq1_argmax}
"""The rules for ``m_UB`` from the counts: Lemma III.2's median and eq. (1)."""


def choose_m_ub(rule: str | int, counts: Sequence[int] | np.ndarray) -> int:
    """``rule`` is ``"median"``, ``"eq1"`` or a public integer bound."""
    if isinstance(rule, (int, np.integer)) and not isinstance(rule, bool):
        if rule < 1:
            raise ValueError(f"m_ub must be >= 1, got {rule}")
        return int(rule)
    if rule in M_UB_RULES:
        return M_UB_RULES[rule](counts)
    raise ValueError(f"m_ub must be 'median', 'eq1' or a positive int, got {rule!r}")


# --- DP-chosen clipping bound --------------------------------------------------------------------------------


def quantile_bound_scale(
    candidates: Sequence[float], alpha: float, budget: float, d_in: int, *, gaussian: bool
) -> tuple[float, float]:
    """Smallest scale (from the analytic start, moved up) whose OpenDP map at ``d_in`` is ``<= budget``, for the
    QUANTILE estimator's private quantile (paper section III-E) on a vector of unknown size (DP under add/remove).

    Analytic start: OpenDP's score sensitivity is ``max(alpha, 1 - alpha)`` per added or removed value; the
    pure-DP map is ``2 d_in max(alpha, 1 - alpha) / scale`` and the zCDP map ``(d_in max(alpha, 1-alpha) /
    scale)^2 / 2``. Returns ``(scale, cost)``, the cost read from the map.
    """
    s = float(d_in) * max(alpha, 1.0 - alpha)
    start = s / math.sqrt(2.0 * budget) if gaussian else 2.0 * s / budget

    def at(scale: float) -> float:
        return float(quantile_measurement(candidates, alpha, scale, gaussian=gaussian).map(int(d_in)))

    return calibrate_scale(at, budget, start)
