"""Tests that kill the privacy mutations an earlier suite let through, each on small exact data (no real data
needed). Every test names the mutation of tests/mutations/run_mutations.py it kills; the rule it pins is stated
with its exact figures.

* the withheld-mean rule's Gaussian band: a noisy count between 1.96 and 2 sd, whose plain 95% interval excludes
  0, is still withheld (a 1 sd rule shows it);
* the public extent's false-positive threshold, as the release applies it (Gaussian and Laplace), and its
  cost a day (K HATs) and over the window (D^2 in rho);
* no mean where the count's interval reaches 0, on the threshold path and on a route domain;
* ``Loss.times`` multiplies delta; the store's default window delta sums a spanning unit's days;
* ``pool()`` fits the spread at the Q-profile upper bound, not the plain moment estimate;
* the guards of a ReleaseCharge used alone (delta, meaningless loss, NOT DP with a dataset) and the counts release's
  delta guard from Python.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import polars as pl
import pytest

from urbandp._contributions.base import CONTRIBUTION_SCHEMA
from urbandp._privacy.loss import Loss
from urbandp._privacy.noise import ExactNoiseForTesting
from urbandp.errors import InvalidParameterError
from urbandp.fleet import _hat_release as hat_release
from urbandp.fleet._options import HatReleaseConfig

EXACT = ExactNoiseForTesting(acknowledge_not_private=True)
# The fleet's building block, called directly with exact noise (no ReleaseCharge, no guard); where it is internal
# (``_release_hats``) that name is used.
release_hats = vars(hat_release).get("_release_hats") or vars(hat_release)["release_hats"]
D0 = dt.date(2021, 11, 15)
SURAT = (21.09, 72.75, 21.25, 72.91)  # a public extent of 62 resolution-7 HATs in slot 9
CELLS = [0x8742D9D69FFFFFF, 0x8742D9D6BFFFFFF, 0x8742D9D68FFFFFF, 0x8742D9D6AFFFFFF]


def fleet(counts: list[int]) -> pl.DataFrame:
    """``counts[i]`` vehicle-days in ``CELLS[i]`` at slot 9 on D0, one HAT each, every speed 20 km/h."""
    rows = [(CELLS[i], 9, D0, f"v{i}-{v}", 1, 20.0, 20.0) for i, n in enumerate(counts) for v in range(n)]
    return pl.DataFrame(rows, schema=CONTRIBUTION_SCHEMA, orient="row")


def shown(release: object) -> dict[float, float | None]:
    """noisy vehicle-days -> mean speed (None where withheld), from the published table."""
    table = release.speed  # type: ignore[attr-defined]
    return dict(zip(table["noisy_vehicle_days"].to_list(), table["mean_speed"].to_list(), strict=True))


def config(**kw: object) -> HatReleaseConfig:
    base: dict[str, object] = dict(
        hours=(9, 10), precision=9, start=D0, end=D0, max_hats_per_vehicle_day=1, min_vehicles_per_day=0
    )
    return HatReleaseConfig(**{**base, **kw})  # type: ignore[arg-type]


# --- the withheld-mean rule: the Gaussian band ------------------------------------------------------------------


def test_a_gaussian_count_between_1_96_and_2_sd_is_withheld() -> None:
    """Mutation withheld_1sd. A fresh Gaussian count (public-threshold selection) at sigma 2.0218: a HAT of 4
    vehicle-days has the plain 95% interval [0.037, 7.96], which excludes 0, yet 4 < 2 sd = 4.04, so its mean is
    withheld; a HAT of 5 is shown. Laplace needs no such rule (its interval excludes 0 only above 2.12 sd), hence
    this test is on Gaussian noise."""
    rows = [(CELLS[0], 0, f"a{v}") for v in range(4)] + [(CELLS[1], 0, f"b{v}") for v in range(5)]
    data = pl.DataFrame(
        [(c, 9, D0, v, 1, 20.0, 20.0) for c, _, v in rows], schema=CONTRIBUTION_SCHEMA, orient="row"
    )
    cfg = HatReleaseConfig(
        hours=(9, 10),
        min_vehicles_per_day=1,
        max_hats_per_vehicle_day=2,
        precision=6,
        queries=("speed",),
        noise_scale=5.0,
        mechanism="gaussian",
        neighbouring="add-remove",
        selection="public-threshold",
        selection_epsilon=3.5,
    )
    r = release_hats(data, cfg, 1, EXACT)
    sd = r.privacy["noise_scale"]["count"]
    assert sd == pytest.approx(2.0217840, rel=1e-6)
    assert 1.959964 * sd < 4.0 < 2.0 * sd < 5.0  # the band: inside the plain interval's rule, below 2 sd
    table = r.speed.sort("noisy_vehicle_days")
    assert table["vehicle_days_ci95_low"].to_list() == pytest.approx(
        [4 - 1.959964 * sd, 5 - 1.959964 * sd], abs=1e-6
    )  # rounded to precision 6
    assert table["mean_speed"].to_list() == [None, pytest.approx(20.0)]
    assert r.privacy["means_withheld_small_noisy_count"] == 1


# --- the public extent's false-positive threshold, as applied ------------------------------------------------


@pytest.mark.parametrize(
    ("mechanism", "epsilon", "scale", "threshold", "below"),
    [("gaussian", 10.0, 0.8060117279415114, 2.5418088910562, 2), ("laplace", 2.0, 1.0, 7.0, 6)],
)
def test_an_extent_releases_only_counts_past_the_false_positive_threshold(
    mechanism: str, epsilon: float, scale: float, threshold: float, below: int
) -> None:
    """Mutations fp_threshold_gaussian_minus_1sd, fp_threshold_laplace_minus_1sd. Over the 62 HATs of the extent
    an empty HAT passes with probability 0.05 / 62: Gaussian t = sigma Phi^-1(1 - 0.05/62) = 2.54 (sigma 0.806),
    Laplace t = ceil(b ln(62 / 0.1)) = 7 (b 1). A HAT at ``below`` vehicle-days (1 sd under t or less) is not
    released; one sd lower a threshold would release it."""
    r = release_hats(fleet([30, below]), config(epsilon_per_day=epsilon, mechanism=mechanism, domain_bbox=SURAT),
                     1, EXACT)  # fmt: skip
    sel = r.privacy["selection"]
    assert sel["domain_hats"] == 62 and sel["noise_scale"] == pytest.approx(scale, rel=1e-12)
    assert sel["threshold_vehicle_days"] == pytest.approx(threshold, rel=1e-9)
    if mechanism == "gaussian":
        assert 62 * (1 - NormalDist(0, scale).cdf(threshold)) == pytest.approx(0.05, rel=1e-6)
        assert below > threshold - scale
    else:
        assert math.exp(-(threshold - 1) / scale) / 2 * 62 > 0.05 >= math.exp(-threshold / scale) / 2 * 62
        assert below > math.ceil(scale * (math.log(620) - math.sqrt(2)) - 1)
    assert shown(r) == {30.0: pytest.approx(20.0)}  # the HAT below t is not released at all


def test_a_public_extent_charges_k_hats_a_day_and_d_squared_over_the_window() -> None:
    """Mutations domain_gaussian_day_at_one_hat, domain_gaussian_window_sqrt_d, domain_laplace_day_at_one_hat.
    Gaussian counts over the extent,
    K = 4, D = 3 days, epsilon 10 a day: a vehicle-day moves K counts by 1, L2 sqrt K = 2, so the selection's rho
    a day is OpenDP's map at 2 / sigma (4 HATs' rho, not one's); over the window one vehicle moves them by
    D sqrt K = 6 (L2), so the window's rho is 9 x the day's (not the 3 x of an L2 distance sqrt(D K))."""
    import urbandp._privacy.dp_prelude as dp

    end = D0 + dt.timedelta(days=2)
    c = config(
        epsilon_per_day=10.0,
        mechanism="gaussian",
        domain_bbox=SURAT,
        max_hats_per_vehicle_day=4,
        contribution_bounding="truncate",
        end=end,
    )
    p = release_hats(fleet([30, 20]), c, 3, EXACT).privacy
    sigma = p["selection"]["noise_scale"]
    unit = dp.m.make_gaussian(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), 1.0)
    assert p["rho_per_day"]["selection"] == pytest.approx(float(unit.map(2.0 / sigma)), rel=1e-12)
    assert p["rho_per_hat_per_day"]["selection"] == pytest.approx(float(unit.map(1.0 / sigma)), rel=1e-12)
    day = p["rho_per_day"]["selection"] + p["rho_per_day"]["speed"]
    assert p["rho_per_window"] == pytest.approx(9.0 * day, rel=1e-9)
    # Laplace at the same K: b = K / 5 = 0.8 for half of epsilon 10, so a day's selection costs K / b = 5 (OpenDP's
    # discrete Laplace map at distance K), one HAT 1.25; over the window D x the day (pure DP, group privacy)
    c = config(
        epsilon_per_day=10.0, mechanism="laplace", domain_bbox=SURAT, max_hats_per_vehicle_day=4, end=end
    )
    p = release_hats(fleet([30, 20]), c, 3, EXACT).privacy
    assert p["selection"]["noise_scale"] == 0.8
    assert p["epsilon_per_day"]["selection"] == pytest.approx(5.0, rel=1e-12)
    assert p["epsilon_per_hat_per_day"]["selection"] == pytest.approx(1.25, rel=1e-12)
    assert p["epsilon_per_window"] == pytest.approx(30.0, rel=1e-12)


# --- no mean where the count's interval reaches 0 ------------------------------------------------------------


@pytest.mark.parametrize(("mechanism", "at_threshold"), [("gaussian", 6), ("laplace", 3)])
def test_a_count_at_the_selection_threshold_shows_no_mean(mechanism: str, at_threshold: int) -> None:
    """Mutation count_interval_reaches_0_threshold. DP selection, epsilon 10: the threshold is 6 (Gaussian) or 3
    (Laplace). A HAT whose noisy count sits at the threshold has a count interval, given selection, reaching 0
    (it may hold no vehicle): it is released without a mean, though it passes the 2 sd rule."""
    r = release_hats(fleet([60, at_threshold]), config(epsilon_per_day=10.0, mechanism=mechanism), 1, EXACT)
    assert r.privacy["selection"]["threshold_vehicle_days"] == at_threshold
    assert 2 * r.privacy["noise_scale"]["selection"] < at_threshold  # the 2 sd rule would show it
    table = r.speed.sort("noisy_vehicle_days")
    assert table["vehicle_days_ci95_low"].to_list()[0] == 0.0
    assert shown(r) == {float(at_threshold): None, 60.0: pytest.approx(20.0)}


@pytest.mark.parametrize(("mechanism", "passing"), [("gaussian", 2), ("laplace", 1)])
def test_a_route_domain_hat_just_past_the_threshold_shows_no_mean(
    mechanism: str, passing: int, tmp_path: Path
) -> None:
    """Mutation count_interval_reaches_0_route. A route domain of 4 cells releases every domain HAT; the
    false-positive threshold (1.81 Gaussian, 1 Laplace, epsilon 10) decides where a mean may be shown, and a
    HAT just past it has an interval reaching 0: no mean. The empty domain HAT is released as 0, no mean."""
    cells = tmp_path / "route-cells.txt"
    cells.write_text("".join(f"{c:x}\n" for c in CELLS))
    r = release_hats(fleet([60, passing]), config(epsilon_per_day=10.0, mechanism=mechanism, domain_cells=cells),
                     1, EXACT)  # fmt: skip
    sel = r.privacy["selection"]
    assert sel["every_domain_hat_released"] is True
    assert passing >= sel["threshold_vehicle_days"] > passing - 1
    assert 2 * sel["noise_scale"] <= passing  # the 2 sd rule would show it
    assert shown(r) == {0.0: None, float(passing): None, 60.0: pytest.approx(20.0)}


# --- composition of delta ------------------------------------------------------------------------------------


def test_loss_times_multiplies_every_part() -> None:
    """Mutation loss_times_delta_unmultiplied: k-fold basic composition multiplies epsilon, delta and rho."""
    one = Loss(epsilon=0.5, delta=2e-7, rho=0.125)
    three = one.times(3)
    assert (three.epsilon, three.delta, three.rho) == (1.5, pytest.approx(6e-7, rel=1e-15), 0.375)
    assert Loss(epsilon=1.0, delta=0.4).times(3).delta == 1.0  # capped at 1


def test_a_spanning_unit_s_default_window_composes_its_days() -> None:
    """Mutation default_window_one_day: a vehicle-day unit present on every day pays every day's loss (basic
    composition, Dwork and Roth 2014, Thm 3.16); a unit that lies in one day pays one day's."""
    from urbandp._privacy.session import ReleaseCharge

    day = Loss(epsilon=0.5, delta=1e-7)
    days = [dt.date(2024, 3, 4) + dt.timedelta(days=i) for i in range(3)]
    for unit, window in (("vehicle-day", Loss(1.5, 3e-7)), ("event", day)):
        charge = ReleaseCharge(None, None, unit=unit)
        charge.reserve(day, days, "laplace")
        assert charge.release_loss is not None
        got = charge.release_loss.window
        assert (got.epsilon, got.delta, got.rho) == (
            window.epsilon,
            pytest.approx(window.delta, rel=1e-15),
            0.0,
        )


