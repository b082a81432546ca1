"""Issue 30: tests that catch the privacy bugs the suite let through.

* ``top_k_sum`` over MIXED per-HAT costs with K below the number of HATs (a sum of the K smallest under-charges);
* Fieller's interval coverage bounded from above AND below (a doubled z gives intervals twice as wide);
* the withheld-mean rule at its 2 sd boundary (under Laplace the count interval's rule withholds there too).
"""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import polars as pl
import pytest

from urbandp._privacy.mechanisms import Gaussian, Laplace
from urbandp._privacy.noise import ExactNoiseForTesting
from urbandp.fleet._account_composition import top_k_sum
from urbandp.fleet._hat_release import _release_hats
from urbandp.fleet._measure import fieller_interval, fieller_z
from urbandp.fleet._options import HatReleaseConfig

EXACT = ExactNoiseForTesting(acknowledge_not_private=True)
D0 = dt.date(2021, 11, 15)
CELLS = [0x8742D9D69FFFFFF, 0x8742D9D6BFFFFFF, 0x8742D9D68FFFFFF]


def contributions(rows: list[tuple[int, int, str, float]]) -> pl.DataFrame:
    """rows of (cell, day offset, vehicle, mean_speed) in slot 9; one record each, max speed = mean speed."""
    return pl.DataFrame(
        {
            "cell": pl.Series([r[0] for r in rows], dtype=pl.UInt64),
            "slot": pl.Series([9] * len(rows), dtype=pl.Int16),
            "day": [D0 + dt.timedelta(days=r[1]) for r in rows],
            "vehicle": [r[2] for r in rows],
            "n_records": pl.Series([1] * len(rows), dtype=pl.UInt32),
            "mean_speed": [r[3] for r in rows],
            "max_speed": [r[3] for r in rows],
        }
    )


# --- top_k_sum: mixed costs, K < number of HATs ------------------------------------------------------------


def test_top_k_sum_takes_the_k_largest_of_mixed_costs() -> None:
    costs = np.array([0.125, 0.5, 0.25, 0.0625, 1.0])  # dyadic: the sums are exact
    assert top_k_sum(costs, 2) == 1.5  # 1 + 0.5 (the two smallest would give 0.1875)
    assert top_k_sum(costs, 3) == 1.75
    assert top_k_sum(costs, 5) == top_k_sum(costs, 9) == 1.9375  # all of them when K >= the number of HATs
    assert top_k_sum(costs, 0) == 0.0
    assert top_k_sum(costs[::-1], 1) == 1.0  # order of the input does not matter


def test_per_day_speed_cost_is_the_sum_of_the_k_largest_hat_costs() -> None:
    """Three HATs with 5, 3 and 1 vehicle-days (replace-one: per-HAT speed epsilon U / (N b), all different),
    K = 2: epsilon per day is the two largest per-HAT costs (N = 1 and N = 3), not the two smallest."""
    rows = [(CELLS[0], 0, f"a{v}", 20.0 + v) for v in range(5)]
    rows += [(CELLS[1], 0, f"b{v}", 30.0 + v) for v in range(3)]
    rows += [(CELLS[2], 0, "c0", 40.0)]
    cfg = HatReleaseConfig(
        hours=(9, 10),
        min_vehicles_per_day=1,
        max_hats_per_vehicle_day=2,
        precision=6,
        queries=("speed",),
        noise_scale=5.0,
        neighbouring="replace-one",
        selection="public-threshold",
    )
    r = _release_hats(contributions(rows), cfg, 1, EXACT)
    costs = sorted(r.speed["epsilon_hat_day"].to_list())
    assert len(costs) == 3 and costs[0] < costs[1] < costs[2]
    assert costs == pytest.approx([65 / 5 / 5.0, 65 / 3 / 5.0, 65 / 1 / 5.0], rel=1e-12)
    assert r.privacy["epsilon_per_day"]["speed"] == pytest.approx(costs[2] + costs[1], rel=1e-12)


# --- Fieller's interval: coverage from above and below --------------------------------------------------------

TRIALS = 20_000
BAND = 3.2905 * math.sqrt(0.95 * 0.05 / TRIALS)  # 99.9% two-sided binomial band around 0.95: +- 0.0051


