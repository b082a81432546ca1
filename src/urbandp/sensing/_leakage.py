"""How much the posterior variance map reveals where the vehicles drove (paper section V-C, Fig. 4(c)).

sigma_p^2 (eq. 5) depends only on the reading locations, so low-variance cells trace the routes:
``spearman_distance`` (rank correlation of sigma_p^2 with the distance to the nearest reading) and
``visited_recall`` (the share of visited cells among the ``k`` lowest-variance ones, against the chance rate
``visited_recall_chance``), as docs/sensing.md, section "The leak (section V-C)", explains. These are
diagnostics computed from the private readings; they are not released.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree
from scipy.stats import spearmanr


@dataclass(frozen=True)
class Leakage:
    spearman_distance: float
    visited_recall: float
    visited_recall_chance: float
    visited_cells: int
    cells: int


def leakage(
    sigma2: np.ndarray, centroids: np.ndarray, readings_xy: np.ndarray, visited: np.ndarray
) -> Leakage:
    """Both measures for one window's map; ``visited`` is a boolean mask of cells holding at least one reading."""
    sigma2 = np.asarray(sigma2, dtype=float)
    visited = np.asarray(visited, dtype=bool)
    dist = np.asarray(cKDTree(readings_xy).query(centroids, k=1)[0], dtype=float)  # to the nearest reading
    rho = (
        float(spearmanr(sigma2, dist).statistic) if np.ptp(sigma2) > 0 and np.ptp(dist) > 0 else float("nan")
    )
    k = int(visited.sum())
    if k == 0:
        recall = float("nan")
    else:
        # rank with a stable sort; ties are broken by cell id, never by the truth
        lowest = np.argsort(sigma2, kind="stable")[:k]
        recall = float(visited[lowest].mean())
    return Leakage(rho, recall, k / len(sigma2), k, len(sigma2))
