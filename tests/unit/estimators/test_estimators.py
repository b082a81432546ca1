"""Estimators: sensitivities, privacy accounting read from OpenDP's maps, exact answers, bad input."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from urbandp._experiments.synthetic_mean import itms_like_counts, synthetic_dataset
from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp.estimators import (
    ArrayAveraging,
    Baseline,
    Levy,
    Quantile,
    bestfit,
    eq1_argmax,
    paper_median,
    wraparound,
)
from urbandp.estimators._selection import noisy_max_scale, quantile_scale

EXACT = ExactNoiseForTesting(acknowledge_not_private=True)


def test_itms_like_profile_reproduces_every_published_number() -> None:
    # Paper section IV-B: m* = 417, sum m = 17166, med = 46, K = 160 (WRAPAROUND), K-bar = 164 (BESTFIT) with eq. (1).
    c = itms_like_counts()
    assert (int(c.max()), int(c.sum()), paper_median(c)) == (417, 17166, 46)
    m_ub = eq1_argmax(c)
    assert m_ub == 84
    assert wraparound(c, m_ub).n_arrays == 160
    assert bestfit(c, m_ub).n_arrays == 164
    # eq. (1)'s stationarity: K ~= 2 #{m_l > m_UB}
    assert abs(160 - 2 * int((c > m_ub).sum())) <= 2


def test_sensitivities_on_the_itms_like_hat() -> None:
    values = synthetic_dataset("itms-like")
    base = Baseline(upper=65.0).estimate(values, 1.0, EXACT)
    assert base.sensitivity == pytest.approx(65.0 * 417 / 17166, rel=1e-15)  # Delta_f = U m* / sum m
    wrap = ArrayAveraging(upper=65.0, grouping="wraparound", m_ub="eq1").estimate(values, 1.0, EXACT)
    best = ArrayAveraging(upper=65.0, grouping="bestfit", m_ub="eq1").estimate(values, 1.0, EXACT)
    assert (wrap.n_arrays, best.n_arrays, wrap.m_ub) == (160, 164, 84)
    assert wrap.sensitivity == pytest.approx(2 * 65.0 / 160, rel=1e-15)  # 2U/K
    assert best.sensitivity == pytest.approx(65.0 / 164, rel=1e-15)  # U/K-bar
    levy = Levy(upper=65.0).estimate(values, 1.0, EXACT)
    tau = 65.0 * math.sqrt(math.log(2 * 164 / 0.2) / (2 * 84))
    a, b = levy.interval
    assert 0.0 <= a < b <= 65.0 and b - a <= 3 * tau * (1 + 1e-12)  # mu-hat -/+ 3 tau / 2, within [0, U]
    assert levy.sensitivity == pytest.approx((b - a) / 164, rel=1e-12)  # (b - a)/K-bar


def test_lemma_iii_1_proxy_is_below_delta_f() -> None:
    c = itms_like_counts()
    delta_f = 65.0 * c.max() / c.sum()
    for m_ub in (paper_median(c), eq1_argmax(c), int(c.max())):
        proxy = 65.0 * m_ub / np.minimum(c, m_ub).sum()
        assert proxy <= delta_f + 1e-12


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_levy_spends_exactly_epsilon_per_opendp_maps(epsilon: float) -> None:
    values = synthetic_dataset("itms-like")
    est = Levy(upper=65.0)
    cost = est.privacy_cost(epsilon)
    assert [s.epsilon_budget for s in cost.steps] == [epsilon / 2, epsilon / 2]
    res = est.estimate(values, epsilon, OpenDPNoise())
    sel, lap = res.steps
    assert sel.d_in == 1.0 and sel.scale == pytest.approx(
        2 * 1 / (epsilon / 2), rel=1e-9
    )  # map: 2 d_in / scale
    assert sel.epsilon <= epsilon / 2 and sel.epsilon == pytest.approx(epsilon / 2, rel=1e-9)
    assert lap.epsilon <= epsilon / 2 and lap.epsilon == pytest.approx(epsilon / 2, rel=1e-9)
    assert res.epsilon_spent <= epsilon and res.epsilon_spent == pytest.approx(epsilon, rel=1e-9)
    assert res.noise_scale == pytest.approx(res.sensitivity / (epsilon / 2), rel=1e-9)
    assert res.counts_public and "Def. II.1" in res.neighbouring and res.is_private


@pytest.mark.parametrize(("grouping", "d_in"), [("bestfit", 2), ("wraparound", 4)])
def test_quantile_steps_and_scales(grouping: str, d_in: int) -> None:
    values = synthetic_dataset("itms-like")
    res = Quantile(upper=65.0, grouping=grouping, rule="fixed").estimate(values, 1.0, OpenDPNoise())
    q_lo, q_hi, lap = res.steps
    for q in (q_lo, q_hi):
        assert q.mechanism == "opendp.make_private_quantile"
        assert q.d_in == d_in  # symmetric distance: one unit moves `influence` array means
        assert q.scale == pytest.approx(d_in / 0.25, rel=1e-9)  # known size: map = d_in / scale
        assert q.epsilon <= 0.25 and q.epsilon == pytest.approx(0.25, rel=1e-9)
    assert lap.epsilon_budget == 0.5
    assert res.epsilon_spent == pytest.approx(1.0, rel=1e-9) and res.epsilon_spent <= 1.0
    assert [s.epsilon_budget for s in Quantile(upper=65.0).privacy_cost(1.0).steps] == [0.25, 0.25, 0.5]


def test_selection_scales_from_maps() -> None:
    assert noisy_max_scale(2, 0.5)[0] == pytest.approx(8.0, rel=1e-9)
    scale, eps = quantile_scale(10, [0.0, 1.0, 2.0], 0.1, 2, 0.5)
    assert scale == pytest.approx(4.0, rel=1e-9) and eps <= 0.5


def test_eps_dependent_levels() -> None:
    q = Quantile(upper=65.0, rule="eps-dependent")
    assert q.quantile_levels(0.5, 164) == (4 / 164, 1 - 4 / 164)  # ceil(2/0.5) = 4
    assert q.quantile_levels(1.5, 164) == (2 / 164, 1 - 2 / 164)  # ceil(2/1.5) = 2
    assert q.quantile_levels(0.5, 5) == (0.5, 0.5)  # capped


def test_exact_answers_on_a_hand_example() -> None:
    values = [np.array([10.0, 20.0, 30.0]), np.array([40.0]), np.array([5.0, 5.0]), np.array([70.0])]
    base = Baseline(upper=65.0).estimate(values, 1.0, EXACT)
    assert base.estimate == pytest.approx((10 + 20 + 30 + 40 + 5 + 5 + 65) / 7)  # 70 clipped to 65
    assert base.n_clipped == 1 and not base.is_private
    # median of counts [3, 1, 2, 1] is the 2nd largest = 2; BESTFIT arrays: [10,20] [5,5] [40,65] (u1 + u3)
    aa = ArrayAveraging(upper=65.0).estimate(values, 1.0, EXACT)
    assert (aa.m_ub, aa.n_arrays) == (2, 3)
    assert aa.estimate == pytest.approx((15.0 + 5.0 + 52.5) / 3)
    assert aa.sensitivity == pytest.approx(65.0 / 3)


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError):
        ArrayAveraging(upper=65.0, grouping="firstfit")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Levy(upper=-1.0)
    with pytest.raises(ValueError):
        Quantile(upper=65.0, rule="median")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Baseline(upper=65.0).estimate([np.array([1.0])], 0.0, EXACT)
    with pytest.raises(ValueError):
        Baseline(upper=65.0).estimate([np.array([])], 1.0, EXACT)
    with pytest.raises(ValueError):
        ArrayAveraging(upper=65.0, grouping="wraparound", m_ub=100).estimate([np.array([1.0])], 1.0, EXACT)


def test_release_code_cannot_reach_the_simulation() -> None:
    code = (
        "import importlib.util, sys\n"
        "import urbandp.estimators, urbandp.estimators._hat_means\n"
        "if importlib.util.find_spec('urbandp.fleet._hat_release') is not None:\n"
        "    import urbandp.fleet._hat_release\n"
        "bad = [m for m in sys.modules if m.startswith('urbandp._experiments')]\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_clipped_mean_accounting_and_exact_answer() -> None:
    from urbandp.estimators import ADD_REMOVE, ClippedMean

    est = ClippedMean(upper=60.0, m_cap=10)
    assert [s.epsilon_budget for s in est.privacy_cost(2.0).steps] == [0.5, 1.0, 0.5]
    assert [s.epsilon_budget for s in ClippedMean(upper=60.0, m_ub=3).privacy_cost(1.5).steps] == [1.0, 0.5]
    values = [np.array([10.0, 20.0, 30.0, 40.0]), np.array([50.0]), np.array([5.0, 5.0, 5.0])]
    exact = est.estimate(values, 1.0, EXACT)
    # median of counts [4, 1, 3] over candidates 1..10 is 3 -> keep 3 + 1 + 3 samples
    assert exact.m_ub == 3
    assert exact.estimate == pytest.approx((10 + 20 + 30 + 50 + 5 + 5 + 5) / 7)
    assert exact.sensitivity == pytest.approx(30.0 * 3)  # centred sum: (U/2) m_UB
    res = est.estimate(values, 1.0, OpenDPNoise())
    m_step, s_step, c_step = res.steps
    assert m_step.d_in == 1.0 and m_step.scale == pytest.approx(4.0, rel=1e-9)  # map: d_in / scale = 0.25
    assert s_step.scale == pytest.approx(30.0 * res.m_ub / 0.5, rel=1e-9)
    assert c_step.scale == pytest.approx(res.m_ub / 0.25, rel=1e-9)
    assert res.epsilon_spent <= 1.0 and res.epsilon_spent == pytest.approx(1.0, rel=1e-9)
    assert not res.counts_public and res.neighbouring == ADD_REMOVE
    assert 0.0 <= res.estimate <= 60.0
    empty = est.estimate([], 1.0, OpenDPNoise())  # an empty HAT of a public domain is released too
    assert empty.n_units == 0 and 0.0 <= empty.estimate <= 60.0 and empty.epsilon_spent == pytest.approx(1.0)
