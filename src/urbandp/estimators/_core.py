"""User-level private mean estimators: BASELINE, ARRAY-AVERAGING, LEVY and QUANTILE.

Gupta, Rameshwar, Tandon, Chakraborty, *Mean Estimation with User-Level Privacy for Spatio-Temporal IoT
Datasets* (sections II-III). scikit-learn style: parameters go to the (frozen, validated) constructor, the work
is one call, :meth:`estimate`, and :meth:`privacy_cost` says what a call will cost before it runs.

Privacy unit and relation (docs/estimators.md, "Privacy: neighbouring relation, what is public"): one *unit* is
one "user" of the paper (a vehicle, or a vehicle-day in a release), and the guarantee is Def. II.1, replace-one
unit's values with the units and their counts ``m_l`` public (section II-C). ``m_UB``, the grouping plan, ``tau``
and every sensitivity read the counts only, so they cost nothing and are *not* protected; every
:class:`MeanEstimate` says so (``counts_public=True``). :class:`ClippedMean` (not in the paper) is the alternative
that is DP under add/remove-one-unit.

Values are clipped to ``[0, upper]`` first (a per-sample map that needs no privacy).

Noise: the final Laplace step draws from the :class:`~urbandp._privacy.noise.NoiseSource` passed in
(:class:`~urbandp._privacy.noise.OpenDPNoise` for releases); the selection steps (LEVY's interval, QUANTILE's
quantiles) call OpenDP directly. With a non-private noise source (tests only) the selections are exact too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

import numpy as np

from urbandp._privacy.mechanisms import laplace_epsilon, laplace_scale
from urbandp._privacy.noise import NoiseSource
from urbandp.estimators._bounds import M_UB_RULES, choose_m_ub
from urbandp.estimators._grouping import GROUPINGS, PLANS, GroupingPlan
from urbandp.estimators._selection import (
    best_candidate,
    calibrate_scale,
    noisy_max_scale,
    private_argmax,
    private_quantile,
    quantile_measurement,
    quantile_scale,
)

NEIGHBOURING = "replace-one-unit-values (paper Def. II.1: units and their counts m_l fixed and public)"


@dataclass(frozen=True)
class PrivacyStep:
    """One mechanism inside an estimator.

    ``epsilon_budget`` is the share of epsilon the paper assigns to the step; ``epsilon`` is what OpenDP's map
    says the calibrated step costs (``None`` in a dry run, before the counts are known), ``d_in`` the distance fed
    to the map (a sensitivity for Laplace), ``scale`` the calibrated noise scale.
    """

    name: str
    mechanism: str
    epsilon_budget: float
    epsilon: float | None = None
    d_in: float | None = None
    scale: float | None = None


@dataclass(frozen=True)
class PrivacyCost:
    """What an estimator costs for a requested epsilon (sequential composition of its steps)."""

    estimator: str
    epsilon: float
    steps: tuple[PrivacyStep, ...]
    neighbouring: str = NEIGHBOURING
    counts_public: bool = True


@dataclass(frozen=True)
class MeanEstimate:
    """The released mean and everything that was done to get it."""

    estimator: str
    estimate: float
    epsilon: float
    epsilon_spent: float
    noise_scale: float
    sensitivity: float
    n_units: int
    n_samples: int
    n_clipped: int
    m_ub: int | None
    n_arrays: int | None
    grouping: str | None
    interval: tuple[float, float]
    steps: tuple[PrivacyStep, ...]
    is_private: bool
    counts_public: bool = True
    neighbouring: str = NEIGHBOURING


@dataclass(frozen=True)
class Prepared:
    """The deterministic, noise-free part of an estimator on one dataset (shared with the Monte Carlo code)."""

    values: tuple[np.ndarray, ...]
    counts: np.ndarray
    n_clipped: int
    true_mean: float
    plan: GroupingPlan | None = None
    array_means: np.ndarray = field(default_factory=lambda: np.zeros(0))


def _mean_estimate(
    name: str,
    prep: Prepared,
    estimate: float,
    eps: float,
    steps: Sequence[PrivacyStep],
    final: PrivacyStep,
    interval: tuple[float, float],
    noise: NoiseSource,
    m_ub: int | None = None,
    *,
    public: bool = True,
) -> MeanEstimate:
    """The result of every estimator: the loss spent is the sum of its ``steps``, the noise scale and sensitivity
    are those of its ``final`` step, the counts and the grouping plan (``m_ub`` where there is none) are read from
    ``prep`` (public under Def. II.1 only: ``public`` False for CLIPPED-MEAN, add/remove-one-unit)."""
    plan = prep.plan
    return MeanEstimate(
        name,
        estimate,
        eps,
        math.fsum(float(s.epsilon or 0.0) for s in steps),
        float(final.scale or 0.0),
        float(final.d_in or 0.0),
        int(prep.counts.size),
        int(prep.counts.sum()),
        prep.n_clipped,
        m_ub if plan is None else plan.m_ub,
        None if plan is None else plan.n_arrays,
        None if plan is None else plan.strategy,
        interval,
        tuple(steps),
        bool(noise.is_private),
        counts_public=public,
        neighbouring=NEIGHBOURING if public else ADD_REMOVE,
    )


def _check_epsilon(epsilon: float) -> float:
    eps = float(epsilon)
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon}")
    return eps


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@dataclass(frozen=True)
class _Estimator:
    """Shared validation and preparation."""

    upper: float
    name: ClassVar[str] = "?"
    EMPTY_OK: ClassVar[bool] = False
    """Whether the estimator releases a HAT without any unit (a public domain's unvisited HAT)."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.upper) and self.upper > 0):
            raise ValueError(f"upper must be finite and > 0, got {self.upper}")

    def prepare(self, values_per_unit: Sequence[np.ndarray]) -> Prepared:
        """Each unit's values clipped to ``[0, upper]`` (a unit with no samples is not in the HAT)."""
        units = [np.asarray(v, dtype=float).ravel() for v in values_per_unit]
        units = [a for a in units if a.size]
        if not all(np.all(np.isfinite(a)) for a in units):
            raise ValueError("values must be finite")
        if not units and not self.EMPTY_OK:
            raise ValueError("no unit has any sample")
        values = tuple(np.clip(a, 0.0, self.upper) for a in units)
        n_clipped = sum(int(np.count_nonzero(c != a)) for c, a in zip(values, units, strict=True))
        counts = np.array([v.size for v in values], dtype=np.int64)
        n = int(counts.sum())
        true_mean = math.fsum(float(v.sum()) for v in values) / n if n else math.nan
        return Prepared(values=values, counts=counts, n_clipped=n_clipped, true_mean=true_mean)

    STEPS: ClassVar[tuple[tuple[str, str, float], ...]] = ()
    """The estimator's noisy steps in order: (step, OpenDP constructor, its share of epsilon)."""

    @property
    def label(self) -> str:
        """The estimator's name in its results (the paper's name of the variant)."""
        return self.name

    def privacy_cost(self, epsilon: float) -> PrivacyCost:
        """The planned loss: ``epsilon`` shared between :attr:`STEPS` (sequential composition)."""
        eps = _check_epsilon(epsilon)
        return PrivacyCost(
            self.label, eps, tuple(PrivacyStep(n, m, eps * share) for n, m, share in self.STEPS)
        )

    def estimate(
        self, values_per_unit: Sequence[np.ndarray], epsilon: float, noise: NoiseSource
    ) -> MeanEstimate:
        """The released mean of ``values_per_unit`` (one array per unit) at ``epsilon``, drawn from ``noise``."""
        eps = _check_epsilon(epsilon)
        return self._estimate(self.prepare(values_per_unit), eps, noise)

    def _estimate(self, prep: Prepared, eps: float, noise: NoiseSource) -> MeanEstimate:  # pragma: no cover
        raise NotImplementedError

    def _laplace_step(
        self, planned: PrivacyStep, value: float, sensitivity: float, noise: NoiseSource
    ) -> tuple[float, PrivacyStep]:
        """``value`` plus Laplace noise calibrated to the ``planned`` step's share of epsilon, and the step."""
        scale = laplace_scale(sensitivity, planned.epsilon_budget) if sensitivity > 0 else 0.0
        spent = laplace_epsilon(sensitivity, scale) if sensitivity > 0 else 0.0
        out = float(noise.laplace(np.array([value]), scale)[0]) if scale > 0 else float(value)
        return out, replace(planned, epsilon=spent, d_in=sensitivity, scale=scale)

    def _one_step(
        self, prep: Prepared, eps: float, value: float, sensitivity: float, noise: NoiseSource
    ) -> MeanEstimate:
        """A one-step estimator's result: ``value`` plus Laplace noise for ``sensitivity`` with all of ``eps``."""
        out, step = self._laplace_step(self.privacy_cost(eps).steps[0], value, sensitivity, noise)
        return _mean_estimate(self.name, prep, out, eps, (step,), step, (0.0, float(self.upper)), noise)


@dataclass(frozen=True)
class Baseline(_Estimator):
    """BASELINE (section III-B): ``f(D) + Lap(Delta_f / epsilon)``, ``Delta_f = U m^* / sum_l m_l``."""

    name: ClassVar[str] = "BASELINE"

    STEPS: ClassVar[tuple[tuple[str, str, float], ...]] = (("mean", "opendp.make_laplace", 1.0),)

    def sensitivity(self, counts: np.ndarray) -> float:
        return float(self.upper) * int(np.max(counts)) / int(np.sum(counts))

    def _estimate(self, prep: Prepared, eps: float, noise: NoiseSource) -> MeanEstimate:
        return self._one_step(prep, eps, prep.true_mean, self.sensitivity(prep.counts), noise)


@dataclass(frozen=True)
class _Grouped(_Estimator):
    grouping: Literal["wraparound", "bestfit"] = "bestfit"
    m_ub: str | int = "median"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.grouping not in GROUPINGS:
            raise ValueError(f"grouping must be one of {GROUPINGS}, got {self.grouping!r}")
        if not (self.m_ub in M_UB_RULES or _positive_int(self.m_ub)):
            raise ValueError(f"m_ub must be 'median', 'eq1' or a positive int, got {self.m_ub!r}")

    def prepare(self, values_per_unit: Sequence[np.ndarray]) -> Prepared:
        base = super().prepare(values_per_unit)
        m_ub = choose_m_ub(self.m_ub, base.counts)
        plan = PLANS[self.grouping](base.counts, m_ub)
        if plan.n_arrays == 0:
            raise ValueError(
                f"no full array of length m_UB={m_ub} (total samples {int(base.counts.sum())}); use BESTFIT or a smaller m_ub"
            )
        return replace(base, plan=plan, array_means=plan.array_means(base.values))


@dataclass(frozen=True)
class ArrayAveraging(_Grouped):
    """ARRAY-AVERAGING (section III-C): mean of the array means plus ``Lap(Delta / epsilon)``.

    ``Delta = 2U/K`` with WRAPAROUND (a unit touches two arrays), ``U/K-bar`` with BESTFIT. ``m_ub="median"``
    (Lemma III.2, the paper's choice for this algorithm) or ``"eq1"`` (eq. (1)) or a public integer.
    """

    name: ClassVar[str] = "ARRAY-AVERAGING"

    STEPS: ClassVar[tuple[tuple[str, str, float], ...]] = (
        ("mean of array means", "opendp.make_laplace", 1.0),
    )

    def sensitivity(self, plan: GroupingPlan) -> float:
        return plan.influence * float(self.upper) / plan.n_arrays

    def _estimate(self, prep: Prepared, eps: float, noise: NoiseSource) -> MeanEstimate:
        plan = prep.plan
        assert plan is not None
        return self._one_step(prep, eps, float(np.mean(prep.array_means)), self.sensitivity(plan), noise)


def clipped_mean(array_means: np.ndarray, low: float, high: float) -> float:
    """``(1/n) sum_i Pi_[low, high](A-bar_i)`` (sections III-D and III-E)."""
    return float(np.mean(np.clip(array_means, low, high)))


@dataclass(frozen=True)
class Levy(_Grouped):
    """LEVY (section III-D): private interval ``[a, b]`` with ``epsilon/2``, projection, ``Lap(2 Delta/epsilon)``.

    ``tau = U sqrt(log(2K/gamma) / (2 m_UB))`` (Hoeffding heuristic, ``K`` = number of arrays); ``(0, U]`` is cut
    into ``ceil(U/tau)`` bins of width ``tau``; OpenDP's noisy max picks the most populated bin of the array means
    (our reading of Levy et al.'s Algorithm 6: the winning bin holds the median w.h.p. when the means are
    ``(tau, gamma)``-concentrated); ``mu-hat`` is its centre and ``[a, b] = [mu-hat - 3 tau/2, mu-hat + 3 tau/2]``
    intersected with ``[0, U]`` (the array means lie there anyway, so the intersection only shrinks the
    sensitivity). ``Delta = influence (b - a) / n_arrays``. ``m_ub`` defaults to eq. (1) as in the paper.
    """

    name: ClassVar[str] = "LEVY"
    m_ub: str | int = "eq1"
    gamma: float = 0.2

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (0 < self.gamma < 1):
            raise ValueError(f"gamma must be in (0, 1), got {self.gamma}")

    STEPS: ClassVar[tuple[tuple[str, str, float], ...]] = (
        ("interval: noisy max over tau-bins", "opendp.make_noisy_max", 0.5),
        ("clipped mean of array means", "opendp.make_laplace", 0.5),
    )

    def tau(self, plan: GroupingPlan) -> float:
        return float(self.upper) * math.sqrt(math.log(2 * plan.n_arrays / self.gamma) / (2 * plan.m_ub))

    def bins(self, plan: GroupingPlan) -> tuple[float, int]:
        """``(tau, number of bins)``."""
        tau = self.tau(plan)
        return tau, max(1, math.ceil(float(self.upper) / tau))

    def bin_counts(self, array_means: np.ndarray, tau: float, n_bins: int) -> np.ndarray:
        """Histogram of the array means over the bins ``(i tau, (i+1) tau]`` (0 goes to the first bin)."""
        idx = np.clip(np.ceil(array_means / tau).astype(np.int64) - 1, 0, n_bins - 1)
        return np.bincount(idx, minlength=n_bins)

    def interval(self, bin_index: int, tau: float) -> tuple[float, float]:
        centre = (bin_index + 0.5) * tau
        return max(0.0, centre - 1.5 * tau), min(float(self.upper), centre + 1.5 * tau)

    def _estimate(self, prep: Prepared, eps: float, noise: NoiseSource) -> MeanEstimate:
        plan = prep.plan
        assert plan is not None
        tau, n_bins = self.bins(plan)
        counts = self.bin_counts(prep.array_means, tau, n_bins)
        pick, mean = self.privacy_cost(eps).steps
        sel_scale, sel_eps = noisy_max_scale(plan.influence, pick.epsilon_budget)
        chosen = private_argmax(counts, sel_scale, private=bool(noise.is_private))
        sel = replace(pick, epsilon=sel_eps, d_in=float(plan.influence), scale=sel_scale)
        a, b = self.interval(chosen, tau)
        delta = plan.influence * (b - a) / plan.n_arrays
        out, lap = self._laplace_step(mean, clipped_mean(prep.array_means, a, b), delta, noise)
        return _mean_estimate(self.name, prep, out, eps, (sel, lap), lap, (a, b), noise)


@dataclass(frozen=True)
class Quantile(_Grouped):
    """QUANTILE (section III-E): private ``[a', b']`` from two private quantiles (``epsilon/4`` each, OpenDP's
    ``make_private_quantile`` over ``n_candidates`` equally spaced public candidates in ``[0, U]``), projection of
    the array means, and ``Lap(2 Delta/epsilon)`` with ``Delta = influence (b' - a') / n_arrays``.

    ``rule="fixed"``: FIXEDQUANTILE, the (0.1, 0.9) inter-quantile interval. ``rule="eps-dependent"``:
    eps-DEPENDENTQUANTILE, levels ``q = ceil(2/epsilon) / n_arrays`` and ``1 - q`` (Amin et al. 2019's argument);
    ``q`` is capped at 0.5 when there are fewer than ``2 ceil(2/epsilon)`` arrays. If the two draws come out in
    the wrong order they are swapped (post-processing).
    """

    name: ClassVar[str] = "QUANTILE"
    m_ub: str | int = "eq1"
    rule: Literal["fixed", "eps-dependent"] = "fixed"
    levels: tuple[float, float] = (0.1, 0.9)
    n_candidates: int = 1001

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rule not in ("fixed", "eps-dependent"):
            raise ValueError(f"rule must be 'fixed' or 'eps-dependent', got {self.rule!r}")
        lo, hi = self.levels
        if not (0 <= lo < hi <= 1):
            raise ValueError(f"levels must satisfy 0 <= low < high <= 1, got {self.levels}")
        if self.n_candidates < 2:
            raise ValueError("n_candidates must be >= 2")

    @property
    def label(self) -> str:
        return "FIXEDQUANTILE" if self.rule == "fixed" else "EPS-DEPENDENTQUANTILE"

    STEPS: ClassVar[tuple[tuple[str, str, float], ...]] = (
        ("lower quantile", "opendp.make_private_quantile", 0.25),
        ("upper quantile", "opendp.make_private_quantile", 0.25),
        ("clipped mean of array means", "opendp.make_laplace", 0.5),
    )

    def candidates(self) -> np.ndarray:
        return np.linspace(0.0, float(self.upper), int(self.n_candidates))

    def quantile_levels(self, epsilon: float, n_arrays: int) -> tuple[float, float]:
        if self.rule == "fixed":
            return self.levels
        q = min(0.5, math.ceil(2.0 / epsilon) / n_arrays)
        return q, 1.0 - q

    def _estimate(self, prep: Prepared, eps: float, noise: NoiseSource) -> MeanEstimate:
        plan = prep.plan
        assert plan is not None
        cands = self.candidates()
        d_in = 2 * plan.influence
        *quantiles, mean = self.privacy_cost(eps).steps
        steps: list[PrivacyStep] = []
        ends: list[float] = []
        for planned, alpha in zip(quantiles, self.quantile_levels(eps, plan.n_arrays), strict=True):
            scale, spent = quantile_scale(plan.n_arrays, cands, alpha, d_in, planned.epsilon_budget)
            ends.append(
                private_quantile(prep.array_means, cands, alpha, scale, private=bool(noise.is_private))
            )
            name = f"{planned.name} (alpha={alpha:.6g})"
            steps.append(replace(planned, name=name, epsilon=spent, d_in=float(d_in), scale=scale))
        a, b = min(ends), max(ends)
        delta = plan.influence * (b - a) / plan.n_arrays
        out, lap = self._laplace_step(mean, clipped_mean(prep.array_means, a, b), delta, noise)
        steps.append(lap)
        return _mean_estimate(self.label, prep, out, eps, steps, lap, (a, b), noise)


ADD_REMOVE = "add/remove-one-unit (all of a unit's samples; its presence and count are protected)"


@dataclass(frozen=True)
class ClippedMean(_Estimator):
    """CLIPPED-MEAN: the counts-private alternative (not in the paper; our corrected default for strict releases).

    Differentially private under **add/remove-one-unit** (a unit's presence, count and values are all protected;
    ``counts_public=False``), where the paper's estimators are not (their ``m_UB``, grouping and sensitivities move
    with one unit's count). Steps, composed sequentially:

    1. ``m_UB``: with ``m_ub="dp-median"``, OpenDP's ``make_private_quantile`` (alpha = 0.5, the median the paper
       recommends in Lemma III.2) over the public candidates ``1..m_cap`` of the counts, ``epsilon/4``
       (symmetric distance 1 per added/removed unit). A public integer ``m_ub`` skips this step.
    2. Every unit keeps its first ``min(m_l, m_UB)`` samples. Centred sum ``sum (s - U/2)``: Laplace with
       sensitivity ``(U/2) m_UB``, ``epsilon/2`` (``2 epsilon/3`` with a public ``m_ub``).
    3. Kept count ``sum min(m_l, m_UB)``: Laplace with sensitivity ``m_UB``, ``epsilon/4`` (``epsilon/3``).

    Release ``U/2 + noisy sum / max(noisy count, 1)`` clipped to ``[0, U]`` (post-processing). Also works on an
    empty HAT (no units), so a public HAT domain can be released without revealing which HATs were visited.
    """

    name: ClassVar[str] = "CLIPPED-MEAN"
    EMPTY_OK: ClassVar[bool] = True
    m_ub: str | int = "dp-median"
    m_cap: int = 1000

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (self.m_ub == "dp-median" or _positive_int(self.m_ub)):
            raise ValueError(f"m_ub must be 'dp-median' or a positive int, got {self.m_ub!r}")
        if self.m_cap < 1:
            raise ValueError("m_cap must be >= 1")

    def shares(self) -> tuple[float, float, float]:
        """Fractions of epsilon for (m_UB, centred sum, count)."""
        return (0.25, 0.5, 0.25) if self.m_ub == "dp-median" else (0.0, 2.0 / 3.0, 1.0 / 3.0)

    def privacy_cost(self, epsilon: float) -> PrivacyCost:
        eps = _check_epsilon(epsilon)
        f_m, f_s, f_c = self.shares()
        steps = [
            PrivacyStep("centred clipped sum", "opendp.make_laplace", eps * f_s),
            PrivacyStep("clipped count", "opendp.make_laplace", eps * f_c),
        ]
        if f_m:
            steps.insert(
                0, PrivacyStep("m_UB: private median of counts", "opendp.make_private_quantile", eps * f_m)
            )
        return PrivacyCost(self.name, eps, tuple(steps), neighbouring=ADD_REMOVE, counts_public=False)

    def candidates(self) -> list[int]:
        return list(range(1, int(self.m_cap) + 1))

    def median_of_counts(self, scale: float) -> Any:
        """OpenDP's private median of the units' counts over :meth:`candidates` at ``scale`` (unknown size,
        symmetric distance)."""
        return quantile_measurement(self.candidates(), 0.5, scale, atom=int)

    def count_bound_scale(self, epsilon: float) -> tuple[float, float]:
        """Scale and mapped epsilon of the private median of counts (symmetric distance 1)."""
        return calibrate_scale(
            lambda scale: float(self.median_of_counts(scale).map(1)),
            epsilon * self.shares()[0],
            1.0 / (epsilon * self.shares()[0]),
        )

    def _estimate(self, prep: Prepared, eps: float, noise: NoiseSource) -> MeanEstimate:
        *bound, summed, counted = self.privacy_cost(eps).steps
        steps: list[PrivacyStep] = []
        if bound:
            scale, spent = self.count_bound_scale(eps)
            if noise.is_private:
                m_ub = int(self.median_of_counts(scale)([int(c) for c in prep.counts]))
            else:
                m_ub = int(best_candidate(prep.counts, self.candidates(), 0.5))
            steps.append(replace(bound[0], epsilon=spent, d_in=1.0, scale=scale))
        else:
            m_ub = int(self.m_ub)
        half = float(self.upper) / 2
        centred = math.fsum(float(np.sum(v[:m_ub] - half)) for v in prep.values)
        kept = int(np.minimum(prep.counts, m_ub).sum())
        noisy_sum, s_step = self._laplace_step(summed, centred, half * m_ub, noise)
        noisy_count, c_step = self._laplace_step(counted, float(kept), float(m_ub), noise)
        steps += [s_step, c_step]
        value = float(np.clip(half + noisy_sum / max(noisy_count, 1.0), 0.0, float(self.upper)))
        return _mean_estimate(
            self.name, prep, value, eps, steps, s_step, (0.0, float(self.upper)), noise, m_ub, public=False
        )


BY_NAME: dict[str, type[_Estimator]] = {
    "clipped-mean": ClippedMean,
    "baseline": Baseline,
    "array-averaging": ArrayAveraging,
    "levy": Levy,
    "quantile": Quantile,
}
"""The estimators by the name their callers use (the fleet's ``speed_estimator``, ``ud.estimators.release``)."""
ESTIMATORS: tuple[str, ...] = tuple(BY_NAME)
"""The estimators' names, the default (``clipped-mean``) first."""

PAPER_ESTIMATORS: tuple[str, ...] = ("baseline", "array-averaging", "levy", "quantile")
"""Gupta et al.'s four: DP under Def. II.1 only (units and their counts public)."""
