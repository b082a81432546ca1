"""Sparse sampling (Cormode et al. ICDT 2012) has exactly the law of dense noise + suppression.

The sparse sampler draws from the OS CSPRNG, which cannot be seeded, so the statistical tests here are random:
each uses a significance level of 1e-7 (chi-square critical values from scipy): the 18 tests of a run raise a
false alarm about twice in ten million runs (at 1e-6 it was about 2e-5), while a shifted law (a wrong tail
probability, an off-by-one threshold) fails them for sure at these sample sizes. The exact parts (tail
probabilities, rank mapping, rounding thresholds) are checked deterministically against brute-force sums.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from urbandp._privacy.noise import OpenDPNoise
from urbandp.counts import CountDomain, CountsReleaseSpec
from urbandp.counts._exact_sampling import (
    _floor_resolve,
    bernoulli_process,
    floor_log_uniform,
    iv_precision,
    uniform_words,
)
from urbandp.counts._sparse import SparseJoint, integer_threshold, zero_cell_positions
from urbandp.counts._table_release import _release_counts
from urbandp.counts._tails import IntegerNoise, interval_bounds, tail_brute_force
from urbandp.errors import InputError

ALPHA = 1e-7
CASES = [
    ("discrete_laplace", 1.0, 18),
    ("discrete_laplace", 4.0, 18),
    ("discrete_laplace", 0.7, 3),
    ("discrete_laplace", 2.5, 1),
    ("discrete_gaussian", 3.0, 5),
    ("discrete_gaussian", 0.6, 1),
    ("discrete_gaussian", 50.0, 400),
]


@pytest.mark.parametrize(("mechanism", "scale", "t"), CASES)
def test_tail_probability_contains_the_brute_force_sum(mechanism: str, scale: float, t: int) -> None:
    lo, hi = interval_bounds(IntegerNoise(mechanism, scale).tail(t))
    exact = tail_brute_force(mechanism, scale, t)
    assert lo <= exact <= hi
    assert (hi - lo) / exact < Fraction(1, 10**40)  # 128-bit interval: about 40 correct digits


@pytest.mark.parametrize(("mechanism", "scale", "t"), CASES)
def test_skip_rate_is_log_of_one_minus_tail(mechanism: str, scale: float, t: int) -> None:
    lo, hi = interval_bounds(IntegerNoise(mechanism, scale).log_not_tail(t)(128))
    with mpmath.workdps(80):
        p = tail_brute_force(mechanism, scale, t)
        ref = mpmath.log(1 - mpmath.mpf(p.numerator) / p.denominator)
        assert mpmath.mpf(lo.numerator) / lo.denominator <= ref <= mpmath.mpf(hi.numerator) / hi.denominator


def test_laplace_closed_form_tail() -> None:
    # P(X >= t) = a^t / (1 + a), a = exp(-1/b): b = 1, t = 18 -> e^-18 / (1 + e^-1)
    assert IntegerNoise("discrete_laplace", 1.0).tail_float(18) == pytest.approx(
        math.exp(-18) / (1 + math.exp(-1)), rel=1e-14
    )


def test_integer_threshold_follows_rounding() -> None:
    assert integer_threshold(18.0, 0) == 18
    assert integer_threshold(17.5, 0) == 18
    assert integer_threshold(18.0, None) == 18
    assert integer_threshold(0.5, 0) == 1
    assert integer_threshold(-2.0, 0) == -2
    # rounding to tens (half to even): round(15, -1) = 20 >= 18 but round(14, -1) = 10
    assert integer_threshold(18.0, -1) == 15
    assert integer_threshold(1e6 + 0.5, -9) > 1e8  # rounding to 1e9: only values from 5e8 up reach it
    with pytest.raises(InputError, match=r"^precision must be an integer >= -9 and <= 15"):
        CountsReleaseSpec(epsilon=1.0, precision=-400)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=60))
def test_zero_cell_positions_brute_force(mask: list[bool]) -> None:
    nonzero = np.flatnonzero(np.array(mask)).astype(np.int64)
    zeros = np.flatnonzero(~np.array(mask))
    ranks = np.arange(zeros.size, dtype=np.int64)
    assert np.array_equal(zero_cell_positions(ranks, nonzero), zeros)


def _chi2_gof(observed: np.ndarray, expected_p: np.ndarray) -> float:
    """p-value of a chi-square goodness-of-fit test; categories with small expectations merged at the end."""
    n = observed.sum()
    exp = expected_p * n
    keep = exp >= 5
    obs2 = np.append(observed[keep], observed[~keep].sum())
    exp2 = np.append(exp[keep], exp[~keep].sum())
    if exp2[-1] < 5:
        obs2[-2] += obs2[-1]
        exp2[-2] += exp2[-1]
        obs2, exp2 = obs2[:-1], exp2[:-1]
    return float(stats.chisquare(obs2, exp2 * obs2.sum() / exp2.sum()).pvalue)


def test_geometric_gaps_have_the_exact_law() -> None:
    p = 0.2
    from mpmath import iv

    g = floor_log_uniform(40_000, lambda prec: iv.log(1 - iv.mpf(1) / 5), cap=10**9)
    k = np.arange(0, 60)
    pmf = (1 - p) ** k * p
    counts = np.bincount(np.minimum(g, 59), minlength=60)[:60]
    pmf[-1] = (1 - p) ** 59
    assert _chi2_gof(counts, pmf) > ALPHA


def test_exact_fallback_agrees_with_the_float_path() -> None:
    """The interval-arithmetic resolver agrees with plain floats wherever the word's interval decides clearly;
    where it does not (tiny words: U in [k, k+1) 2^-64 spans several answers) it stays inside the range."""
    log_rate = IntegerNoise("discrete_laplace", 3.0).log_not_tail(4)
    with iv_precision(128):
        rate_f = float(log_rate(128).mid)
    words = [int(w) for w in uniform_words(300)] + [1, 2, 2**64 - 1]
    checked = 0
    for w in words:
        exact = _floor_resolve(w, log_rate, cap=10**12)
        x_max = (math.log(w) - 64 * math.log(2)) / rate_f
        x_min = (math.log(w + 1) - 64 * math.log(2)) / rate_f
        assert math.floor(x_min - 1e-6) <= exact <= math.floor(x_max + 1e-6)
        if math.floor(x_min - 1e-6) == math.floor(x_max + 1e-6):
            checked += 1
            assert exact == math.floor(x_max)
    assert checked >= 290
    assert _floor_resolve(0, log_rate, cap=5) <= 5


@pytest.mark.parametrize(
    ("mechanism", "scale", "t"), [("discrete_laplace", 2.0, 3), ("discrete_gaussian", 2.0, 3)]
)
def test_tail_draws_have_the_conditional_law(mechanism: str, scale: float, t: int) -> None:
    law = IntegerNoise(mechanism, scale)
    x = law.sample_tail(t, 20_000)
    assert x.min() >= t
    ks = np.arange(t, t + 40)
    if mechanism == "discrete_laplace":
        w = np.exp(-ks / scale)
    else:
        w = np.exp(-(ks.astype(float) ** 2) / (2 * scale**2))
    pmf = w / w.sum()
    counts = np.bincount(x - t, minlength=40)[:40]
    assert _chi2_gof(counts, pmf) > ALPHA


def test_bernoulli_process_count_is_binomial() -> None:
    law = IntegerNoise("discrete_laplace", 2.0)
    p = law.tail_float(3)
    n_trials, runs = 50, 3_000
    sizes = np.array(
        [bernoulli_process(n_trials, law.log_not_tail(3), n_trials * p).size for _ in range(runs)]
    )
    pmf = stats.binom.pmf(np.arange(n_trials + 1), n_trials, p)
    assert _chi2_gof(np.bincount(sizes, minlength=n_trials + 1), pmf) > ALPHA


# ------------------------------------------------------------------ sparse vs dense, end to end


def tiny_domain() -> CountDomain:
    return CountDomain.from_json(
        {
            "days": ["2016-08-08"],
            "taps": ["on", "off"],
            "bin_minutes": 720,
            "places": {"bus": ["a", "b", "c"]},
        }
    )  # 1 x 2 x 2 x 3 = 12 cells


RAW = np.array([0, 0, 0, 4, 0, 0, 1, 0, 0, 0, 9, 0], dtype=np.int64)  # 9 zero cells


def _outcomes(config: CountsReleaseSpec, runs: int) -> np.ndarray:
    """(runs, 12) array: released value, or -999 for a suppressed cell."""
    d = tiny_domain()
    raw = RAW.reshape(d.shape)
    out = np.full((runs, d.n_cells), -999, dtype=np.int64)
    for r in range(runs):
        rel = _release_counts(raw, d, config)
        idx, vals = rel.published()
        out[r, idx] = vals.astype(np.int64)
    return out


def _two_sample_p(a: np.ndarray, b: np.ndarray) -> float:
    """Chi-square test of homogeneity between two samples of integer outcomes (rare values pooled)."""
    values = np.union1d(a, b)
    ca = np.array([(a == v).sum() for v in values])
    cb = np.array([(b == v).sum() for v in values])
    keep = (ca + cb) >= 10
    table = np.array([np.append(ca[keep], ca[~keep].sum()), np.append(cb[keep], cb[~keep].sum())])
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return 1.0
    return float(stats.chi2_contingency(table)[1])


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_sparse_release_has_the_law_of_dense_then_suppress(mechanism: str) -> None:
    runs = 1500 if mechanism == "laplace" else 800
    common = {"mechanism": mechanism, "noise_scale": 2.0, "suppress_below": 3.0}
    if mechanism == "gaussian":
        common["delta"] = 1e-6
    sparse = _outcomes(CountsReleaseSpec(sampling="sparse", **common), runs)  # type: ignore[arg-type]
    dense = _outcomes(CountsReleaseSpec(sampling="dense", **common), runs)  # type: ignore[arg-type]
    zero_cells = np.flatnonzero(RAW == 0)
    # each non-zero cell: same law of (suppressed, value)
    for c in np.flatnonzero(RAW):
        assert _two_sample_p(sparse[:, c], dense[:, c]) > ALPHA, c
    # zero cells, pooled (they share one law): same law, and P(published) = P(X >= 3) exactly
    assert _two_sample_p(sparse[:, zero_cells].ravel(), dense[:, zero_cells].ravel()) > ALPHA
    law = IntegerNoise("discrete_" + mechanism, 2.0)
    p = law.tail_float(3)
    n_pub = (sparse[:, zero_cells] != -999).sum(axis=1)  # published zero cells per run
    pmf = stats.binom.pmf(np.arange(zero_cells.size + 1), zero_cells.size, p)
    assert _chi2_gof(np.bincount(n_pub, minlength=zero_cells.size + 1), pmf) > ALPHA
    n_pub_dense = (dense[:, zero_cells] != -999).sum(axis=1)
    assert _chi2_gof(np.bincount(n_pub_dense, minlength=zero_cells.size + 1), pmf) > ALPHA
    # which zero cells: uniform (each zero cell published equally often)
    per_cell = (sparse[:, zero_cells] != -999).sum(axis=0)
    assert stats.chisquare(per_cell).pvalue > ALPHA


def test_sparse_input_and_marginals() -> None:
    d = tiny_domain()
    joint = SparseJoint.from_dense(RAW.reshape(d.shape))
    assert np.array_equal(joint.to_dense().ravel(), RAW) and joint.n_zero == 9
    rel = _release_counts(joint, d, CountsReleaseSpec(noise_scale=1.0, suppress_below=3, sampling="sparse"))
    assert rel.joint is None and rel.cells is not None
    _idx, vals = rel.published()
    assert (vals >= 3).all()
    assert rel.privacy["sampling"] == "sparse"
    assert rel.privacy["marginals"] == "derived_from_published_joint"
    # published-joint marginals are sums of the published cells
    assert rel.location.sum() == pytest.approx(vals.sum())
    assert rel.privacy["epsilon"] == 1.0 and rel.privacy["total_epsilon"] == 1.0
    # how many published cells are raw zeros would say which ones are noise only: never in privacy.json
    assert "zero_cells_published" not in str(rel.privacy)
    sup = rel.privacy["suppression"]
    p = math.exp(-3) / (1 + math.exp(-1))  # discrete Laplace(1): P(X >= 3) = a^3 / (1 + a)
    assert sup["noise_only_publish_probability"] == pytest.approx(p, rel=1e-12)
    assert sup["expected_noise_only_cells_at_most"] == pytest.approx(12 * p, rel=1e-12)
    # smallest t with 12 P(X >= t) <= 1: 12 e^-t / (1 + e^-1) <= 1  ->  t >= ln(12 / 1.3679) = 2.17 -> 3
    assert sup["threshold_for_at_most_one_noise_only_cell"] == 3 and "warning" not in sup


def test_charged_marginals_are_charged_and_unbiased_in_exact_mode() -> None:
    from urbandp._privacy.noise import ExactNoiseForTesting

    d = tiny_domain()
    cfg = CountsReleaseSpec(noise_scale=1.0, suppress_below=3, sampling="sparse", marginal_epsilon=0.5)
    rel = _release_counts(RAW.reshape(d.shape), d, cfg)
    assert rel.privacy["marginals"] == "charged_noisy_marginals"
    assert rel.privacy["total_epsilon"] == pytest.approx(2.0)  # joint 1 + two marginals 0.5 each
    exact = _release_counts(
        RAW.reshape(d.shape), d, cfg, noise=ExactNoiseForTesting(acknowledge_not_private=True)
    )
    assert np.array_equal(exact.location, RAW.reshape(d.shape).sum(axis=2))


def test_sampling_choice_and_refusals() -> None:
    def spec(**options: object) -> CountsReleaseSpec:
        return CountsReleaseSpec(**{"epsilon": 1.0, **options})

    assert spec(suppress_below=18, sampling="auto").resolved_sampling == "sparse"
    assert spec(sampling="auto").resolved_sampling == "dense"
    assert spec(suppress_below=-1, sampling="auto").resolved_sampling == "dense"
    assert spec(suppress_below=18, sampling="auto", consistent=True).resolved_sampling == "dense"
    with pytest.raises(InputError, match="needs suppress_below"):
        spec(sampling="sparse")
    with pytest.raises(InputError, match="DP method only"):
        spec(method="data61-2016", epsilon=None, noise_scale=1.4, sampling="sparse", suppress_below=18)
    with pytest.raises(InputError, match="above 0"):
        _ = spec(sampling="sparse", suppress_below=0).resolved_sampling
    with pytest.raises(InputError, match="noisy-joint"):
        _ = spec(sampling="sparse", suppress_below=5, marginals="noisy-joint").resolved_marginals
    for bad in (math.nan, math.inf):
        with pytest.raises(InputError, match="finite"):
            spec(threshold=bad)
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(InputError):
            spec(marginal_scale=bad)


def test_opendp_noise_source_is_used_for_nonzero_cells() -> None:
    assert OpenDPNoise.is_private


def test_per_card_window_is_days_times_epsilon() -> None:
    d = CountDomain.from_json(
        {"days": {"start": "2016-08-08", "end": "2016-08-14"}, "places": {"bus": ["a"]}}
    )
    raw = np.zeros(d.shape, dtype=np.int64)
    cfg = CountsReleaseSpec(epsilon=1.0, unit="card-day", max_events=4, suppress_below=18, sampling="sparse")
    w = _release_counts(raw, d, cfg).privacy["per_card_window"]
    assert w["days"] == 7 and w["epsilon"] == pytest.approx(7.0) and w["per_card_day_epsilon"] == 1.0
    ev = _release_counts(raw, d, CountsReleaseSpec(epsilon=1.0, sampling="dense")).privacy["per_card_window"]
    assert ev["epsilon"] is None and "does not bound" in ev["epsilon_reason"]
    g = CountsReleaseSpec(mechanism="gaussian", noise_scale=4.0, delta=1e-6, unit="card-day", max_events=4)
    gw = _release_counts(raw, d, g).privacy["per_card_window"]
    # zCDP adds over days: rho_card = 7 rho; its epsilon at the same delta is below 7 x the per-day epsilon
    assert gw["per_card_day_epsilon"] < gw["epsilon"] < 7 * gw["per_card_day_epsilon"]


def test_top_k_with_sparse_sampling_ranks_raw_place_totals_exactly_in_law() -> None:
    d = tiny_domain()
    rel = _release_counts(
        RAW.reshape(d.shape),
        d,
        CountsReleaseSpec(noise_scale=1.0, suppress_below=3, sampling="sparse", top_k=1, top_k_epsilon=50.0),
    )
    # place totals: a = 0, b = 4 + 9 = 13, c = 1 -> at epsilon 50 the noisy top-1 is b
    assert rel.top_k == [1] and rel.privacy["total_epsilon"] == pytest.approx(51.0)


def test_floor_log_uniform_with_a_rate_beyond_floats_returns_the_cap() -> None:
    """A skip rate L = ln(1 - p) with p below the smallest float (a huge threshold) used to overflow in floor()."""
    from mpmath import iv

    from urbandp.counts._exact_sampling import floor_log_uniform

    draws = floor_log_uniform(5, lambda prec: -iv.exp(-iv.mpf(10**4)), cap=1000)
    assert draws.tolist() == [1000] * 5
