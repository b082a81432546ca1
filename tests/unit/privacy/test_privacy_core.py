"""The privacy core (issue 20): Loss composition and conversion, optimal composition, calibration, ReleaseCharge rules."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
import pytest

from urbandp._privacy.budget_store import STATUS_ABORTED, STATUS_COMMITTED, BudgetStore, DatasetCaps
from urbandp._privacy.guards import check_delta, meaningless_reasons
from urbandp._privacy.loss import Loss, homogeneous_delta, optimal_homogeneous_epsilon
from urbandp._privacy.mechanisms import Gaussian, Laplace, calibrate
from urbandp._privacy.noise import ExactNoiseForTesting, rho_for_epsilon, zcdp_epsilon
from urbandp._privacy.session import NoiseBeforeReservation, ReleaseCharge
from urbandp.errors import BudgetExceededError, InputError

D0 = dt.date(2024, 3, 4)


# --- Loss ------------------------------------------------------------------------------------------------------
def test_gaussian_tables_compose_in_rho_and_convert_once() -> None:
    """Three Gaussian tables at (1, 1e-6) each: adding the pairs states (3, 3e-6); summing rho and converting
    once at 1e-6 states 1.806 (issue 20 defect 4; the issue's 1.72 was at another delta)."""
    rho = rho_for_epsilon(1.0, 1e-6)
    assert zcdp_epsilon(rho, 1e-6) == pytest.approx(1.0, rel=1e-9)
    eps, delta, why = Loss.zcdp(rho).times(3).approx(1e-6)
    assert why is None and delta == 1e-6
    assert eps == pytest.approx(1.80641, abs=1e-4)
    assert eps < 3.0


def test_mixed_loss_adds_pure_part_after_conversion() -> None:
    eps, delta, _ = (Loss.zcdp(0.5) + Loss.pure(0.25)).approx(1e-6)
    assert eps == pytest.approx(zcdp_epsilon(0.5, 1e-6) + 0.25)
    assert delta == 1e-6
    assert (Loss.zcdp(0.5) + Loss.pure(0.25)).kind == "mixed"


def test_overflowing_conversion_gives_null_and_a_reason() -> None:
    assert Loss.zcdp(1e300).approx(1e-6) == (
        None,
        None,
        "rho 1e+300 overflows the conversion to (epsilon, delta)",
    )
    j = Loss.zcdp(1e300).to_json(1e-6)
    assert j["approx_epsilon"] is None and "overflows" in str(j["approx_reason"])
    assert Loss.zcdp(1.0).approx(None)[2] is not None  # no delta to convert at: said, not guessed


def test_rho_one_is_not_epsilon_one() -> None:
    """The store used to book "epsilon 1" for rho 1.0; at delta 1e-6 rho 1 is epsilon 7.77."""
    assert Loss.zcdp(1.0).approx(1e-6)[0] == pytest.approx(7.7662, abs=1e-3)


# --- optimal composition (Kairouz, Oh, Viswanath 2015) ---------------------------------------------------------
@pytest.mark.parametrize(
    ("epsilon", "cells", "expected"),
    [(1.0, 414, 272.193), (0.1, 414, 11.1475)],
)
def test_dp_map_cells_compose_optimally(epsilon: float, cells: int, expected: float) -> None:
    """The Kolkata 1 km map has 414 cells: 272 instead of 414 at 1 per cell, 11.1 instead of 41.4 at 0.1
    (delta 1e-6; the issue's 274 / 11.2 came from a discretised PLD accountant, an upper bound of this)."""
    got = optimal_homogeneous_epsilon(epsilon, cells, 1e-6)
    assert got == pytest.approx(expected, abs=2e-3)
    assert homogeneous_delta(epsilon, cells, got) <= 1e-6
    assert homogeneous_delta(epsilon, cells, got * (1 - 1e-6)) > 1e-6  # the smallest such epsilon


def test_optimal_composition_matches_its_closed_forms() -> None:
    # one mechanism: exactly epsilon; delta 0: the basic sum
    assert optimal_homogeneous_epsilon(0.7, 1, 1e-6) == 0.7
    assert optimal_homogeneous_epsilon(0.7, 20, 0.0) == pytest.approx(14.0)
    # two eps-DP mechanisms at delta(eps') for eps' = 0: P(loss = 2 eps)(1 - e^-2eps) = p^2 (1 - e^(-2 eps))
    e = 0.5
    p = math.exp(e) / (1 + math.exp(e))
    assert homogeneous_delta(e, 2, 0.0) == pytest.approx(p * p * (1 - math.exp(-2 * e)), rel=1e-12)


# --- mechanisms and calibration ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_calibration_is_the_smallest_scale_within_the_target(kind: str) -> None:
    m = calibrate(kind, 3.0, 0.7)
    loss = m.loss(3.0)
    got = loss.epsilon if kind == "laplace" else loss.rho
    assert got <= 0.7
    assert got == pytest.approx(0.7, rel=1e-9)


def test_mechanism_errors() -> None:
    assert Laplace(2.0).std == pytest.approx(2.0 * math.sqrt(2))
    assert Laplace(2.0).half_width() == pytest.approx(2.0 * math.log(20))
    assert Gaussian(2.0).half_width() == pytest.approx(2.0 * 1.959964, rel=1e-6)
    assert Laplace(1.0, discrete=True).loss(2).epsilon == pytest.approx(2.0)


# --- sanity limits -----------------------------------------------------------------------------------------------
def test_meaningless_losses_are_refused_or_labelled_not_dp() -> None:
    with pytest.raises(InputError, match="epsilon 1e\\+300 per event is above 100"):
        meaningless_reasons(Loss.pure(1e300), None, per="event", allow=False)
    with pytest.raises(InputError, match="rho 60 per vehicle-day is above 50"):
        meaningless_reasons(Loss.zcdp(60.0), 1e-6, per="vehicle-day", allow=False)
    reasons = meaningless_reasons(Loss.pure(math.inf), None, per="event", allow=True)
    assert reasons == [
        "the privacy loss per event cannot be stated (epsilon overflows a double) (allow_meaningless_epsilon): no "
        "meaningful protection"
    ]
    assert meaningless_reasons(Loss.pure(99.0), None, per="event", allow=False) == []


def test_large_delta_is_refused() -> None:
    with pytest.raises(InputError, match=r"--delta 0\.99 is above 1e-05"):
        check_delta(0.99, "--delta")
    check_delta(1e-5, "--delta")


# --- ReleaseCharge ------------------------------------------------------------------------------------------------------
def _store(tmp_path: Path, **caps: float) -> str:
    url = str(tmp_path / "b.sqlite")
    s = BudgetStore(url)
    s.init_dataset(DatasetCaps("bus", "vehicle-day", caps.get("eps", 10.0)))
    s.close()
    return url


def test_noise_before_reservation_is_a_bug() -> None:
    with ReleaseCharge(None, None, unit="event") as s, pytest.raises(NoiseBeforeReservation):
        s.noise.laplace(np.zeros(3), 1.0)


def test_a_zcdp_charge_is_booked_at_its_converted_epsilon(tmp_path: Path) -> None:
    """rho 1.0 at delta 1e-6 is epsilon 7.77: an epsilon cap of 5 per day refuses it (it used to pass as 1)."""
    url = _store(tmp_path, eps=5.0)
    with (
        pytest.raises(BudgetExceededError, match=r"asked epsilon=7\.76"),
        ReleaseCharge("bus", url, unit="vehicle-day", conversion_delta=1e-6) as s,
    ):
        s.reserve(Loss.zcdp(1.0), [D0], "gaussian")
    with ReleaseCharge("bus", url, unit="vehicle-day", conversion_delta=1e-6) as s:
        s.reserve(Loss.zcdp(0.1), [D0], "gaussian")
    store = BudgetStore(url)
    eps, rho = store.spend_per_day("bus")[D0.isoformat()]
    assert rho == pytest.approx(0.1)
    assert eps == pytest.approx(zcdp_epsilon(0.1, 1e-6))
    assert store.history("bus")[0]["delta_per_day"] == 1e-6


def test_nothing_said_is_printed_unless_committed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = _store(tmp_path)
    with pytest.raises(OSError), ReleaseCharge("bus", url, unit="vehicle-day") as s:
        s.reserve(Loss.pure(1.0), [D0], "laplace")
        noisy = s.noise.laplace(np.zeros(1), 1.0)
        s.say(f"largest noisy count {noisy[0]:.1f}")
        raise OSError("disk full while writing")
    assert capsys.readouterr().out == ""
    with ReleaseCharge("bus", url, unit="vehicle-day") as s:
        s.reserve(Loss.pure(1.0), [D0], "laplace")
        s.say("shown")
        assert capsys.readouterr().out == ""  # not yet: the charge is not committed
    assert capsys.readouterr().out == "shown\n"
    statuses = [h["status"] for h in BudgetStore(url).history("bus")]
    assert statuses == [STATUS_ABORTED, STATUS_COMMITTED]
    assert BudgetStore(url).spend_per_day("bus")[D0.isoformat()][0] == pytest.approx(2.0)  # never refunded


def test_the_cap_is_checked_before_any_noise() -> None:
    """A vehicle-day release on 3 days costs a vehicle on all of them 3 x epsilon (its window loss); an event lies
    in one day, so the same release costs it one day's epsilon (the window the store books and the cap reads)."""
    three = [D0, D0 + dt.timedelta(days=1), D0 + dt.timedelta(days=2)]
    with (
        pytest.raises(BudgetExceededError, match="costs epsilon 3, delta 0; the cap is epsilon 2"),
        ReleaseCharge(None, None, unit="vehicle-day", cap=Loss.pure(2.0)) as s,
    ):
        s.reserve(Loss.pure(1.0), three, "laplace")
    assert not s.noise_drawn
    with ReleaseCharge(None, None, unit="event", cap=Loss.pure(2.0)) as s:
        s.reserve(Loss.pure(1.0), three, "laplace")
    assert s.release_loss is not None and s.release_loss.window == Loss.pure(1.0)


def test_not_dp_release_refused_with_a_dataset(tmp_path: Path) -> None:
    url = _store(tmp_path)
    with (
        pytest.raises(InputError, match="NOT differentially private \\(K read from the data\\)"),
        ReleaseCharge("bus", url, unit="vehicle-day") as s,
    ):
        s.refuse_not_dp(["K read from the data"])
    assert BudgetStore(url).history("bus") == []
    ReleaseCharge(None, None, unit="vehicle-day").refuse_not_dp(["fine without a dataset"])


def test_release_help_reads_its_defaults_from_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    """The help of --min-vehicles-per-day once said 10 and the release used 3: both now come from the spec."""
    from typer.testing import CliRunner

    from urbandp.cli import app
    from urbandp.fleet._options import MIN_PER_DAY_DEFAULT, HatReleaseConfig

    monkeypatch.setenv("COLUMNS", "400")
    text = " ".join(CliRunner().invoke(app, ["release", "--help"]).output.split())
    assert f"default: {MIN_PER_DAY_DEFAULT['dp']:g} for DP selection" in text
    assert f"{MIN_PER_DAY_DEFAULT['public-threshold']:g} for public-threshold" in text
    cfg = HatReleaseConfig(noise_scale=1.0)
    assert cfg.min_per_day == MIN_PER_DAY_DEFAULT["dp"]
    assert f"(default: {HatReleaseConfig.model_fields['delta'].default:g})" in text


def test_every_additive_mechanism_implements_the_one_protocol() -> None:
    """Issue 20: Laplace, Gaussian (continuous and discrete) and the bounded Laplace are all a Mechanism: a loss at
    a sensitivity (as a Loss), an error, a draw and a description."""
    from urbandp._privacy.mechanisms import Mechanism
    from urbandp.sensing._bounded_laplace import BoundedLaplace

    bounded = BoundedLaplace(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=4.0)
    mechanisms = [Laplace(2.0), Laplace(2.0, discrete=True), Gaussian(3.0), Gaussian(3.0, discrete=True)]
    for m in [*mechanisms, bounded]:
        assert isinstance(m, Mechanism), m
        assert m.std > 0 and m.half_width() > 0 and m.describe()["mechanism"] == m.name
    assert (
        bounded.loss(1.0).epsilon == pytest.approx(1.0, rel=1e-6) and bounded.loss(1.0).epsilon <= 1.0 + 1e-9
    )


def test_the_selection_threshold_is_accounted_and_drawn_by_one_opendp_measurement() -> None:
    """The unknown-domain selection's cost per vehicle-day is OpenDP's threshold map at one vehicle-day, and its
    draw keeps exactly the counts at or above the threshold (exact test mode)."""
    import polars as pl

    from urbandp.fleet._measure_selection import (
        _threshold_measurement,
        calibrate_selection,
        measure_selection,
        threshold_distance,
    )

    for gaussian, budget in ((False, 1.0), (True, 0.5)):
        cal = calibrate_selection(
            gaussian=gaussian, k=4, days=1, budget=budget, delta=1e-7, min_per_day=0, domain_size=None
        )
        measurement = _threshold_measurement(cal.scale, int(cal.threshold), gaussian)
        cost, delta = measurement.map(threshold_distance(4, 1, gaussian))
        assert (cal.cost_day, cal.delta_day) == (float(cost), float(delta))
    t = int(cal.threshold)
    per_hat = pl.DataFrame({"cell": [1, 2, 3], "slot": [9, 9, 9], "n": [0, t, t + 5]})
    hats = measure_selection(cal, per_hat, ExactNoiseForTesting(acknowledge_not_private=True)).hats
    assert hats["cell"].to_list() == [2, 3] and hats["noisy_n"].to_list() == [t, t + 5]
