"""estimate_hat_means on a tiny frame (exact answers with ExactNoiseForTesting, epsilons from OpenDP maps)."""

from __future__ import annotations

import polars as pl
import pytest

from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp.errors import InputError
from urbandp.estimators._hat_means import estimate_hat_means

EXACT = ExactNoiseForTesting(acknowledge_not_private=True)


def _frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "h3_cell": ["a", "a", "a", "b", "a"],
            "slot": ["09", "09", "09", "10", "09"],
            "unit": ["v1|d1", "v2|d1", "v3|d1", "v1|d1", "v3|d1"],
            "speeds": [
                [10.0, 20.0, 30.0],
                [40.0],
                [5.0],
                [7.0],
                [5.0],
            ],  # v3 has two rows in HAT a: concatenated
        }
    )


def test_baseline_and_array_averaging_exact() -> None:
    base = estimate_hat_means(_frame(), "baseline", 1.0, 65.0, EXACT)
    assert base["h3_cell"].to_list() == ["a", "b"]
    a = base.row(0, named=True)
    assert a["mean_speed"] == pytest.approx(110 / 6)
    assert a["noise_scale"] == pytest.approx(65.0 * 3 / 6)  # U m* / sum m / epsilon
    assert (a["n_units"], a["m_ub"], a["n_arrays"], a["counts_public"]) == (3, None, None, True)
    assert a["epsilon_hat"] == pytest.approx(1.0)
    aa = estimate_hat_means(_frame(), "array-averaging", 1.0, 65.0, EXACT).row(0, named=True)
    # counts [3, 1, 2] -> m_UB = 2; BESTFIT: [10, 20] | [5, 5] | [40]
    assert (aa["m_ub"], aa["n_arrays"]) == (2, 3)
    assert aa["mean_speed"] == pytest.approx((15 + 5 + 40) / 3)
    assert aa["sensitivity"] == pytest.approx(65.0 / 3)


@pytest.mark.parametrize("estimator", ["levy", "quantile"])
def test_two_step_estimators_sum_their_epsilons(estimator: str) -> None:
    out = estimate_hat_means(_frame(), estimator, 2.0, 65.0, OpenDPNoise())
    assert out.height == 2
    for eps in out["epsilon_hat"].to_list():
        assert eps <= 2.0 and eps == pytest.approx(2.0, rel=1e-9)
    assert set(out.columns) >= {
        "h3_cell",
        "slot",
        "mean_speed",
        "noise_scale",
        "epsilon_hat",
        "n_units",
        "m_ub",
        "n_arrays",
    }


def test_params_reach_the_estimator_and_bad_input_is_refused() -> None:
    out = estimate_hat_means(_frame(), "array-averaging", 1.0, 65.0, EXACT, grouping="wraparound", m_ub=1)
    assert out.row(0, named=True)["n_arrays"] == 3 and out.row(0, named=True)["sensitivity"] == pytest.approx(
        130 / 3
    )
    with pytest.raises(InputError, match="unknown estimator"):
        estimate_hat_means(_frame(), "median", 1.0, 65.0, EXACT)
    with pytest.raises(InputError, match="missing column"):
        estimate_hat_means(_frame().drop("unit"), "baseline", 1.0, 65.0, EXACT)
    with pytest.raises(InputError, match="bad parameters"):
        estimate_hat_means(_frame(), "levy", 1.0, 65.0, EXACT, gamma=2.0)


def test_clipped_mean_releases_the_public_domain_and_hides_unit_counts() -> None:
    hats = pl.DataFrame({"h3_cell": ["a", "b", "c"], "slot": ["09", "10", "11"]})
    out = estimate_hat_means(_frame(), "clipped-mean", 1.0, 65.0, OpenDPNoise(), hats=hats, m_cap=20)
    assert out["h3_cell"].to_list() == ["a", "b", "c"]  # c has no data and is released anyway
    assert out["n_units"].null_count() == 3 and not any(out["counts_public"].to_list())
    assert all(e <= 1.0 and e == pytest.approx(1.0, rel=1e-9) for e in out["epsilon_hat"].to_list())
    exact = estimate_hat_means(_frame(), "clipped-mean", 1.0, 65.0, EXACT, m_ub=1)
    assert exact.row(0, named=True)["mean_speed"] == pytest.approx((10 + 40 + 5) / 3)
    with pytest.raises(InputError, match="HAT \\(c, 11\\)"):
        estimate_hat_means(_frame(), "baseline", 1.0, 65.0, EXACT, hats=hats)
