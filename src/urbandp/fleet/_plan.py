"""Step 1 of a fleet release (:mod:`urbandp.fleet._hat_release` runs the steps): the plan, fixed from public
parameters before any record is read. The planner (``urbandp plan``), the guardrails and the budget reservation
all read :func:`plan_release`, so what is reserved is what is spent.

The plan's mechanism is a :class:`~urbandp._privacy.mechanisms.Mechanism`: it never branches on the noise law to
draw or to cost. ITMS report sections III D-F; the split is derived in :func:`count_sum_split`.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from urbandp._privacy.loss import Loss, ReleaseLoss
from urbandp._privacy.mechanisms import Gaussian, Laplace, mechanism, smallest_scale
from urbandp._privacy.noise import rho_for_epsilon
from urbandp.errors import InputError
from urbandp.fleet._account_composition import top_k_sum
from urbandp.fleet._options import COARSEN_LEVELS, HatReleaseConfig

if TYPE_CHECKING:
    from urbandp.fleet._measure_selection import SelectionCalibration


@dataclass(frozen=True)
class ReleasePlan:
    """Public parameters of a release and the budget split, fixed before any data is read.

    ``budget`` and the shares below are those of the finest level (epsilon, or rho for Gaussian noise: both
    compose by addition). Under add/remove with DP selection one noisy count per HAT serves both the selection and
    the mean's denominator (``selection_budget``), so ``count_budget`` is 0. The total per vehicle-day is
    ``clip_budget + sum(level_budgets) = total_budget``; :meth:`for_level` gives the plan of one level.
    """

    mechanism: str  # "gaussian" | "laplace"
    k: int | None  # None: 'observed' (read from data, not DP)
    days: int
    budget: float | None  # per vehicle-day: epsilon (laplace) or rho (gaussian); None with --noise-scale
    selection_budget: float  # epsilon or rho of the selection's noisy count
    count_budget: float  # epsilon or rho of a fresh noisy count (only when selection gives none)
    conversion_delta: float | None  # gaussian: delta of the zCDP -> (epsilon, delta) conversion
    threshold_delta: float  # target delta of an unknown-domain threshold selection (per level)
    total_budget: float | None = None  # the whole per-day budget (epsilon or rho)
    clip_budget: float = 0.0  # epsilon or rho for the DP clip bound (clip_bound = dp-quantile)
    level_budgets: tuple[float, ...] = ()  # per release level, finest first
    speed_budget: float = math.nan  # Query 1's share of the level (nan: shared B with Query 2)
    speeding_budget: float = 0.0  # Query 2's share of the level (0: not asked for)
    split_rule: str = ""
    weight_norm: float = 1.0
    """A bound on the L2 norm of one vehicle-day's weights: 1, or for ``contribution_bounding = "l2"`` the next
    float above 1, since ``m * fl(1/sqrt(m))^2`` exceeds 1 by up to 4e-16 (for 1,189 values of m below 5,000)."""

    @property
    def gaussian(self) -> bool:
        return self.mechanism == "gaussian"

    @property
    def currency(self) -> str:
        """What the plan's budgets are counted in: ``rho`` (Gaussian, zCDP) or ``epsilon`` (Laplace)."""
        return "rho" if self.gaussian else "epsilon"

    def noise(self, scale: float) -> Laplace | Gaussian:
        """The plan's mechanism at ``scale`` (Laplace b or Gaussian sigma)."""
        return mechanism(self.mechanism, scale)

    def loss(self, cost: float, delta: float = 0.0) -> Loss:
        """A cost in the plan's currency (plus a delta, e.g. of a threshold) as a :class:`Loss`."""
        return Loss(rho=cost, delta=delta) if self.gaussian else Loss(epsilon=cost, delta=delta)

    def cost(self, sensitivity: float, scale: float) -> float:
        """Per-HAT cost from OpenDP's map, in the plan's currency (epsilon or rho), at the sensitivity times the
        weights' norm bound (:attr:`weight_norm`: a product that rounds up to at least the next float)."""
        return self.noise(scale).loss(sensitivity * self.weight_norm).amount

    def for_level(self, i: int) -> ReleasePlan:
        """The plan of release level ``i`` (0 = finest): every share scaled alike."""
        if i == 0 or not self.level_budgets:
            return self
        assert self.budget is not None
        ratio = self.level_budgets[i] / self.budget
        return replace(
            self,
            budget=self.level_budgets[i],
            selection_budget=self.selection_budget * ratio,
            count_budget=self.count_budget * ratio,
            speed_budget=self.speed_budget * ratio,
            speeding_budget=self.speeding_budget * ratio,
        )