# --- pooling's spread --------------------------------------------------------------------------------------------


def test_pool_fits_the_spread_at_the_q_profile_upper_bound() -> None:
    """Mutation pooling_tau_moment. Two H3 parents of 7 HATs each, every noise variance 4: each HAT's prior mean
    is the mean of its 6 siblings (variance 4/6), so with ``e = y - mu`` and ``s = 4 + 4/6`` the spread
    ``pool()`` fits is the tau^2 where ``sum e^2 / (tau^2 + s)`` meets the 5% quantile of chi-square(14)
    (Viechtbauer 2007), solved here on its own: 55.47, against 23.56 for the plain moment estimate
    ``mean(e^2 - s)``. The statistical level of the bound is measured in the pooling tests."""
    import h3
    from scipy.optimize import brentq
    from scipy.stats import chi2

    from urbandp.fleet._postprocess_pooling import pool

    parents = sorted(h3.grid_disk(h3.latlng_to_cell(30.27, -97.74, 6), 1))[:2]
    cells = [c for p in parents for c in sorted(h3.cell_to_children(p, 7))]  # 7 children each
    y = np.array([20.0, 24, 17, 29, 22, 15, 26, 30, 36, 27, 33, 41, 31, 38])
    var = np.full(14, 4.0)
    mu = np.concatenate([(g.sum() - g) / 6.0 for g in (y[:7], y[7:])])
    e2, s = (y - mu) ** 2, 4.0 + 4.0 / 6.0
    target = chi2.ppf(0.05, 14)
    bound = brentq(lambda t2: float(np.sum(e2 / (t2 + s))) - target, 0.0, 1e4, xtol=1e-12)
    moment = float(np.mean(e2 - s))
    assert (round(bound, 2), round(moment, 2)) == (55.47, 23.56)
    out = pool(y, var, cells, 65.0)
    assert out.tau == pytest.approx(math.sqrt(bound), rel=1e-8)


