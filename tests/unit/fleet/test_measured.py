"""A query's answer leaves out what it does not give: its interval, noisy sum and count interval are NaN per HAT."""

from __future__ import annotations

import numpy as np

from urbandp.fleet._measure import Measured


def test_intervals_not_given_are_nan_for_each_hat() -> None:
    m = Measured(
        mean_speed=np.array([10.0, 20.0]),
        speed_scales=np.array([2.0, 2.0]),
        speed_costs=np.array([0.1, 0.1]),
        clamped=np.array([False, False]),
        ci_low=np.array([8.0, 18.0]),
    )
    assert m.ci_low.tolist() == [8.0, 18.0]
    for kept_nan in (m.ci_high, m.noisy_sum, m.count_low, m.count_high):
        assert kept_nan.shape == (2,) and np.isnan(kept_nan).all()
    assert m.withheld == 0 and m.noisy_n.size == 0