SPEEDING_SHARE = 1.0 / 3.0
"""Share of a level's budget for Query 2 when it is asked for (``--queries speed,speeding``)."""


def count_sum_split(mechanism: str) -> float:
    """Share of the count in the (count + centred sum) budget that minimises the worst-case error of the mean.

    The released mean is ``U/2 + S~ / N~`` (S the sum of speeds centred in [-U/2, U/2]). At a HAT of ``n``
    vehicle-days its error is, to first order, ``(e_S - (mu - U/2) e_N) / n``, so its variance is
    ``(var_S + (mu - U/2)^2 var_N) / n^2``; the worst case over the unknown true mean ``mu`` in [0, U] is
    ``|mu - U/2| = U/2``, the sensitivity of the centred sum. Both noise variances fall with their budget:

    * Gaussian (zCDP, L2 over the K HATs of a vehicle-day): ``var_S = K (U/2)^2 / (2 rho_S)`` and
      ``var_N = K / (2 rho_N)`` (OpenDP's Gaussian threshold bounds the squared L2 norm by K too); minimising
      ``1 / rho_S + 1 / rho_N`` under ``rho_S + rho_N = rho`` gives an even split;
    * Laplace (L1 over K HATs): ``var_S = 2 (K U/2 / eps_S)^2``, ``var_N = 2 (K / eps_N)^2``; minimising
      ``1 / eps_S^2 + 1 / eps_N^2`` gives an even split too.

    The split reads only public parameters, holds at every n (the same for every released HAT) and U cancels
    out; the selection threshold then follows from the count's half. (The uncentred sum of the first version had
    sensitivity U: the same split then needs four times the rho for the same sum noise.)
    """
    return 0.5


