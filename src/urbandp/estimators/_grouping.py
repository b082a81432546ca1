"""Grouping of per-unit samples into arrays of length ``m_UB``: WRAPAROUND and BESTFIT.

Gupta, Rameshwar, Tandon, Chakraborty, *Mean Estimation with User-Level Privacy for Spatio-Temporal IoT
Datasets*, section III-A. Units ("users" in the paper; vehicles or vehicle-days here) are re-indexed so that
``m_1 >= m_2 >= ... >= m_L`` (a stable sort, ties keep input order). Units with ``m_l >= m_UB`` each fill one
array with their first ``m_UB`` samples; the others are packed:

* WRAPAROUND: contiguously, a unit's samples may be split over two consecutive arrays; only the ``K`` fully filled
  arrays are kept, ``K = floor(sum_l min(m_l, m_UB) / m_UB)``. One unit influences at most **two** arrays.
* BESTFIT: each unit goes whole into the least-indexed array that can take it and is filled the most (best-fit
  bin packing); ``K-bar`` = number of non-empty arrays. One unit influences at most **one** array.

The plan depends on the counts ``m_l`` only, never on the sample values. Under the paper's neighbouring relation
(Def. II.1: the same units with the same counts, one unit's values replaced) the counts are public, so the plan is
identical on neighbouring datasets; that is what makes the sensitivities ``2U/K`` and ``U/K-bar`` valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GroupingPlan:
    """Which samples of which unit land in which array (a function of the counts only).

    Segment ``s`` puts samples ``seg_start[s]:seg_stop[s]`` of unit ``seg_unit[s]`` (index into the input
    order) into array ``seg_array[s]``. ``fill[i]`` is ``w(A_i)``. ``influence`` is the largest number of arrays
    one unit touches (2 for WRAPAROUND, 1 for BESTFIT): it multiplies every sensitivity.
    """

    strategy: str
    m_ub: int
    n_arrays: int
    influence: int
    seg_array: np.ndarray
    seg_unit: np.ndarray
    seg_start: np.ndarray
    seg_stop: np.ndarray
    fill: np.ndarray

    def arrays_of_unit(self, unit: int) -> tuple[int, ...]:
        """Indices of the arrays that hold samples of ``unit`` (input order), sorted."""
        return tuple(sorted({int(a) for a in self.seg_array[self.seg_unit == unit]}))

    def members(self) -> list[list[tuple[int, int, int]]]:
        """For every array, its ``(unit, start, stop)`` segments in filling order (for inspection and tests)."""
        out: list[list[tuple[int, int, int]]] = [[] for _ in range(self.n_arrays)]
        for a, u, s, e in zip(self.seg_array, self.seg_unit, self.seg_start, self.seg_stop, strict=True):
            out[int(a)].append((int(u), int(s), int(e)))
        return out

    def array_means(self, values_per_unit: Sequence[np.ndarray]) -> np.ndarray:
        """``A-bar_i = (1 / w(A_i)) sum_j A_i(j)`` for every kept array (section III-C)."""
        if self.n_arrays == 0:
            return np.zeros(0)
        sums = np.fromiter(
            (
                float(np.sum(values_per_unit[u][s:e], dtype=float))
                for u, s, e in zip(self.seg_unit, self.seg_start, self.seg_stop, strict=True)
            ),
            dtype=float,
            count=self.seg_unit.size,
        )
        array_sums = np.bincount(self.seg_array, weights=sums, minlength=self.n_arrays)
        return array_sums / self.fill


def _plan(
    strategy: str, m_ub: int, influence: int, segs: list[tuple[int, int, int, int]], n_arrays: int
) -> GroupingPlan:
    arr = np.array(segs, dtype=np.int64).reshape(-1, 4)
    fill = np.bincount(arr[:, 0], weights=arr[:, 3] - arr[:, 2], minlength=n_arrays).astype(np.int64)
    return GroupingPlan(
        strategy=strategy,
        m_ub=int(m_ub),
        n_arrays=int(n_arrays),
        influence=influence,
        seg_array=arr[:, 0],
        seg_unit=arr[:, 1],
        seg_start=arr[:, 2],
        seg_stop=arr[:, 3],
        fill=fill,
    )


def _heavy_users_first(
    counts: Sequence[int] | np.ndarray, m_ub: int
) -> tuple[np.ndarray, int, list[tuple[int, int, int, int]], list[int], list[int]]:
    """Both strategies of section III-A start alike: the counts checked, users in descending count order; each
    user with ``m_l >= m_UB`` fills an array of its own with its first ``m_UB`` samples. Returns (counts, m_UB,
    segments, heavy, light)."""
    c = np.asarray(counts, dtype=np.int64)
    if c.ndim != 1 or c.size == 0:
        raise ValueError("counts must be a non-empty 1-D sequence")
    if np.any(c < 1):
        raise ValueError("every unit must contribute at least one sample")
    if int(m_ub) < 1:
        raise ValueError(f"m_ub must be >= 1, got {m_ub}")
    m_ub = int(m_ub)
    order = np.argsort(-c, kind="stable")
    heavy = [int(u) for u in order if c[u] >= m_ub]
    segs = [(i, u, 0, m_ub) for i, u in enumerate(heavy)]
    light = [int(u) for u in order if c[u] < m_ub]
    return c, m_ub, segs, heavy, light


def wraparound(counts: Sequence[int] | np.ndarray, m_ub: int) -> GroupingPlan:
    """WRAPAROUND grouping (section III-A 1): ``K = floor(sum_l min(m_l, m_UB) / m_UB)`` full arrays."""
    c, m_ub, segs, heavy, light = _heavy_users_first(counts, m_ub)
    total_light = int(sum(int(c[u]) for u in light))
    k_light = total_light // m_ub
    n_arrays = len(heavy) + k_light
    pos = 0  # position in the stream of light samples
    limit = k_light * m_ub
    for u in light:
        start, stop = pos, min(pos + int(c[u]), limit)
        while start < stop:
            arr_i = start // m_ub
            end = min(stop, (arr_i + 1) * m_ub)
            segs.append((len(heavy) + arr_i, u, start - pos, end - pos))
            start = end
        pos += int(c[u])
        if pos >= limit:
            break
    return _plan("wraparound", m_ub, 2, segs, n_arrays)


def bestfit(counts: Sequence[int] | np.ndarray, m_ub: int) -> GroupingPlan:
    """BESTFIT grouping (section III-A 2): best-fit bin packing; ``K-bar`` non-empty arrays, ``K-bar >= K``."""
    c, m_ub, segs, heavy, light = _heavy_users_first(counts, m_ub)
    fills = np.zeros(len(light), dtype=np.int64)  # arrays A_{l*}, ..., opened in index order
    n_open = 0
    for u in light:
        need = int(c[u])
        open_fills = fills[:n_open]
        fits = np.flatnonzero(open_fills + need <= m_ub)
        if fits.size:
            j = int(fits[np.argmax(open_fills[fits])])  # most filled; argmax takes the least index on ties
        else:
            j = n_open  # least-indexed empty array
            n_open += 1
        segs.append((len(heavy) + j, u, 0, need))
        fills[j] += need
    return _plan("bestfit", m_ub, 1, segs, len(heavy) + n_open)


PLANS = {"wraparound": wraparound, "bestfit": bestfit}
"""The grouping strategies of section III-A by name: each maps (counts, m_UB) to its plan."""
GROUPINGS: tuple[str, ...] = tuple(PLANS)
