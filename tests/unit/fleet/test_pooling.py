"""Issue 33, "borrow strength, for free": robust empirical Bayes means and intervals (fleet/_postprocess_pooling.py).

The critical values are checked by brute force against their definition (AKP 2022, eq. 7: the worst non-coverage
over distributions of the normalised bias with a given second moment is at most 5%); the average coverage is a
statistical test on a fleet with known, heavy-tailed true means; the release path is checked end to end."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from urbandp.errors import InvalidParameterError
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._postprocess_pooling import (
    POOLED_COLUMNS,
    _noncoverage,
    pool,
    robust_critical_value,
    with_pooled_means,
    worst_noncoverage,
)


def _brute_worst(m2: float, chi: float) -> float:
    """Worst non-coverage over two-point distributions {0, t} (t >= m2, weight m2/t) and the point mass at m2."""
    t = np.linspace(m2, 3000.0, 2_000_000)
    c = np.full(t.shape, chi)
    two_point = (1 - m2 / t) * _noncoverage(np.zeros_like(t), c) + m2 / t * _noncoverage(t, c)
    return float(max(two_point.max(), _noncoverage(np.array([m2]), np.array([chi]))[0]))


def test_critical_value_without_bias_is_the_normal_quantile() -> None:
    assert robust_critical_value(np.array([0.0]))[0] == pytest.approx(1.959964, abs=1e-5)


@pytest.mark.parametrize(("m2", "expected"), [(0.5, 2.5235), (1.0, 3.2592), (4.0, 7.2164), (10.0, 12.1625)])
def test_critical_value_is_the_smallest_with_worst_noncoverage_5_percent(m2: float, expected: float) -> None:
    chi = float(robust_critical_value(np.array([m2]))[0])
    assert chi == pytest.approx(expected, abs=2e-4)
    assert _brute_worst(m2, chi) == pytest.approx(0.05, abs=2e-6)  # holds at 5% in the worst case ...
    assert _brute_worst(m2, chi - 0.02) > 0.05 + 1e-4  # ... and no narrower interval does
    # the closed form (concave majorant) agrees with the brute force
    assert worst_noncoverage(np.array([m2]), np.array([chi]))[0] == pytest.approx(
        _brute_worst(m2, chi), abs=2e-6
    )


def _heavy_tailed_fleet(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """600 HATs in 60 H3 parents (10 children each): parent means 15-35 km/h, HAT deviations t(3) x 3 km/h (heavy
    tails: kurtosis infinite), noise sd 1-12 km/h by HAT. Returns truth, noisy means, noise variances, cells."""
    import h3

    rng = np.random.default_rng(seed)
    parents = [c for c in h3.grid_disk(h3.latlng_to_cell(30.27, -97.74, 6), 5)][:60]
    cells, truth = [], []
    for p in parents:
        centre = rng.uniform(15, 35)
        for child in sorted(h3.cell_to_children(p, 7))[:10]:
            cells.append(child)
            truth.append(centre + 3.0 * rng.standard_t(3))
    theta = np.array(truth)
    sd = rng.uniform(1.0, 12.0, theta.size)
    return theta, theta + rng.normal(0, sd), sd**2, cells


def test_pooled_intervals_cover_95_percent_on_average_and_shrink_the_error() -> None:
    """Average coverage over 600 HATs x 8 fleets (4,800 intervals): at least 95% - 3 binomial sd (0.9405); the
    pooled means' mean squared error is below the raw ones' (their sd up to 12 km/h, the spread 3 x t(3))."""
    covered, total, mse_raw, mse_pooled = 0, 0, 0.0, 0.0
    for seed in range(8):
        theta, y, var, cells = _heavy_tailed_fleet(seed)
        out = pool(y, var, cells, 65.0)
        covered += int(((out.low <= theta) & (theta <= out.high)).sum())
        total += theta.size
        mse_raw += float(np.mean((y - theta) ** 2))
        mse_pooled += float(np.mean((out.mean - theta) ** 2))
        assert np.all(out.high - out.low <= 2 * 1.96 * np.sqrt(var) * 1.6)  # never far wider than the raw
    assert covered / total >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / total)
    assert mse_pooled < 0.5 * mse_raw


def test_the_normal_prior_interval_would_not_cover() -> None:
    """Why the robust critical value: the parametric EB interval theta +- 1.96 w sigma (Morris 1983, a normal
    prior) covers well under 95% on the same heavy-tailed fleets; the robust one at least 94%."""
    covered_robust, covered_parametric, total = 0, 0, 0
    for seed in range(4):
        theta, y, var, cells = _heavy_tailed_fleet(seed)
        out = pool(y, var, cells, 65.0)
        covered_robust += int(((out.low <= theta) & (theta <= out.high)).sum())
        covered_parametric += int((np.abs(out.mean - theta) <= 1.959964 * out.se).sum())
        total += theta.size
    assert covered_robust / total >= 0.94
    assert covered_parametric / total < 0.92


def _table() -> tuple[pl.DataFrame, dict[str, object]]:
    import h3

    cells = sorted(h3.cell_to_children(h3.latlng_to_cell(30.27, -97.74, 6), 7))
    speed = pl.DataFrame(
        {
            "h3_cell": cells + cells[:2],
            "slot": ["08:00-09:00"] * 7 + ["09:00-10:00"] * 2,
            "mean_speed": [20.0, 22.0, 25.0, None, 18.0, 30.0, 21.0, 24.0, 65.0],
            "noisy_vehicle_days": [30.0, 12.0, 8.0, 1.0, 50.0, 9.0, 20.0, 15.0, 3.0],
            "clamped": [False] * 8 + [True],
        }
    )
    privacy: dict[str, object] = {
        "noise_scale_kind": "gaussian sigma",
        "noise_scale": {"speed": 58.27, "count": None, "selection": 1.79},
    }
    return speed, privacy


def test_only_shown_unclamped_means_are_pooled_and_the_report_says_so() -> None:
    speed, privacy = _table()
    out, report = with_pooled_means(speed, privacy, 65.0, 10.0, 2)
    assert out.columns[-4:] == list(POOLED_COLUMNS)
    pooled = out["pooled_mean_speed"].is_not_null().to_list()
    assert pooled == [True, True, True, False, True, True, True, True, False]  # withheld and clamped: null
    assert report["hats_pooled"] == 7
    assert report["useful_hats_pooled"] == int(out["pooled_useful"].sum())
    assert out["pooled_useful"].to_list() == (
        ((out["pooled_ci95_high"] - out["pooled_ci95_low"]) <= 10.0).fill_null(False).to_list()
    )
    # shrinkage pulls the noisiest mean (8 vehicle-days, 25 km/h) towards its parent's, more than the busiest
    moved = (out["pooled_mean_speed"] - out["mean_speed"]).abs().to_list()
    assert moved[2] > moved[4]
    # post-processing: the same table and public scales give the same columns
    again, _ = with_pooled_means(speed, privacy, 65.0, 10.0, 2)
    assert again.equals(out)


def test_laplace_scales_are_converted_to_standard_deviations() -> None:
    speed, privacy = _table()
    laplace = {**privacy, "noise_scale_kind": "laplace b"}
    _, gaussian_report = with_pooled_means(speed, privacy, 65.0, 10.0, 2)
    out_g, _ = with_pooled_means(speed, privacy, 65.0, 10.0, 6)
    out_l, _ = with_pooled_means(speed, laplace, 65.0, 10.0, 6)
    width = out_l["pooled_ci95_high"] - out_l["pooled_ci95_low"]
    assert (width >= out_g["pooled_ci95_high"] - out_g["pooled_ci95_low"]).drop_nulls().all()
    assert gaussian_report["tau_kmh"] is not None


@pytest.mark.parametrize(
    ("kw", "needs"),
    [
        ({"neighbouring": "presence-public"}, "add-remove neighbouring"),
        ({"speed_estimator": "baseline"}, "the report speed estimator"),
        ({"coarsen": "parent1"}, "no coarsen"),
    ],
)
def test_borrow_strength_is_refused_where_the_noisy_mean_is_not_s_over_n(
    kw: dict[str, object], needs: str
) -> None:
    with pytest.raises(InvalidParameterError, match=f"borrow_strength needs .*{needs}"):
        HatReleaseConfig(epsilon_per_day=4.0, borrow_strength="parent", **kw)  # type: ignore[arg-type]


def test_a_release_with_borrow_strength_publishes_the_pooled_columns(tmp_path: Path) -> None:
    """Through the library's release path on one real Austin day: the per-HAT columns are those of the same
    release without pooling (same noise seed), the pooled columns are added, privacy.json says what was done."""
    from urbandp._privacy.noise import ExactNoiseForTesting
    from urbandp._records.validation import ValidationOptions
    from urbandp.fleet._pipeline import release_fleet

    day = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "austin-avl" / "2016-11-24.csv"
    if not day.exists():
        pytest.skip(f"real Austin data not found at {day}")
    base = dict(
        start=dt.date(2016, 11, 24),
        end=dt.date(2016, 11, 24),
        hours=(6, 22),
        epsilon_per_day=4.0,
        domain_bbox=(30.15, -97.95, 30.55, -97.6),
    )
    opts = ValidationOptions(speed_unit="m/s")
    rels = []
    for borrow in ("none", "parent"):
        noise = ExactNoiseForTesting(acknowledge_not_private=True)
        rel, _ = release_fleet(
            [day], HatReleaseConfig(borrow_strength=borrow, **base), options=opts, noise=noise
        )  # type: ignore[arg-type]
        rels.append(rel)
    plain, pooled = rels
    assert pooled.speed.drop(list(POOLED_COLUMNS)).equals(plain.speed)
    report = pooled.privacy["borrow_strength"]
    assert isinstance(report, dict)
    assert report["hats_pooled"] == int(plain.speed["mean_speed"].is_not_null().sum())
    assert "borrow_strength" not in plain.privacy


def test_a_single_shown_mean_has_nothing_to_borrow_from() -> None:
    speed, privacy = _table()
    one = speed.with_columns(mean_speed=pl.when(pl.int_range(pl.len()) == 0).then(pl.col("mean_speed")))
    out, report = with_pooled_means(one, privacy, 65.0, 10.0, 2)
    assert out["pooled_mean_speed"].null_count() == out.height
    assert report["hats_pooled"] == 0 and report["tau_kmh"] is None


def test_the_map_draws_the_pooled_values_where_there_are_some() -> None:
    from urbandp.fleet._map_page import map_frame, map_header

    speed, privacy = _table()
    speed = speed.with_columns(
        ci95_low=pl.col("mean_speed") - 9, ci95_high=pl.col("mean_speed") + 9, h3_cell=pl.col("h3_cell")
    )
    out, report = with_pooled_means(speed, privacy, 65.0, 10.0, 2)
    frame = map_frame(out)
    pooled = out["pooled_mean_speed"].is_not_null()
    assert frame["mean_speed"].filter(pooled).to_list() == out["pooled_mean_speed"].filter(pooled).to_list()
    assert frame["ci95_low"].filter(pooled).to_list() == out["pooled_ci95_low"].filter(pooled).to_list()
    # the clamped row keeps its own (flagged) value: nothing was pooled there
    assert frame["mean_speed"].filter(~pooled).to_list() == out["mean_speed"].filter(~pooled).to_list()
    header = map_header({**privacy, "borrow_strength": report, "not_dp_reasons": [], "hats_released": 9})
    assert "pooled with each hexagon's H3 parent" in header.details


def test_the_spread_is_taken_at_an_upper_bound_that_holds_its_level() -> None:
    """60 HATs, true spread tau^2 = 9, noise variances 4-100: the Q-profile bound is at least the true tau^2 in 95%
    of 1,000 draws, within 3 binomial sd (0.929), with normal deviations (measured 0.955) and heavier-tailed t(5)
    ones (0.944); the plain moment estimate is below it about half the time."""
    from urbandp.fleet._postprocess_pooling import _spread_upper_bound

    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / 1000)
    for heavy in (False, True):
        rng = np.random.default_rng(11)
        held, plain_below = 0, 0
        for _ in range(1000):
            noise = rng.uniform(4.0, 100.0, 60)
            unit = rng.standard_t(5, 60) / math.sqrt(5 / 3) if heavy else rng.normal(0.0, 1.0, 60)
            e = 3.0 * unit + rng.normal(0.0, np.sqrt(noise))
            held += _spread_upper_bound(e**2, noise) >= 9.0
            plain_below += float(np.mean(e**2 - noise)) < 9.0
        assert held / 1000 >= floor
        assert 0.35 < plain_below / 1000 < 0.75


def test_the_pngs_and_the_map_name_the_pooled_value(tmp_path: Path) -> None:
    """A release with ``borrow_strength`` in its privacy.json is drawn as the pooled mean of vehicle-day mean
    speeds, else their mean (the estimand named)."""
    from urbandp.fleet._map_page import _legend

    assert _legend({"borrow_strength": {"hats_pooled": 3}}) == "pooled mean of vehicle-day mean speeds (km/h)"
    assert _legend({}) == "mean of vehicle-day mean speeds (km/h)"


def test_a_release_without_a_noisy_count_pools_with_the_count_s_sd_at_zero() -> None:
    """Public-threshold selection (or presence-public) divides by the true count: privacy.json records the count's
    scale as null, and pooling reads its sd as 0 instead of failing (it used to end the release in an internal
    error); a release that records no scales at all is still refused."""
    from urbandp.fleet._postprocess_pooling import noise_sds

    scales = {"speed": 3.0, "speeding": None, "selection": None, "count": None}
    assert noise_sds({"noise_scale": scales, "noise_scale_kind": "laplace b"}) == (3.0 * 2**0.5, 0.0)
    assert noise_sds({"noise_scale": {**scales, "count": 2.0}, "noise_scale_kind": "gaussian sigma"}) == (
        3.0,
        2.0,
    )
    with pytest.raises(ValueError):
        noise_sds({"noise_scale": {"speed": 3.0}})