def plan_release(cfg: HatReleaseConfig, days: int) -> ReleasePlan:
    """Plan a release from public parameters (cfg and D, the number of public days).

    Budget split (epsilon for Laplace, rho for Gaussian): ``clip_share`` of the total for a DP clip bound, then
    of the rest ``1 - coarsen_share`` for the finest level and ``coarsen_share / L`` for each of the L coarser
    levels. Inside a level (add/remove, report estimator): Query 2 gets :data:`SPEEDING_SHARE` when asked for, and
    the rest is split between the one noisy count (selection and denominator) and the centred sum by
    :func:`count_sum_split`. Under presence-public N is public: DP selection gets ``selection_fraction`` and the
    queries the rest. With unknown-domain threshold selection each level's threshold gets ``delta_sel / (L + 1)``.
    """
    if days < 1:
        raise InputError("the date window holds no day")
    mech = cfg.resolved_mechanism
    k = None if cfg.max_hats_per_vehicle_day == "observed" else int(cfg.max_hats_per_vehicle_day)
    if cfg.contribution_bounding == "l2":
        k = 1  # L2-normalised weights: the sensitivities of K = 1 (measure.l2_normalised)
    threshold_select = cfg.selection == "dp" and not cfg.public_domain
    n_levels = 1 + len(COARSEN_LEVELS[cfg.coarsen])
    if mech == "gaussian":
        conv = cfg.delta / 2 if threshold_select else cfg.delta
        threshold_delta = cfg.delta / 2 / n_levels
    else:
        conv, threshold_delta = None, cfg.delta / n_levels
    speeding_on = "speeding" in cfg.queries
    denominator = cfg.neighbouring == "add-remove" and cfg.speed_estimator == "report"  # N~ divides the sum
    if cfg.epsilon_per_day is None:  # --noise-scale B: the loss follows from B
        selection_budget = rho_for_epsilon(cfg.selection_epsilon, conv) if conv else cfg.selection_epsilon
        fresh = selection_budget if cfg.selection == "public-threshold" and denominator else 0.0
        return ReleasePlan(
            mech, k, days, None, selection_budget, fresh, conv, threshold_delta,
            speeding_budget=math.nan if speeding_on else 0.0, weight_norm=_weight_norm(cfg),
            split_rule="--noise-scale B for the queries; selection_epsilon for the selection",
        )  # fmt: skip
    total = rho_for_epsilon(cfg.epsilon_per_day, conv) if conv else cfg.epsilon_per_day
    clip_budget = cfg.clip_share * total if cfg.clip_bound == "dp-quantile" else 0.0
    rest = total - clip_budget
    coarse = n_levels - 1
    shares = [1.0] if not coarse else [1.0 - cfg.coarsen_share] + [cfg.coarsen_share / coarse] * coarse
    levels = tuple(share * rest for share in shares)
    level = levels[0]
    speeding_budget = SPEEDING_SHARE * level if speeding_on else 0.0
    queries = level - speeding_budget
    count_budget = 0.0
    if denominator:
        f = count_sum_split(mech)
        count_share = f * queries
        speed_budget = queries - count_share
        if cfg.selection == "dp":
            selection_budget = count_share
            rule = (
                f"one noisy count per HAT (selection and denominator) {f:.3f} and centred sum {1 - f:.3f} of the "
                "queries' budget: the split minimising the worst-case variance of the mean (count_sum_split)"
            )
        else:  # public-threshold reads true counts (NOT DP): the denominator is a fresh count
            selection_budget, count_budget = 0.0, count_share
            rule = f"fresh noisy count {f:.3f} and centred sum {1 - f:.3f} of the queries' budget"
    else:
        selection_budget = cfg.selection_fraction * level if cfg.selection == "dp" else 0.0
        queries = level - selection_budget - speeding_budget
        shared_b = cfg.neighbouring == "presence-public" and cfg.speed_estimator == "report"
        if shared_b and cfg.speed_share is None and speeding_on:
            speed_budget, speeding_budget = math.nan, queries + speeding_budget  # the report's shared B
        else:
            speed_budget = queries
        rule = (
            f"selection {cfg.selection_fraction:g} of the level (presence-public or a user-level estimator)"
        )
    if speeding_on and cfg.speed_share is not None and not math.isnan(speed_budget):
        both = speed_budget + speeding_budget
        speed_budget, speeding_budget = cfg.speed_share * both, (1 - cfg.speed_share) * both
    return ReleasePlan(
        mech,
        k,
        days,
        level,
        selection_budget,
        count_budget,
        conv,
        threshold_delta,
        total,
        clip_budget,
        levels,
        speed_budget,
        speeding_budget,
        rule,
        _weight_norm(cfg),
    )


def _weight_norm(cfg: HatReleaseConfig) -> float:
    """:attr:`ReleasePlan.weight_norm`: the next float above 1 for L2-normalised weights (their norm in floating
    point can pass 1 by an ulp or two), else 1 (unit weights)."""
    return math.nextafter(1.0, math.inf) if cfg.contribution_bounding == "l2" else 1.0


# --- calibrate the queries (after selection: its count of released HATs is a DP output) ---------------


@dataclass(frozen=True)
class QueryScales:
    speed: float  # Laplace b or Gaussian sigma; nan for the user-level estimators (their own scales)
    speeding: float
    count: float | None  # the add-remove denominator when selection did not give one
    speed_budget: float  # epsilon or rho for Query 1 per day (used by the user-level estimators)


def scale_for(plan: ReleasePlan, sensitivities: list[np.ndarray], k: int, budget: float) -> float:
    """One scale so that the sum over queries of the top-K per-HAT costs equals ``budget`` (III E-F solved).

    Laplace: b = sum_q topK(s) / budget. Gaussian: sigma = sqrt(sum_q topK(s^2) / (2 budget)). OpenDP rounds its
    maps outward, so the scale is the smallest one whose mapped cost fits (:func:`smallest_scale`).
    """
    if budget <= 0:
        raise InputError("the budget leaves nothing for the queries after selection")
    if plan.gaussian:
        guess = math.sqrt(sum(top_k_sum(s**2, k) for s in sensitivities) / (2.0 * budget))
    else:
        guess = sum(top_k_sum(s, k) for s in sensitivities) / budget
    return smallest_scale(
        lambda scale: sum(top_k_sum(hat_costs(plan, s, scale), k) for s in sensitivities), budget, guess
    )