# --- delta guards, from Python -------------------------------------------------------------------------------


def test_a_session_alone_refuses_a_delta_above_the_limit() -> None:
    """Mutation session_delta_guard_removed: the ReleaseCharge's own guard, without any spec in front of it."""
    from urbandp._privacy.session import ReleaseCharge

    session = ReleaseCharge(None, None, unit="vehicle-day")
    with pytest.raises(InvalidParameterError, match=r"delta \(per unit and day\) 0.01 is above 1e-05"):
        session.check_loss(Loss(epsilon=1.0, delta=0.01))
    with pytest.raises(InvalidParameterError, match=r"delta \(per unit and day\) 0.01 is above 1e-05"):
        session.reserve(Loss(epsilon=1.0, delta=0.01), [D0], "test")
    assert not session.reserved
    assert session.check_loss(Loss(epsilon=1.0, delta=1e-6)) == []


def test_the_session_s_guards_at_their_limits() -> None:
    """Mutations guards_max_delta_x10, session_conversion_delta_guard_removed, guards_sane_epsilon_x2,
    guards_not_dp_refusal_removed: delta 1e-5 is accepted and 2e-5 refused (per unit and day, and as the zCDP
    conversion delta); epsilon 100 per vehicle-day is accepted and 150 refused, or with allow_meaningless_epsilon
    returned as a NOT DP reason, which a budget dataset refuses (nothing is opened: the store does not exist)."""
    from urbandp._privacy.session import ReleaseCharge

    alone = ReleaseCharge(None, None, unit="vehicle-day")
    assert alone.check_loss(Loss(epsilon=1.0, delta=1e-5)) == []
    with pytest.raises(InvalidParameterError, match=r"delta \(per unit and day\) 2e-05 is above 1e-05"):
        alone.check_loss(Loss(epsilon=1.0, delta=2e-5))
    zcdp = ReleaseCharge(None, None, unit="vehicle-day", conversion_delta=2e-5)
    with pytest.raises(InvalidParameterError, match="delta 2e-05 is above 1e-05") as err:
        zcdp.check_loss(Loss(rho=0.1))
    assert err.value.parameters == ("delta",)
    assert alone.check_loss(Loss(epsilon=100.0)) == []
    with pytest.raises(InvalidParameterError, match="epsilon 150 per vehicle-day is above 100") as err:
        alone.check_loss(Loss(epsilon=150.0))
    assert err.value.parameters == ("allow_meaningless_epsilon",)
    allowed = ReleaseCharge(None, None, unit="vehicle-day", allow_meaningless_epsilon=True)
    reasons = [
        "epsilon 150 per vehicle-day is above 100 (allow_meaningless_epsilon): no meaningful protection"
    ]
    assert allowed.check_loss(Loss(epsilon=150.0)) == reasons
    booked = ReleaseCharge(
        "fleetA", "/nonexistent/budget.sqlite", unit="vehicle-day", allow_meaningless_epsilon=True
    )
    with pytest.raises(InvalidParameterError, match="NOT differentially private") as err:
        booked.check_loss(Loss(epsilon=150.0))
    assert err.value.parameters == ("dataset", "allow_meaningless_epsilon")  # the quoted reason names it


def test_the_counts_release_refuses_a_delta_above_the_limit_before_reading_the_input() -> None:
    """Mutation counts_spec_delta_guard_removed: from Python, the refusal names the parameter and comes before
    the input is opened (the file does not exist)."""
    import urbandp as ud

    with pytest.raises(InvalidParameterError, match=r"delta 0\.5 is above 1e-05") as err:
        ud.counts.release("/nonexistent/events.csv", select_partitions=True, epsilon=1.0, delta=0.5)
    assert err.value.parameters == ("delta",)