@pytest.mark.parametrize("law", ["gaussian", "laplace"])
def test_fieller_interval_covers_95_percent_not_more_not_less(law: str) -> None:
    """Seeded simulation of the fleet's interval for theta = S / N (fieller_z of the plan's mechanism, then
    fieller_interval). Its coverage is EXACTLY 95% in both set-ups:

    * Gaussian noise on the sum and the count (sd 150 and 4.5, N = 40, the small-count case of the end-to-end
      test): s - theta n ~ N(0, sd_s^2 + theta^2 sd_n^2), so the set holds theta with probability P(|Z| <= 1.96);
      n < 1.96 sd_n (an unbounded set) has probability Phi(-6.9) ~ 3e-12;
    * Laplace noise on the sum with a noiseless count: the interval is s / N +- z sd_s / N with z sd_s = b ln 20,
      and P(|Laplace(b)| <= b ln 20) = 1 - 1/20.

    Over 20,000 trials the observed coverage must lie within the 99.9% binomial band 0.95 +- 0.0051. A doubled z
    (coverage 99.99% Gaussian, 99.75% Laplace) or a halved one (67%, 77.6%) misses 0.95 by at least 9 times the
    band's half-width."""
    rng = np.random.default_rng(30)
    big_s, big_n = 40.0 * 27.5, 40.0
    if law == "gaussian":
        mech_s: Gaussian | Laplace = Gaussian(150.0)
        mech_n: Gaussian | Laplace = Gaussian(4.5)
        s = big_s + rng.normal(0.0, mech_s.scale, TRIALS)
        n = big_n + rng.normal(0.0, mech_n.scale, TRIALS)
        sd_n = mech_n.std
    else:
        mech_s = Laplace(100.0)
        s = big_s + rng.laplace(0.0, mech_s.scale, TRIALS)
        n = np.full(TRIALS, big_n)
        sd_n = 0.0
    low, high = fieller_interval(s, n, mech_s.std, sd_n, fieller_z(mech_s))
    coverage = float(np.mean((low <= big_s / big_n) & (big_s / big_n <= high)))
    assert abs(coverage - 0.95) <= BAND, coverage


# --- the withheld-mean rule at its boundary -------------------------------------------------------------------


def test_mean_is_withheld_below_two_sd_of_the_count_and_kept_above() -> None:
    """Add/remove with a fresh Laplace count at b = K / 1.6 = 1.25 (sd 1.77, 2 sd = 3.54): a HAT of 4 vehicle-days
    (above 2 sd) keeps its mean, one of 3 (above 1 sd, below 2 sd) is withheld. Under Laplace the count's plain
    95% interval (n~ -+ 2.12 sd) reaches 0 below 3.75 as well, so this HAT is withheld by both rules; the band
    where only the 2 sd rule withholds is Gaussian's (1.96 to 2 sd), tested in test_mutation_survivors."""
    rows = [(CELLS[0], 0, f"a{v}", 20.0 + v) for v in range(4)]
    rows += [(CELLS[1], 0, f"b{v}", 40.0 + v) for v in range(3)]
    cfg = HatReleaseConfig(
        hours=(9, 10),
        min_vehicles_per_day=1,
        max_hats_per_vehicle_day=2,
        precision=6,
        queries=("speed",),
        noise_scale=5.0,
        mechanism="laplace",
        neighbouring="add-remove",
        selection="public-threshold",
        selection_epsilon=1.6,
    )
    r = _release_hats(contributions(rows), cfg, 1, EXACT)
    sd_n = math.sqrt(2.0) * r.privacy["noise_scale"]["count"]
    assert sd_n == pytest.approx(math.sqrt(2.0) * 1.25, rel=1e-9)
    assert sd_n < 3.0 < 2.0 * sd_n < 4.0  # the set-up straddles the boundary
    speed = r.speed.sort("noisy_vehicle_days")
    assert speed["noisy_vehicle_days"].to_list() == [3.0, 4.0]
    assert speed["mean_speed"].to_list() == [None, pytest.approx(21.5, abs=1e-6)]
    assert r.privacy["means_withheld_small_noisy_count"] == 1