def hat_costs(plan: ReleasePlan, sensitivities: np.ndarray, scale: float) -> np.ndarray:
    distinct = {float(s): plan.cost(float(s), scale) for s in np.unique(sensitivities)}
    return np.array([distinct[float(s)] for s in sensitivities], dtype=float)


def speed_sensitivities(cfg: HatReleaseConfig, n: np.ndarray) -> np.ndarray:
    """Per-HAT sensitivity of Query 1 to one vehicle-day: U/N (presence-public, on the mean) or U/2 (add/remove,
    on the sum of speeds centred at U/2: a vehicle-day adds or removes a value in [-U/2, U/2])."""
    if cfg.neighbouring == "presence-public":
        return cfg.speed_max / n
    return np.full(len(n), cfg.speed_max / 2.0)


def calibrate_queries(cfg: HatReleaseConfig, plan: ReleasePlan, n: np.ndarray, k_eff: int) -> QueryScales:
    """Scales of Query 1, Query 2 (and a fresh count when selection gave none) from the plan's shares and the
    released HATs: each query's noise is sized to the ``k_eff = min(K, h)`` HATs actually released (valid by
    adaptive composition: h is a DP output), so that the sum of its top-``k_eff`` per-HAT costs is its share."""
    h = len(n)
    speeding_on = "speeding" in cfg.queries
    speeding_s = np.full(h, 1.0 / plan.days)
    count: float | None = None
    if plan.count_budget > 0 and h:  # planned only for the add/remove denominator under public-threshold
        count = scale_for(plan, [np.ones(h)], k_eff, plan.count_budget)
    if cfg.noise_scale is not None:
        return QueryScales(cfg.noise_scale, cfg.noise_scale if speeding_on else math.inf, count, math.nan)
    if h == 0:
        return QueryScales(math.inf, math.inf, count, 0.0)
    speed_s = speed_sensitivities(cfg, n)
    if math.isnan(plan.speed_budget):  # the report's one B for both queries (III E-F)
        shared = scale_for(plan, [speed_s, speeding_s], k_eff, plan.speeding_budget)
        return QueryScales(shared, shared, count, math.nan)
    if plan.speed_budget <= 0:
        raise InputError("epsilon_per_day leaves nothing for the queries after selection")
    speed = (
        scale_for(plan, [speed_s], k_eff, plan.speed_budget) if cfg.speed_estimator == "report" else math.nan
    )
    speeding = scale_for(plan, [speeding_s], k_eff, plan.speeding_budget) if speeding_on else math.inf
    return QueryScales(speed, speeding, count, plan.speed_budget)


def _selection_costs(cfg: HatReleaseConfig, plan: ReleasePlan, level: int) -> tuple[float, Loss] | None:
    """Level ``level``'s selection on an unknown domain (OpenDP's threshold): its delta per vehicle-day and its
    loss over the window (the threshold's map at distance D); None when the selection is not a threshold (a public
    domain's noisy counts, a public threshold, no DP selection), whose cost is its share of the plan alone.

    As :func:`urbandp.fleet._measure.select_hats` selects: the finest level over a public domain (an extent or a
    route domain) counts every domain HAT, a coarser level does so only over an extent.
    """
    public = cfg.domain_bbox is not None or (level == 0 and cfg.public_domain)
    if cfg.selection != "dp" or plan.k is None or public:
        return None
    cal = calibrate_level_selection(cfg, plan.for_level(level), plan.k, None)
    return cal.delta_day, plan.loss(*cal.window_cost)


def calibrate_level_selection(
    cfg: HatReleaseConfig, level: ReleasePlan, k: int, domain_size: int | None, release_all: bool = False
) -> SelectionCalibration:
    """The DP selection's scale and threshold at one release level, from public parameters only: the one
    calibration the release draws with and the planner and the planned loss read. With coarser levels the
    expected number of released empty HATs (0.05 per release) is shared by the levels."""
    from urbandp.fleet._measure_selection import EXPECTED_FALSE_POSITIVES, calibrate_selection

    return calibrate_selection(
        gaussian=level.gaussian,
        k=k,
        days=level.days,
        budget=level.selection_budget,
        delta=level.threshold_delta,
        min_per_day=cfg.min_per_day,
        domain_size=domain_size,
        false_positives=EXPECTED_FALSE_POSITIVES / (1 + len(COARSEN_LEVELS[cfg.coarsen])),
        release_all=release_all,
    )


