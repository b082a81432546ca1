"""Composition rules of a HAT release (ITMS report section III E-F): per day over the K HATs a vehicle-day touches,
and per window over its D days (group privacy); computed, never typed in.

* epsilon per HAT per day: each HAT's Laplace mechanism at the sensitivity that one vehicle-day has on it
  (OpenDP's privacy map, :func:`urbandp._privacy.mechanisms.laplace_epsilon`).
* epsilon per day: a vehicle-day touches at most K HATs, so by basic composition its loss is at most the sum of
  the K largest per-HAT epsilons (III E, step 3).
* cumulative epsilon per day: the sum over queries (III F), plus the selection's cost when selection is DP.
* per window: a vehicle present on D days is a group of D vehicle-days; group privacy for pure DP multiplies by D.
  The DP selection's (epsilon, delta) over the window is OpenDP's map at the window's distance, far below group
  privacy's ``D * exp((D - 1) * eps) * delta`` (Dwork and Roth, Thm 2.2 generalised), which is 1 for realistic D.
"""

from __future__ import annotations

import math

import numpy as np


def top_k_sum(values: np.ndarray, k: int) -> float:
    """Sum of the ``k`` largest values (all of them when fewer than ``k``)."""
    v = np.sort(np.asarray(values, dtype=float))[::-1]
    return math.fsum(v[: max(0, int(k))].tolist())
