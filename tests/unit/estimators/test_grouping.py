"""Grouping plans and m_UB rules on hand examples (paper section III-A, Lemma III.2, eq. (1))."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urbandp.estimators import bestfit, eq1_argmax, paper_median, wraparound
from urbandp.estimators._bounds import choose_m_ub, eq1_objective


def test_wraparound_splits_a_unit_over_two_arrays() -> None:
    # counts [2, 2, 2, 7], m_UB = 3: unit 3 fills A0; the 2-sample units stream 0-2 | 2-4 | 4-6 over A1, A2.
    plan = wraparound([2, 2, 2, 7], 3)
    assert plan.n_arrays == 3  # K = floor((3 + 2 + 2 + 2) / 3)
    assert plan.members() == [[(3, 0, 3)], [(0, 0, 2), (1, 0, 1)], [(1, 1, 2), (2, 0, 2)]]
    assert plan.arrays_of_unit(1) == (1, 2)  # one unit influences two arrays
    assert plan.influence == 2
    assert plan.fill.tolist() == [3, 3, 3]


def test_wraparound_drops_the_partial_last_array() -> None:
    # counts [5, 1, 4, 2, 3, 3], m_UB = 5: sum min = 18, K = 3; stream u2(4) u4(3) u5(3) | u3 u1 dropped.
    plan = wraparound([5, 1, 4, 2, 3, 3], 5)
    assert plan.n_arrays == 3
    assert plan.members() == [[(0, 0, 5)], [(2, 0, 4), (4, 0, 1)], [(4, 1, 3), (5, 0, 3)]]
    assert plan.arrays_of_unit(3) == () and plan.arrays_of_unit(1) == ()


def test_bestfit_packs_into_the_most_filled_array_that_fits() -> None:
    # order u0(5) u2(4) u4(3) u5(3) u3(2) u1(1): u3 ties between A2 and A3 (fill 3) -> least index A2;
    # u1 fits A1 (fill 4) and A3 (fill 3) -> most filled A1.
    plan = bestfit([5, 1, 4, 2, 3, 3], 5)
    assert plan.n_arrays == 4  # K-bar >= K = 3
    assert plan.members() == [[(0, 0, 5)], [(2, 0, 4), (1, 0, 1)], [(4, 0, 3), (3, 0, 2)], [(5, 0, 3)]]
    assert plan.fill.tolist() == [5, 5, 5, 3]
    assert plan.influence == 1
    assert all(len(plan.arrays_of_unit(u)) == 1 for u in range(6))


def test_bestfit_opens_new_arrays_when_nothing_fits() -> None:
    plan = bestfit([2, 2, 2, 7], 3)
    assert plan.n_arrays == 4
    assert plan.members() == [[(3, 0, 3)], [(0, 0, 2)], [(1, 0, 2)], [(2, 0, 2)]]


def test_array_means_use_the_first_m_ub_samples() -> None:
    values = [np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, 6.0]), np.arange(10.0, 17.0)]
    plan = wraparound([v.size for v in values], 3)
    np.testing.assert_allclose(plan.array_means(values), [11.0, (1 + 2 + 3) / 3, (4 + 5 + 6) / 3])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=40), st.integers(1, 40))
def test_plans_cover_min_m_ub_samples(counts: list[int], m_ub: int) -> None:
    c = np.array(counts)
    clipped = np.minimum(c, m_ub)
    w = wraparound(c, m_ub)
    assert w.n_arrays == int(clipped.sum()) // m_ub  # the paper's formula for K
    assert np.all(w.fill == m_ub)
    b = bestfit(c, m_ub)
    assert b.n_arrays >= w.n_arrays
    assert np.all((b.fill >= 1) & (b.fill <= m_ub))
    per_unit = np.bincount(b.seg_unit, weights=b.seg_stop - b.seg_start, minlength=c.size)
    np.testing.assert_array_equal(per_unit, clipped)  # BESTFIT keeps min(m_l, m_UB) of everyone, once
    assert max(len(w.arrays_of_unit(u)) for u in range(c.size)) <= 2


def test_paper_median_is_the_ceil_half_largest() -> None:
    assert paper_median([5, 1, 4, 2, 3, 3]) == 3
    assert paper_median([1, 2, 3, 4]) == 3  # not numpy's 2.5: |{m_l >= 3}| = 2 = ceil(4/2)
    assert paper_median([1, 2, 3, 4, 5]) == 3
    assert paper_median([7]) == 7


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 300), min_size=1, max_size=30))
def test_eq1_is_the_exact_integer_argmax(counts: list[int]) -> None:
    def objective(m: int) -> float:
        return sum(min(c, m) for c in counts) / math.sqrt(m)

    best = max(range(min(counts), max(counts) + 1), key=lambda m: (objective(m), -m))
    assert eq1_argmax(counts) == best


def test_eq1_hand_example_and_rules() -> None:
    assert eq1_argmax([1, 100]) == 100  # (1 + m)/sqrt(m) grows on [1, 100]
    assert eq1_objective([4, 4], np.array([4]))[0] == pytest.approx(4.0)
    assert choose_m_ub(12, [1, 2]) == 12
    with pytest.raises(ValueError):
        choose_m_ub("mean", [1, 2])