def planned_loss(cfg: HatReleaseConfig, days: int) -> ReleaseLoss | None:
    """The release's one loss per vehicle-day and over its D public days, from public parameters only: what the
    store books and caps, and what privacy.json, ``budget show`` and ``budget history`` state.

    The noise is calibrated to this plan (every query's scale spends its share, :func:`calibrate_queries`), so the
    loss is the plan's: per day the whole budget (epsilon, or rho for Gaussian noise) plus the delta of each
    level's threshold selection on an unknown domain; over the window, for a vehicle present on all D days (a
    group of D vehicle-days: the release pools the days), the queries', the clip bound's and a public domain's
    selection's budget grouped (D x epsilon, Dwork and Roth 2014, Thm 2.2; D^2 x rho, Bun and Steinke 2016, Prop.
    1.9) plus each threshold's OpenDP map at distance D. rho is converted once per figure, by the exact Gaussian
    curve when the release is Gaussian noise alone (:class:`~urbandp._privacy.loss.ReleaseLoss`). None when the loss follows from the data (``noise_scale`` without a budget, K observed).
    """
    plan = plan_release(cfg, days)
    if plan.total_budget is None or plan.k is None:
        return None
    per_day = plan.loss(plan.total_budget)
    window = plan.loss(plan.clip_budget).group(days)
    for i in range(1 + len(COARSEN_LEVELS[cfg.coarsen])):
        level = plan.for_level(i)
        assert level.budget is not None
        window = window + plan.loss(level.budget - level.selection_budget).group(days)
        threshold = _selection_costs(cfg, plan, i)
        if threshold is None:
            window = window + plan.loss(level.selection_budget).group(days)
        else:
            per_day = per_day + Loss(delta=threshold[0])
            window = window + threshold[1]
    # Gaussian noise alone (no DP clip bound: its quantile is an exponential mechanism, not Gaussian): a loss that
    # is rho alone is stated by the exact Gaussian curve (a threshold's delta makes it mixed: the zCDP bound)
    gaussian_only = plan.gaussian and cfg.clip_bound != "dp-quantile"
    return ReleaseLoss(per_day, window, days, plan.conversion_delta, gaussian_only)


def planned_window_delta(cfg: HatReleaseConfig, days: int) -> float:
    """The delta a vehicle present on every public day pays over the window, from public parameters only: the
    window delta of :func:`planned_loss`; with only a noise scale (no planned loss), the conversion delta of the
    queries' rho plus each threshold selection's map at distance D."""
    loss = planned_loss(cfg, days)
    if loss is not None:
        delta = loss.approx(loss.window)[1]
        return 1.0 if delta is None else delta
    plan = plan_release(cfg, days)
    total = (plan.conversion_delta or 0.0) if plan.gaussian else 0.0
    for i in range(1 + len(COARSEN_LEVELS[cfg.coarsen])):
        threshold = _selection_costs(cfg, plan, i)
        if threshold is not None:
            total += threshold[1].delta
    return min(1.0, total)


@dataclass(frozen=True)
class PlannedCharge:
    """What a release will spend per vehicle-day, fixed before any noise: public parameters and the window.

    ``epsilon_per_day`` bounds privacy.json's ``cumulative_epsilon_per_day`` (the ledger refuses the release
    otherwise): ``--epsilon-per-day``, or ``--budget-per-day`` if smaller or alone; None with only
    ``--noise-scale`` (the cost then depends on the selected HATs). ``rho_per_day`` is the zCDP budget of a
    Gaussian release (the rho whose conversion at ``conversion_delta`` is ``epsilon_per_day``), else None.
    """

    first_day: dt.date
    last_day: dt.date
    epsilon_per_day: float | None
    rho_per_day: float | None
    mechanism: str
    conversion_delta: float | None
    derived_window: bool
    days: tuple[dt.date, ...] = ()  # the public days charged (every day of first..last unless a day set)
    delta_per_window: float = 0.0  # what a vehicle on every public day pays (plan.planned_window_delta)
    loss: ReleaseLoss | None = None  # the release's one loss (planned_loss); None: it follows from the data
