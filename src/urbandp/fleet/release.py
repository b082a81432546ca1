"""Differentially private release of average speed (Query 1) and speeding counts (Query 2) per HAT.

ITMS report sections II D, III D-F and IV C-D, with the corrections DESIGN.md requires. The budget goes one way:

1. **plan** (:func:`plan_release`): public parameters only: mechanism, K, D, U, the budget per day and its split
   between selection and the queries (for Gaussian noise the budget is a rho, from OpenDP's zCDP -> (epsilon,
   delta) conversion at the target delta);
2. **bound** (:func:`truncate_vehicle_days`): a vehicle-day keeps at most K HATs, chosen from its presence only;
3. **select** (:mod:`urbandp.fleet.selection`): calibrated from the plan, measured once;
4. **calibrate** (:func:`calibrate_queries`): the scales of Query 1 and Query 2 from the plan and the released
   HATs (public after selection), checked against OpenDP's maps;
5. **measure** (:func:`measure_queries`): the noise is drawn once;
6. **account** (:func:`account`): per-HAT costs from OpenDP's maps, per day the sum of the K largest (a
   vehicle-day touches at most K HATs; III E step 3), composed in epsilon (Laplace) or rho (Gaussian, converted
   once to (epsilon, delta) by OpenDP), per window from the maps at the window's distance.

Options (issue 8): ``clip_bound="dp-quantile"`` spends a share of the budget on a DP clip bound U' <= U
(:func:`choose_clip_bound`, after step 2); ``coarsen`` repeats steps 3-6 at coarser levels (H3 parents, merged
slots) on what the finer levels did not release (:func:`coarse_contributions`, :func:`covered_keys`) and
:func:`combine_levels` composes the levels' costs (docs/fleet.md, "Coarser where sparse").

Neighbouring relations: ``presence-public`` (the report's relation, alias ``replace-one``): which vehicles are in
which HAT on which day is public (a scheduled bus's timetable); only speeds are protected, so N is public and
Query 1's sensitivity is U/N. ``add-remove`` (default): a whole vehicle-day may be present or absent; Query 1 is a
noisy sum (sensitivity U) over the selection's noisy count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np
import polars as pl
import polars_h3 as plh3

from urbandp.errors import BudgetExceededError, InputError
from urbandp.fleet.accounting import top_k_sum, window_epsilon
from urbandp.fleet.config import COARSEN_LEVELS, PAPER_ESTIMATORS, HatReleaseConfig
from urbandp.fleet.selection import (
    EXPECTED_FALSE_POSITIVES,
    SelectionResult,
    calibrate_selection,
    domain_cells,
    measure_selection,
    public_threshold,
)
from urbandp.grid.slots import SlotSpec
from urbandp.privacy.ledger import LedgerEntry, PrivacyLedger
from urbandp.privacy.noise import (
    NoiseSource,
    gaussian_rho,
    laplace_epsilon,
    rho_for_epsilon,
    zcdp_epsilon,
)
from urbandp.privacy.rounding import round_to_precision

NEIGHBOURING_TEXT = {
    "presence-public": (
        "presence-public (the ITMS report's replace-one relation, III E): neighbouring datasets differ in the speed "
        "records of one vehicle-day; which vehicles are present in which HAT on which day (hence N) is treated as "
        "public, as in a published timetable. DP for speeds; presence public. Query 1 sensitivity = speed_max / N "
        "per HAT, Query 2 sensitivity = 1 / D."
    ),
    "add-remove": (
        "add-remove: neighbouring datasets differ by adding or removing all records of one vehicle on one day, so "
        "N (vehicle-days per HAT) and presence are protected too. Query 1 = noisy sum of per-vehicle-day mean "
        "speeds (sensitivity speed_max per HAT) / noisy N; Query 2 sensitivity = 1 / D."
    ),
}

DP_LABEL = {
    "presence-public": "DP for speeds; presence public",
    "add-remove": "DP (add/remove a vehicle-day)",
}

CI_LABEL = (
    "ci95_low/ci95_high: 95% interval from the known noise distribution only (Laplace or Gaussian quantiles; under "
    "add-remove Fieller's interval for the ratio of the noisy centred sum to the noisy count, so the count's noise "
    "widens it where the count is small), clamped to [0, speed_max]; sampling variation of the vehicles is not "
    "included. clamped = true: the estimate fell outside [0, speed_max] and was clamped to the bound (post-"
    "processing): not a confident value. noisy_sum and noisy_vehicle_days are clamped at 0 (post-processing)"
)

# Truncation key: a fixed public seed; the hash reads only (vehicle, day, cell, slot), i.e. presence.
TRUNCATION_SEED = 20211115
Z95 = 1.959963984540054
LAPLACE_Q95 = math.log(20.0)  # P(|Laplace(b)| > b ln 20) = 0.05


@dataclass
class HatRelease:
    """Released tables and the privacy accounting of one run."""

    speed: pl.DataFrame
    speeding: pl.DataFrame
    privacy: dict[str, object]
    ledger: PrivacyLedger = field(default_factory=PrivacyLedger)
    owner_notes: dict[str, object] = field(default_factory=dict)  # true-data notes for owner_only/, not DP
    owner_report: dict[str, object] = field(
        default_factory=dict
    )  # exact counts: owner_only/input_report.json
    keys: pl.DataFrame = field(default_factory=pl.DataFrame)  # released (cell, slot), for coarser levels


# --- 1. plan ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReleasePlan:
    """Public parameters of a release and the budget split, fixed before any data is read.

    ``budget`` and the shares below are those of the finest level (epsilon, or rho for Gaussian noise: both
    compose by addition). Under add/remove with DP selection one noisy count per HAT serves both the selection and
    the mean's denominator (``selection_budget``), so ``count_budget`` is 0; a fresh count is paid only when the
    selection gives none (public-threshold). ``speed_budget`` and ``speeding_budget`` are the queries' shares
    (``nan`` for the report's one shared B under presence-public, ``0`` for a query not asked for). With a DP clip
    bound (``clip_budget``) and coarser levels (``level_budgets``, finest first) the total per vehicle-day is
    ``clip_budget + sum(level_budgets) = total_budget``; :meth:`for_level` gives the plan of one level.
    """

    mechanism: str  # "gaussian" | "laplace"
    k: int | None  # None: 'observed' (read from data, not DP)
    days: int
    speed_max: float
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

    @property
    def gaussian(self) -> bool:
        return self.mechanism == "gaussian"

    def cost(self, sensitivity: float, scale: float) -> float:
        """Per-HAT cost from OpenDP's map: epsilon (Laplace) or rho (Gaussian)."""
        return gaussian_rho(sensitivity, scale) if self.gaussian else laplace_epsilon(sensitivity, scale)

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
    threshold_select = cfg.selection == "dp" and cfg.domain_bbox is None
    n_levels = 1 + len(COARSEN_LEVELS[cfg.coarsen])
    if mech == "gaussian":
        conv = cfg.delta / 2 if threshold_select else cfg.delta
        threshold_delta = cfg.delta / 2 / n_levels
    else:
        conv, threshold_delta = None, cfg.delta / n_levels
    speeding_on = "speeding" in cfg.queries
    if cfg.epsilon_per_day is None:  # --noise-scale B: the loss follows from B
        selection_budget = rho_for_epsilon(cfg.selection_epsilon, conv) if conv else cfg.selection_epsilon
        denominator = cfg.neighbouring == "add-remove" and cfg.speed_estimator == "report"
        fresh = selection_budget if cfg.selection == "public-threshold" and denominator else 0.0
        return ReleasePlan(
            mech, k, days, cfg.speed_max, None, selection_budget, fresh, conv, threshold_delta,
            speeding_budget=math.nan if speeding_on else 0.0,
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
    if cfg.neighbouring == "add-remove" and cfg.speed_estimator == "report":
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
        cfg.speed_max,
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
    )


# --- 2. bound ----------------------------------------------------------------------------------------------------


def truncate_vehicle_days(contributions: pl.DataFrame, k: int) -> tuple[pl.DataFrame, int]:
    """Keep K HATs per vehicle-day chosen from presence only; return the rows dropped.

    The rank is a hash of (vehicle, day, cell, slot) with a fixed public seed (ties: lowest cell, slot): it reads
    no record count and no speed, so two datasets with the same presence keep the same HATs and the same N
    (needed under presence-public, where N is public), and a vehicle-day's choice never depends on others.
    """
    key = pl.struct(
        pl.col("vehicle").cast(pl.String),
        pl.col("day").cast(pl.String),
        pl.col("cell").cast(pl.UInt64),
        pl.col("slot").cast(pl.Int64),
    ).hash(seed=TRUNCATION_SEED)
    ranked = contributions.with_columns(
        pl.struct(key.alias("a"), pl.col("cell").alias("b"), pl.col("slot").alias("c"))
        .rank("ordinal")
        .over("vehicle", "day")
        .alias("_rank")
    )
    kept = ranked.filter(pl.col("_rank") <= k).drop("_rank")
    return kept, contributions.height - kept.height


def observed_max_hats(contributions: pl.DataFrame) -> int:
    """The most HATs any vehicle visits in a day (the report's K; reading it is not DP)."""
    if contributions.height == 0:
        return 0
    return int(contributions.group_by("vehicle", "day").len()["len"].max())  # type: ignore[arg-type]


def per_hat_aggregates(contributions: pl.DataFrame, speed_limit: float) -> pl.DataFrame:
    """Per HAT: N (vehicle-days), the sum of per-vehicle-day mean speeds, and vehicles over the limit (summed)."""
    return (
        contributions.group_by("cell", "slot")
        .agg(
            pl.len().cast(pl.Int64).alias("n"),
            pl.col("mean_speed").sum().alias("sum_mean_speed"),
            (pl.col("max_speed") > speed_limit).sum().cast(pl.Int64).alias("n_over_limit"),
        )
        .sort("cell", "slot")
    )


# --- 3. select -----------------------------------------------------------------------------------------------------


def select_hats(
    per_hat: pl.DataFrame,
    cfg: HatReleaseConfig,
    plan: ReleasePlan,
    k: int,
    noise: NoiseSource,
    slots: SlotSpec,
) -> SelectionResult:
    """The selection stage: calibrated from the plan (public), measured once."""
    if cfg.selection == "public-threshold":
        return public_threshold(per_hat, slots.slots, cfg.min_per_day, plan.days)
    grid = None
    if cfg.domain_bbox is not None:
        cells = domain_cells(cfg.domain_bbox, cfg.resolution)
        if cells.len() == 0:
            raise InputError("domain_bbox holds no H3 cell centroid at this resolution")
        grid = pl.DataFrame({"cell": cells.cast(pl.UInt64)}).join(
            pl.DataFrame({"slot": pl.Series(slots.slots, dtype=pl.Int16)}), how="cross"
        )
    cal = calibrate_selection(
        gaussian=plan.gaussian,
        k=k,
        days=plan.days,
        budget=plan.selection_budget,
        delta=plan.threshold_delta,
        min_per_day=cfg.min_per_day,
        domain_size=None if grid is None else grid.height,
        # with coarser levels the expected number of released empty HATs (0.05 per release) is shared by the levels
        false_positives=EXPECTED_FALSE_POSITIVES / (1 + len(COARSEN_LEVELS[cfg.coarsen])),
    )
    return measure_selection(cal, per_hat, noise, grid)


# --- 4. calibrate ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryScales:
    speed: float  # Laplace b or Gaussian sigma; nan for the user-level estimators (their own scales)
    speeding: float
    count: float | None  # the add-remove denominator when selection did not give one
    speed_budget: float  # epsilon or rho for Query 1 per day (used by the user-level estimators)


def _scale_for(plan: ReleasePlan, sensitivities: list[np.ndarray], k: int, budget: float) -> float:
    """One scale so that the sum over queries of the top-K per-HAT costs equals ``budget`` (III E-F solved).

    Laplace: b = sum_q topK(s) / budget. Gaussian: sigma = sqrt(sum_q topK(s^2) / (2 budget)). OpenDP rounds its
    maps outward, so the scale is then raised by ulps until the mapped cost fits.
    """
    if budget <= 0:
        raise InputError("the budget leaves nothing for the queries after selection")
    if plan.gaussian:
        scale = math.sqrt(sum(top_k_sum(s**2, k) for s in sensitivities) / (2.0 * budget))
    else:
        scale = sum(top_k_sum(s, k) for s in sensitivities) / budget
    for _ in range(64):
        if sum(top_k_sum(_costs(plan, s, scale), k) for s in sensitivities) <= budget:
            return scale
        scale = float(np.nextafter(scale, np.inf)) * (1 + 4e-16)
    raise RuntimeError("could not calibrate the noise scale within the budget")


def _costs(plan: ReleasePlan, sensitivities: np.ndarray, scale: float) -> np.ndarray:
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
        count = _scale_for(plan, [np.ones(h)], k_eff, plan.count_budget)
    if cfg.noise_scale is not None:
        return QueryScales(cfg.noise_scale, cfg.noise_scale if speeding_on else math.inf, count, math.nan)
    if h == 0:
        return QueryScales(math.inf, math.inf, count, 0.0)
    speed_s = speed_sensitivities(cfg, n)
    if math.isnan(plan.speed_budget):  # the report's one B for both queries (III E-F)
        shared = _scale_for(plan, [speed_s, speeding_s], k_eff, plan.speeding_budget)
        return QueryScales(shared, shared, count, math.nan)
    if plan.speed_budget <= 0:
        raise InputError("epsilon_per_day leaves nothing for the queries after selection")
    speed = (
        _scale_for(plan, [speed_s], k_eff, plan.speed_budget) if cfg.speed_estimator == "report" else math.nan
    )
    speeding = _scale_for(plan, [speeding_s], k_eff, plan.speeding_budget) if speeding_on else math.inf
    return QueryScales(speed, speeding, count, plan.speed_budget)


# --- 5. measure ----------------------------------------------------------------------------------------------------


def _draw(plan: ReleasePlan, noise: NoiseSource, values: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
    if plan.gaussian:
        return noise.gaussian(values, scale)
    return noise.laplace(values, scale)


def _half_width(plan: ReleasePlan, scale: float | np.ndarray) -> np.ndarray:
    """Half-width of the central 95% interval of one noise draw."""
    return np.asarray(scale, dtype=float) * (Z95 if plan.gaussian else LAPLACE_Q95)


def _sd(plan: ReleasePlan, scale: float) -> float:
    return scale if plan.gaussian else math.sqrt(2.0) * scale


@dataclass
class Measured:
    mean_speed: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    noisy_sum: np.ndarray
    noisy_n: np.ndarray
    speed_scales: np.ndarray
    speed_costs: np.ndarray  # per HAT per day (epsilon or rho)
    over_per_day: np.ndarray
    over_low: np.ndarray
    over_high: np.ndarray
    withheld: int = 0
    clamped: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))


LAPLACE_Z95 = LAPLACE_Q95 / math.sqrt(2.0)
"""95% quantile of |Laplace| in units of its sd (2.12): used as the Fieller z under Laplace noise, conservative
for the difference of two Laplace draws (whose 95% quantile in sd units lies between 1.96 and 2.12)."""


def fieller_interval(
    s: np.ndarray, n: np.ndarray, sd_s: float, sd_n: float, z: float
) -> tuple[np.ndarray, np.ndarray]:
    """Fieller's confidence set for ``theta = S / N`` from independent noisy ``s ~ (S, sd_s)``, ``n ~ (N, sd_n)``.

    The set ``{theta : (s - theta n)^2 <= z^2 (sd_s^2 + theta^2 sd_n^2)}`` is exact for Gaussian noise (it does
    not linearise the ratio, so the denominator's noise widens it where ``n`` is small next to ``sd_n``). It is a
    bounded interval when ``n^2 > z^2 sd_n^2``; otherwise it is unbounded and (-inf, inf) is returned.
    """
    a = n**2 - z**2 * sd_n**2
    disc = s**2 * sd_n**2 + n**2 * sd_s**2 - z**2 * sd_s**2 * sd_n**2
    with np.errstate(invalid="ignore", divide="ignore"):
        root = z * np.sqrt(np.maximum(disc, 0.0))
        low = np.where(a > 0, (s * n - root) / a, -np.inf)
        high = np.where(a > 0, (s * n + root) / a, np.inf)
    return low, high


def measure_queries(
    cfg: HatReleaseConfig,
    plan: ReleasePlan,
    released: pl.DataFrame,
    scales: QueryScales,
    noise: NoiseSource,
    contributions: pl.DataFrame,
    slots: SlotSpec,
    k_eff: int,
    selection_scale: float | None = None,
) -> Measured:
    """Draw the noise of Query 1 and Query 2 once, then post-process (clamp to [0, U], intervals).

    Add/remove: the mean is ``U/2 + S~ / N~`` with ``S~`` the noisy sum of speeds centred at U/2 and ``N~`` the
    selection's noisy count (the same draw that passed the threshold; a fresh count only under public-threshold).
    The published ``noisy_sum`` is the sum of speeds it implies, ``U/2 N~ + S~``, and it and ``noisy_vehicle_days``
    are clamped at 0 (post-processing). A mean clamped to 0 or U is flagged (``clamped``): it is not a confident
    value. Intervals are Fieller's for the ratio (the count's noise included), clamped to [0, U].
    """
    h = released.height
    u = cfg.speed_max
    n = released["n"].to_numpy().astype(float)
    nan = np.full(h, np.nan)
    noisy_n = nan.copy()
    if "noisy_n" in released.columns and cfg.neighbouring == "add-remove":
        noisy_n = released["noisy_n"].to_numpy().astype(float)
    if scales.count is not None and h:
        noisy_n = _draw(plan, noise, n, scales.count)
    noisy_sum = nan.copy()
    withheld = 0
    clamped = np.zeros(h, dtype=bool)
    if cfg.speed_estimator != "report":
        mean, costs, speed_scales = _user_level_means(
            contributions, released, cfg, scales.speed_budget / max(k_eff, 1), noise, slots
        )
        clamped = (mean < 0.0) | (mean > u)
        mean = np.clip(mean, 0.0, u)
        low, high = nan.copy(), nan.copy()
    elif cfg.neighbouring == "presence-public":
        speed_scales = np.full(h, scales.speed)
        costs = _costs(plan, speed_sensitivities(cfg, n), scales.speed) if h else np.zeros(0)
        s = released["sum_mean_speed"].to_numpy().astype(float)
        raw = _draw(plan, noise, s / np.maximum(n, 1.0), scales.speed) if h else np.zeros(0)
        half = _half_width(plan, scales.speed) if h else 0.0
        clamped = (raw < 0.0) | (raw > u)
        mean, low, high = np.clip(raw, 0, u), np.clip(raw - half, 0, u), np.clip(raw + half, 0, u)
    else:
        speed_scales = np.full(h, scales.speed)
        costs = _costs(plan, speed_sensitivities(cfg, n), scales.speed) if h else np.zeros(0)
        centred = released["sum_mean_speed"].to_numpy().astype(float) - n * (u / 2.0)
        noisy_centred = _draw(plan, noise, centred, scales.speed) if h else np.zeros(0)
        count_scale = scales.count if scales.count is not None else selection_scale
        sd_n = _sd(plan, count_scale) if count_scale is not None else 0.0
        sd_s = _sd(plan, scales.speed) if h else 0.0
        # The ratio is meaningless when the noisy denominator is small next to its noise: the mean is withheld
        # (null) unless the noisy count is at least max(1, 2 sd of its noise).
        ok = noisy_n >= max(1.0, 2.0 * sd_n)
        withheld = int((~ok).sum())
        denom = np.where(ok, noisy_n, np.nan)
        raw = u / 2.0 + noisy_centred / denom
        clamped = ok & ((raw < 0.0) | (raw > u))
        mean = np.clip(raw, 0.0, u)
        z = Z95 if plan.gaussian else LAPLACE_Z95
        lo_c, hi_c = fieller_interval(noisy_centred, denom, sd_s, sd_n, z)
        low, high = np.clip(u / 2.0 + lo_c, 0, u), np.clip(u / 2.0 + hi_c, 0, u)
        noisy_sum = np.maximum(u / 2.0 * noisy_n + noisy_centred, 0.0) if h else np.zeros(0)
    noisy_n = np.maximum(noisy_n, 0.0)
    m = released["n_over_limit"].to_numpy().astype(float)
    if h and math.isfinite(scales.speeding):
        raw_over = _draw(plan, noise, m / plan.days, scales.speeding)
        half_over = _half_width(plan, scales.speeding)
        over = (
            np.maximum(raw_over, 0.0),
            np.maximum(raw_over - half_over, 0.0),
            np.maximum(raw_over + half_over, 0.0),
        )
    else:
        over = (nan.copy(), nan.copy(), nan.copy())
    return Measured(
        mean, low, high, noisy_sum, noisy_n, speed_scales, costs, *over, withheld=withheld, clamped=clamped
    )


# --- the release ----------------------------------------------------------------------------------------------------


def release_hats(
    contributions: pl.DataFrame,
    cfg: HatReleaseConfig,
    days: int,
    noise: NoiseSource,
    *,
    slots: SlotSpec | None = None,
) -> HatRelease:
    """Plan, bound, (clip bound), then per level select, calibrate, measure, account; combine the levels.

    ``days`` is D, the calendar days of the public window. Without ``clip_bound`` and ``coarsen`` this is the
    single-level release; otherwise see :func:`choose_clip_bound`, :func:`coarse_contributions` and
    :func:`combine_levels`.
    """
    plan = plan_release(cfg, days)
    slots = slots or SlotSpec(cfg.slot_minutes, *cfg.hours)
    not_dp: list[str] = []
    if plan.k is None:
        k = max(1, observed_max_hats(contributions))
        not_dp.append("K (max HATs per vehicle-day) read from the data (report III E)")
        truncated = 0
    else:
        k = plan.k
        contributions, truncated = truncate_vehicle_days(contributions, k)
    clip: ClipChoice | None = None
    base_cfg = cfg
    if cfg.clip_bound == "dp-quantile":
        clip = choose_clip_bound(contributions, cfg, plan, noise)
        contributions = contributions.with_columns(pl.col("mean_speed").clip(0.0, clip.bound))
        base_cfg = cfg.model_copy(update={"speed_max": clip.bound})
    levels = ((0, 1), *COARSEN_LEVELS[cfg.coarsen])
    results: list[HatRelease] = []
    published: list[tuple[pl.DataFrame, int]] = []  # released (cell, slot) keys of each level and its merge
    for i, (up, merge) in enumerate(levels):
        level_cfg = base_cfg
        level_slots: SlotSpec = slots
        if (up, merge) != (0, 1):
            level_cfg = base_cfg.model_copy(update={"resolution": cfg.resolution - up})
            level_slots = MergedSlotSpec(slots.slot_minutes, slots.start_hour, slots.end_hour, merge)
        remainder = contributions
        if published and cfg.coarsen_rule == "fill":
            # a coarser HAT stands for its part that finer levels did not release: their rows are left out (the
            # choice reads released keys only: post-processing; each row still lies in one HAT per level)
            done = released_units(published, cfg.resolution, slots.slots)
            remainder = contributions.join(done, on=["cell", "slot"], how="anti")
        level_contrib = coarse_contributions(remainder, cfg.resolution - up, up, level_slots)
        covered = (
            covered_keys(
                published,
                cfg.resolution - up,
                level_slots,
                rule=cfg.coarsen_rule,
                fine_resolution=cfg.resolution,
                base_slots=slots.slots,
            )
            if published
            else None
        )
        result = _release_level(
            level_contrib,
            level_cfg,
            plan.for_level(i),
            k,
            truncated,
            list(not_dp),
            noise,
            level_slots,
            covered,
        )
        published.append((result.keys, merge))
        results.append(result)
    if len(results) == 1 and clip is None:
        return results[0]
    return combine_levels(cfg, plan, results, levels, clip)


def _release_level(
    contributions: pl.DataFrame,
    cfg: HatReleaseConfig,
    plan: ReleasePlan,
    k: int,
    truncated: int,
    not_dp: list[str],
    noise: NoiseSource,
    slots: SlotSpec,
    covered: pl.DataFrame | None = None,
) -> HatRelease:
    """One level: select, drop the HATs ``covered`` by a finer level's released HATs, calibrate, measure, account.

    Dropping covered HATs reads only the finer levels' released keys (a DP output), so it is post-processing;
    the queries are then calibrated on the HATs left (adaptive composition: their scales depend only on earlier
    DP outputs).
    """
    per_hat = per_hat_aggregates(contributions, cfg.speed_limit)
    selection = select_hats(per_hat, cfg, plan, k, noise, slots)
    if cfg.selection == "public-threshold" and cfg.neighbouring == "add-remove":
        not_dp.append("public-threshold selection reads true vehicle counts (report III C)")
    if cfg.neighbouring == "presence-public" and cfg.speed_estimator in PAPER_ESTIMATORS:
        presence_note = (
            f"estimator {cfg.speed_estimator} reads each vehicle-day's record count: under presence-public the "
            "record counts are treated as public too (only speed values are protected)"
        )
    else:
        presence_note = None
    if cfg.neighbouring == "add-remove" and cfg.speed_estimator in PAPER_ESTIMATORS:
        not_dp.append(
            f"estimator {cfg.speed_estimator} assumes unit counts are public (presence-public); use clipped-mean"
        )
    released = (
        selection.hats.join(per_hat, on=["cell", "slot"], how="left")
        .with_columns(
            pl.col("n").fill_null(0),
            pl.col("sum_mean_speed").fill_null(0.0),
            pl.col("n_over_limit").fill_null(0),
        )
        .sort("cell", "slot")
    )
    passed = released.height
    if covered is not None:
        released = released.join(covered, on=["cell", "slot"], how="anti").sort("cell", "slot")
    if cfg.neighbouring == "presence-public":
        # N is public under presence-public, so HATs nobody visited are dropped without cost (Query 1 needs N > 0).
        released = released.filter(pl.col("n") > 0)
    h = released.height
    k_eff = min(k, h)
    n = released["n"].to_numpy().astype(float)
    scales = calibrate_queries(cfg, plan, n, k_eff)
    measured = measure_queries(
        cfg, plan, released, scales, noise, contributions, slots, k_eff, selection_scale=selection.scale
    )
    result = account(cfg, plan, selection, scales, measured, released, slots, k, k_eff, truncated, not_dp)
    result.keys = released.select("cell", "slot")
    result.privacy["hats_passing_selection"] = passed
    result.privacy["hats_covered_by_finer_level"] = passed - released.height if covered is not None else 0
    if presence_note:
        result.privacy["public_by_assumption"] = presence_note
    return result


# --- clip bound (issue 8: the user-level mean paper's quantile idea, section III-E) --------------------------------

CLIP_CANDIDATES = 130  # public candidates U/130, 2U/130, ..., U (0.5 km/h apart at U = 65)


@dataclass(frozen=True)
class ClipChoice:
    """The DP clip bound U' and what it cost (OpenDP's map, per vehicle-day and over the window)."""

    bound: float
    alpha: float
    scale: float
    cost_day: float  # epsilon (laplace) or rho (gaussian)
    cost_window: float
    d_in: int  # symmetric distance of one vehicle-day on the vector of values
    candidates: int


def clip_statistic(contributions: pl.DataFrame) -> np.ndarray:
    """One value per vehicle-day: its largest HAT mean speed (after truncation to K, clipped to [0, U]).

    Clipping every HAT mean at U' leaves a vehicle-day untouched exactly when this value is <= U', so the
    alpha-quantile of it bounds the share of vehicle-days that lose anything to the clip by 1 - alpha.
    """
    if contributions.height == 0:
        return np.zeros(0)
    return contributions.group_by("vehicle", "day").agg(pl.col("mean_speed").max())["mean_speed"].to_numpy()


def choose_clip_bound(
    contributions: pl.DataFrame, cfg: HatReleaseConfig, plan: ReleasePlan, noise: NoiseSource
) -> ClipChoice:
    """U' <= U: OpenDP's private ``clip_quantile``-quantile of :func:`clip_statistic` over public candidates.

    One vehicle-day adds or removes one value (symmetric distance 1 under add/remove) or changes one (distance 2
    under presence-public); over the window one vehicle moves D (resp. 2D) values. The scale is calibrated so that
    OpenDP's map at that distance spends at most ``plan.clip_budget`` (rho under Gaussian noise, where OpenDP's
    zCDP quantile composes with the rest in rho; epsilon under Laplace).
    """
    from urbandp.estimators.bounds import (
        private_upper_bound,
        quantile_bound_measurement,
        quantile_bound_scale,
    )

    u = cfg.speed_max
    cands = [u * (i + 1) / CLIP_CANDIDATES for i in range(CLIP_CANDIDATES)]
    d_in = 1 if cfg.neighbouring == "add-remove" else 2
    alpha = cfg.clip_quantile
    scale, cost = quantile_bound_scale(cands, alpha, plan.clip_budget, d_in, gaussian=plan.gaussian)
    meas = quantile_bound_measurement(cands, alpha, scale, gaussian=plan.gaussian)
    window = float(meas.map(d_in * plan.days))
    values = clip_statistic(contributions)
    bound = private_upper_bound(
        values, cands, alpha, scale, gaussian=plan.gaussian, private=bool(noise.is_private)
    )
    return ClipChoice(min(bound, u), alpha, scale, cost, window, d_in, len(cands))


# --- coarser levels (issue 8: "coarser where sparse") -----------------------------------------------------------------


@dataclass(frozen=True)
class MergedSlotSpec(SlotSpec):
    """Slots of ``merge`` consecutive base slots, counted from the window's start; a merged slot is indexed by its
    first base slot (so keys of different levels compare), the last one may be shorter."""

    merge: int = 1

    @property
    def slots(self) -> list[int]:
        base = super().slots
        return base[:: self.merge]

    def group(self, slot: pl.Expr) -> pl.Expr:
        """Index of the merged slot holding base (or merged) slot ``slot``."""
        first = super().slots[0]
        return (first + (slot.cast(pl.Int32) - first) // self.merge * self.merge).cast(pl.Int16)

    def label(self, slot: int) -> str:
        last = min(slot + self.merge - 1, super().slots[-1])
        a, b = super().label(slot), super().label(last)
        return f"{a.split('-')[0]}-{b.split('-')[1]}"


def coarse_contributions(
    contributions: pl.DataFrame, resolution: int, up: int, slots: SlotSpec
) -> pl.DataFrame:
    """Contributions at a coarser level: the H3 parent ``up`` levels up and/or merged slots.

    Built from the truncated contributions, so a vehicle-day still touches at most K HATs at this level. Its mean
    speed in a coarse HAT is the record-weighted mean of its fine HAT means (the mean of its records there), in
    [0, U] (or [0, U'] after a DP clip); its max speed is the max (Query 2).
    """
    merge = slots.merge if isinstance(slots, MergedSlotSpec) else 1
    if up == 0 and merge == 1:
        return contributions
    cell = plh3.cell_to_parent("cell", resolution) if up else pl.col("cell")
    slot = slots.group(pl.col("slot")) if isinstance(slots, MergedSlotSpec) else pl.col("slot")
    weight = pl.col("n_records").cast(pl.Float64)
    return (
        contributions.with_columns(cell.alias("cell"), slot.alias("slot"))
        .group_by("cell", "slot", "day", "vehicle")
        .agg(
            pl.col("n_records").sum(),
            ((pl.col("mean_speed") * weight).sum() / weight.sum()).alias("mean_speed"),
            pl.col("max_speed").max(),
        )
        .sort("cell", "slot", "day", "vehicle")
    )


def released_units(
    published: list[tuple[pl.DataFrame, int]], fine_resolution: int, base_slots: list[int]
) -> pl.DataFrame:
    """The finest (cell, base slot) units covered by released HATs of any level (H3 descendants x merged slots)."""
    base = pl.DataFrame({"slot": pl.Series(base_slots, dtype=pl.Int16)})
    units = []
    for keys, merge in published:
        expanded = (
            keys.with_columns(
                plh3.cell_to_children("cell", fine_resolution).alias("cell"),
                pl.int_ranges(pl.col("slot"), pl.col("slot") + merge, dtype=pl.Int16).alias("slot"),
            )
            .explode("cell")
            .explode("slot")
        )
        units.append(expanded.join(base, on="slot", how="semi"))
    return pl.concat(units).unique()


def covered_keys(
    published: list[tuple[pl.DataFrame, int]],
    resolution: int,
    slots: SlotSpec,
    *,
    rule: str = "exclusive",
    fine_resolution: int | None = None,
    base_slots: list[int] | None = None,
) -> pl.DataFrame:
    """The (cell, slot) keys at this level that a finer level's released HATs rule out.

    ``exclusive``: every coarser HAT holding a released finer HAT (same slot or merged slot). ``fill``: only
    coarser HATs *entirely* covered by released finer HATs (all ``7^up`` H3 descendants at the finest resolution,
    in every base slot of the group); the others are released over their remainder (see :func:`release_hats`).
    Either way no place and time gets two values. Both read only released keys (DP outputs) and public H3 / slot
    structure.
    """
    group = slots.group(pl.col("slot")) if isinstance(slots, MergedSlotSpec) else pl.col("slot")
    if rule == "exclusive":
        frames = [
            keys.select(plh3.cell_to_parent("cell", resolution).alias("cell"), group.alias("slot"))
            for keys, _merge in published
        ]
        return pl.concat(frames).unique()
    assert fine_resolution is not None and base_slots is not None
    base = pl.DataFrame({"slot": pl.Series(base_slots, dtype=pl.Int16)})
    fine_units = released_units(published, fine_resolution, base_slots)
    per_group = base.select(group.alias("slot")).group_by("slot").len().rename({"len": "slots_in_group"})
    need = 7 ** (fine_resolution - resolution)
    return (
        fine_units.select(plh3.cell_to_parent("cell", resolution).alias("cell"), group.alias("slot"))
        .group_by("cell", "slot")
        .len()
        .join(per_group, on="slot")
        .filter(pl.col("len") >= pl.col("slots_in_group") * need)
        .select("cell", "slot")
    )


LEVEL_NAMES = {(0, 1): "finest", (1, 1): "parent1", (2, 1): "parent2", (0, 2): "slot2"}

COARSEN_ACCOUNTING = (
    "each level is a release of its own on the same vehicle-days (a vehicle-day touches at most K HATs at every "
    "level: its coarse HATs are images of its at most K finest HATs); the costs add: per day the sum over levels "
    "(rho for Gaussian noise, converted once; epsilon for Laplace). Which coarser HATs are published reads only the "
    "finer levels' DP selection (post-processing)"
)
COARSEN_RULES = {
    "exclusive": "a coarser HAT (H3 parent or merged slot) is published only where no finer HAT inside it was "
    "released: no place and time shows two values",
    "fill": "a coarser HAT stands for its remainder: the part of it (finest cells x slots) that no finer level "
    "released; its selection, counts and means read only the vehicle-days there, and it is published unless "
    "that remainder is empty. Every place and time gets at most one value (the map draws finer cells on top)",
}


def combine_levels(
    cfg: HatReleaseConfig,
    plan: ReleasePlan,
    results: list[HatRelease],
    levels: tuple[tuple[int, int], ...],
    clip: ClipChoice | None,
) -> HatRelease:
    """One release from the levels (and the clip bound): tables stacked, ledger and privacy.json composed.

    Per vehicle-day: ``cost = cost_clip + sum_levels (selection + count + speed + speeding)``, each level's terms
    the sum of its top-K per-HAT costs (epsilon; for Gaussian noise rho, converted once by OpenDP). Per window:
    the same sum of each step's OpenDP map at the window's distance (Gaussian: ``D^2`` times the queries' rho plus
    the selections' and the clip's maps at D vehicle-days).
    """
    gauss = plan.gaussian
    names = [LEVEL_NAMES[lv] for lv in levels]
    ledger = PrivacyLedger(
        budget_epsilon=cfg.budget_per_day or cfg.epsilon_per_day,
        budget_delta=None,
        conversion_delta=plan.conversion_delta,
    )
    kind = "rho" if gauss else "epsilon"
    try:
        if clip is not None:
            ledger.charge(
                LedgerEntry(
                    "clip bound (dp-quantile)",
                    0.0 if gauss else clip.cost_day,
                    0.0,
                    "vehicle-day",
                    cfg.neighbouring,
                    "opendp make_private_quantile" + (" (zCDP)" if gauss else ""),
                    rho=clip.cost_day if gauss else 0.0,
                )
            )
        for name, r in zip(names, results, strict=True):
            for e in r.ledger.entries:
                ledger.charge(replace(e, name=f"{e.name} [{name}]" if len(results) > 1 else e.name))
    except BudgetExceededError as err:
        raise BudgetExceededError(f"release refused: {err}") from None
    per_query: dict[str, float] = {}
    for r in results:
        src = r.privacy["rho_per_day" if gauss else "epsilon_per_day"]
        for q, v in src.items():  # type: ignore[attr-defined]
            per_query[q] = per_query.get(q, 0.0) + float(v)
    if clip is not None:
        per_query["clip_bound"] = clip.cost_day
    clip_window = clip.cost_window if clip is not None else 0.0
    sel_delta_window = math.fsum(float(r.privacy["selection"]["delta_per_window"]) for r in results)  # type: ignore[index]
    p = dict(results[0].privacy)
    if gauss:
        assert plan.conversion_delta is not None
        rho_window = math.fsum(float(r.privacy["rho_per_window"]) for r in results) + clip_window  # type: ignore[arg-type]
        p["rho_per_day"] = per_query
        p["rho_per_window"] = rho_window
        p["epsilon_per_day"] = {q: zcdp_epsilon(v, plan.conversion_delta) for q, v in per_query.items()}
        p["epsilon_per_window"] = zcdp_epsilon(rho_window, plan.conversion_delta)
        p["delta_per_window"] = plan.conversion_delta + sel_delta_window
    else:
        p["epsilon_per_day"] = per_query
        p["epsilon_per_window"] = (
            math.fsum(float(cast(float, r.privacy["epsilon_per_window"])) for r in results) + clip_window
        )
        p["delta_per_window"] = sel_delta_window
    p["cumulative_epsilon_per_day"] = ledger.epsilon_spent
    p["delta_per_day"] = ledger.delta_spent
    p["ledger"] = ledger.to_dict()
    p["hats_released"] = sum(int(r.privacy["hats_released"]) for r in results)  # type: ignore[call-overload]
    p["means_withheld_small_noisy_count"] = sum(
        int(r.privacy["means_withheld_small_noisy_count"])  # type: ignore[call-overload]
        for r in results
    )
    p["speed_max"] = cfg.speed_max
    p["resolution"] = cfg.resolution
    if len(results) > 1:
        p["coarsen"] = {
            "mode": cfg.coarsen,
            "share": cfg.coarsen_share,
            "rule": cfg.coarsen_rule,
            "rule_explanation": COARSEN_RULES[cfg.coarsen_rule],
            "accounting": COARSEN_ACCOUNTING,
            "levels": [
                _level_summary(name, lv, r, cfg, plan.for_level(i), gauss)
                for i, (name, lv, r) in enumerate(zip(names, levels, results, strict=True))
            ],
        }
    if clip is not None:
        p["clip_bound"] = {
            "method": "dp-quantile",
            "statistic": "each vehicle-day's largest HAT mean speed (after truncation to K)",
            "quantile": clip.alpha,
            "share": cfg.clip_share,
            "bound": clip.bound,
            "speed_max_public": cfg.speed_max,
            "candidates": f"{clip.candidates} equally spaced in (0, {cfg.speed_max}]",
            "mechanism": "opendp make_private_quantile, unknown size, "
            + ("zero-concentrated divergence" if gauss else "max divergence"),
            "scale": clip.scale,
            "distance_vehicle_day": clip.d_in,
            f"{kind}_per_day": clip.cost_day,
            f"{kind}_per_window": clip.cost_window,
            "note": "HAT mean speeds are clipped to [0, bound] and Query 1's sensitivity uses the bound (U' <= U); "
            "released means and intervals are clipped to [0, bound]",
        }
        sens = dict(p["sensitivity"])  # type: ignore[call-overload]
        sens["speed"] = f"{clip.bound}/N per HAT" if cfg.neighbouring == "presence-public" else clip.bound / 2
        p["sensitivity"] = sens
    warnings = [w for r in results for w in r.privacy["warnings"]]  # type: ignore[attr-defined]
    p["warnings"] = [
        w for i, w in enumerate(warnings) if w not in warnings[:i] and "delta per window" not in w
    ]
    if p["delta_per_window"] > 1e-5:  # type: ignore[operator]
        p["warnings"].append(  # type: ignore[attr-defined]
            f"delta per window is {p['delta_per_window']:.3g}, not small: a vehicle's presence over the "
            f"{plan.days}-day window is weakly protected; give --domain-bbox (no delta for selection) or a shorter "
            "window"
        )
    level_col = [pl.lit(name).alias("level") for name in names]
    speed = pl.concat(
        [
            r.speed.with_columns(col) if len(results) > 1 else r.speed
            for r, col in zip(results, level_col, strict=True)
        ],
        how="diagonal",
    )
    speeding = pl.concat(
        [
            r.speeding.with_columns(col) if len(results) > 1 else r.speeding
            for r, col in zip(results, level_col, strict=True)
        ],
        how="diagonal",
    )
    keys = pl.concat([r.keys for r in results])
    return HatRelease(speed=speed, speeding=speeding, privacy=p, ledger=ledger, keys=keys)


def _level_summary(
    name: str, level: tuple[int, int], r: HatRelease, cfg: HatReleaseConfig, plan: ReleasePlan, gauss: bool
) -> dict[str, object]:
    q = r.privacy["rho_per_day" if gauss else "epsilon_per_day"]
    return {
        "level": name,
        "resolution": cfg.resolution - level[0],
        "slot_minutes": cfg.slot_minutes * level[1],
        ("rho_budget" if gauss else "epsilon_budget"): plan.budget,
        ("rho_per_day" if gauss else "epsilon_per_day"): q,
        ("rho_per_day_total" if gauss else "epsilon_per_day_total"): math.fsum(q.values()),  # type: ignore[attr-defined]
        "hats_passing_selection": r.privacy["hats_passing_selection"],
        "hats_covered_by_finer_level": r.privacy["hats_covered_by_finer_level"],
        "hats_released": r.privacy["hats_released"],
        "selection_threshold_vehicle_days": r.privacy["selection"]["threshold_vehicle_days"],  # type: ignore[index]
        "noise_scale": r.privacy["noise_scale"],
    }


# --- 6. account ----------------------------------------------------------------------------------------------------


def account(
    cfg: HatReleaseConfig,
    plan: ReleasePlan,
    selection: SelectionResult,
    scales: QueryScales,
    measured: Measured,
    released: pl.DataFrame,
    slots: SlotSpec,
    k: int,
    k_eff: int,
    truncated: int,
    not_dp: list[str],
) -> HatRelease:
    """Charge the ledger from OpenDP's maps and build the tables and privacy.json's content."""
    h = released.height
    gauss = plan.gaussian
    speed_day = top_k_sum(measured.speed_costs, k_eff)
    speeding_hat = plan.cost(1.0 / plan.days, scales.speeding) if math.isfinite(scales.speeding) else 0.0
    speeding_day = top_k_sum(np.full(h, speeding_hat), k_eff)
    count_hat = count_day = 0.0
    if scales.count is not None:
        count_hat = plan.cost(1.0, scales.count)
        count_day = top_k_sum(np.full(h, count_hat), k_eff)
    sel_day = (selection.rho_per_day if gauss else selection.epsilon_per_day) + count_day
    ledger = PrivacyLedger(
        budget_epsilon=cfg.budget_per_day or cfg.epsilon_per_day,
        budget_delta=None,
        conversion_delta=plan.conversion_delta,
    )
    sel_mech = selection.mechanism + (f" + {plan.mechanism} count" if scales.count else "")
    entries = [
        ("selection", sel_day, selection.delta_per_day, sel_mech),
        ("speed", speed_day, 0.0, plan.mechanism),
    ]
    entries.append(("speeding", speeding_day, 0.0, plan.mechanism))
    try:
        for name, cost, delta, mech in entries:
            ledger.charge(
                LedgerEntry(
                    name,
                    0.0 if gauss else cost,
                    delta,
                    "vehicle-day",
                    cfg.neighbouring,
                    mech,
                    rho=cost if gauss else 0.0,
                )
            )
    except BudgetExceededError as err:
        raise BudgetExceededError(f"release refused: {err}") from None
    cumulative = ledger.epsilon_spent
    delta_day = ledger.delta_spent
    d = plan.days
    warnings: list[str] = []
    if gauss:
        assert plan.conversion_delta is not None
        rho_window = d**2 * (speed_day + speeding_day + count_day) + selection.window_cost[0]
        eps_window = zcdp_epsilon(rho_window, plan.conversion_delta)
        delta_window = plan.conversion_delta + selection.window_cost[1]
        per_query = {
            "speed": zcdp_epsilon(speed_day, plan.conversion_delta),
            "speeding": zcdp_epsilon(speeding_day, plan.conversion_delta),
            "selection": zcdp_epsilon(sel_day, plan.conversion_delta),
        }
    else:
        rho_window = None
        eps_window = window_epsilon(speed_day + speeding_day + count_day, d) + (
            selection.window_cost[0] if selection.method != "public-threshold" else 0.0
        )
        delta_window = selection.window_cost[1]
        per_query = {"speed": speed_day, "speeding": speeding_day, "selection": sel_day}
    if delta_window > 1e-5:
        warnings.append(
            f"delta per window is {delta_window:.3g}, not small: a vehicle's presence over the {d}-day window is "
            "weakly protected; give --domain-bbox (no delta for selection) or a shorter window"
        )

    labels = released.select(slots.label_expr(pl.col("slot")).alias("slot"))["slot"]
    cells = released.select(_cell_expr()).to_series()
    prec = cfg.precision
    cost_col = "rho_hat_day" if gauss else "epsilon_hat_day"
    speed = pl.DataFrame(
        {
            "h3_cell": cells,
            "resolution": np.full(h, cfg.resolution, dtype=np.int64),
            "slot": labels,
            "mean_speed": round_to_precision(measured.mean_speed, prec),
            "ci95_low": round_to_precision(measured.ci_low, prec),
            "ci95_high": round_to_precision(measured.ci_high, prec),
            "noisy_sum": round_to_precision(measured.noisy_sum, prec),
            "noisy_vehicle_days": round_to_precision(measured.noisy_n, prec),
            "clamped": measured.clamped if h else np.zeros(0, dtype=bool),
            "noise_scale": measured.speed_scales,
            cost_col: measured.speed_costs,
        },
        nan_to_null=True,
    )
    speeding = pl.DataFrame(
        {
            "h3_cell": cells,
            "resolution": np.full(h, cfg.resolution, dtype=np.int64),
            "slot": labels,
            "vehicles_over_limit_per_day": round_to_precision(measured.over_per_day, prec),
            "ci95_low": round_to_precision(measured.over_low, prec),
            "ci95_high": round_to_precision(measured.over_high, prec),
            "noise_scale": np.full(h, scales.speeding),
            cost_col: np.full(h, speeding_hat),
        },
        nan_to_null=True,
    )
    if cfg.neighbouring == "presence-public":  # N is public there: no noisy count, no noisy sum
        speed = speed.drop("noisy_sum", "noisy_vehicle_days")
    if "speeding" not in cfg.queries:
        speeding = speeding.clear()
    scale_name = "gaussian sigma" if gauss else "laplace b"
    privacy: dict[str, object] = {
        "differentially_private": not not_dp,
        "dp_label": DP_LABEL[cfg.neighbouring] if not not_dp else "NOT differentially private",
        "not_dp_reasons": not_dp,
        "warnings": warnings,
        "mechanism": plan.mechanism,
        "neighbouring": cfg.neighbouring,
        "neighbouring_explanation": NEIGHBOURING_TEXT[cfg.neighbouring],
        "privacy_unit": "vehicle-day",
        "noise_scale_kind": scale_name,
        "noise_scale": {
            "speed": float(np.nanmax(measured.speed_scales)) if h else scales.speed,
            "speeding": scales.speeding,
            "selection": selection.scale,
            "count": scales.count,
        },
        "noise_scale_reason": None if h else "no HAT passed selection: the queries drew no noise",
        "sensitivity": {
            "speed": (
                f"{cfg.speed_max}/N per HAT" if cfg.neighbouring == "presence-public" else cfg.speed_max / 2
            ),
            "speed_note": None
            if cfg.neighbouring == "presence-public"
            else "add-remove: the sum of vehicle-day mean speeds centred at speed_max/2, so one vehicle-day moves "
            "it by at most speed_max/2",
            "speed_norm": ("L2 over the K HATs of a vehicle-day" if gauss else "L1 over the K HATs"),
            "speeding": 1.0 / d,
        },
        "epsilon_per_hat_per_day": {
            "speed": None if gauss else (float(measured.speed_costs.max()) if h else 0.0),
            "speeding": None if gauss else (float(speeding_hat) if h else 0.0),
            "selection": None if gauss else selection.epsilon_per_hat_per_day,
        },
        "epsilon_per_hat_per_day_reason": (
            "Gaussian noise is accounted in rho per HAT (rho_per_hat_per_day), composed and converted once"
            if gauss
            else None
        ),
        "epsilon_per_day": per_query,
        "epsilon_per_day_note": (
            "each query alone, converted from its rho at conversion_delta; the cumulative figure converts the "
            "summed rho once (tighter than the sum)"
            if gauss
            else "basic composition: the cumulative figure is the sum"
        ),
        "delta_per_day": delta_day,
        "cumulative_epsilon_per_day": cumulative,
        "days": d,
        "epsilon_per_window": eps_window,
        "delta_per_window": delta_window,
        "max_hats_per_vehicle_day": k,
        "max_hats_per_vehicle_day_source": (
            "observed in the data (not DP)"
            if cfg.max_hats_per_vehicle_day == "observed"
            else "public bound, enforced by truncation on presence (keyed hash of vehicle, day, cell, slot)"
        ),
        "hats_released": h,
        "means_withheld_small_noisy_count": measured.withheld,
        "selection": {
            "method": selection.method,
            "mechanism": selection.mechanism,
            "differentially_private": selection.differentially_private
            or cfg.neighbouring == "presence-public",
            "threshold_vehicle_days": selection.threshold,
            "min_vehicles_per_day": cfg.min_per_day,
            "threshold_floor_vehicle_days": cfg.min_per_day * plan.days,
            "noise_scale": selection.scale,
            "epsilon_per_day": selection.epsilon_per_day,
            "rho_per_day": selection.rho_per_day,
            "delta_per_day": selection.delta_per_day,
            "delta_per_window": selection.window_cost[1],
            "max_noisy_count": selection.max_noisy_count,
            "domain_hats": selection.domain_hats,
        },
        "speed_max": cfg.speed_max,
        "queries": list(cfg.queries),
        "budget_split": plan.split_rule,
        "speed_limit": cfg.speed_limit,
        "precision": cfg.precision,
        "speed_estimator": cfg.speed_estimator,
        "intervals": CI_LABEL,
        "resolution": cfg.resolution,
        "vehicle_hat_days_truncated": truncated,
        "ledger": ledger.to_dict(),
    }
    if gauss:
        privacy["rho_per_hat_per_day"] = {
            "speed": float(measured.speed_costs.max()) if h else 0.0,
            "speeding": float(speeding_hat) if h else 0.0,
            "selection": selection.rho_per_hat_per_day,
        }
        privacy["rho_per_day"] = {"speed": speed_day, "speeding": speeding_day, "selection": sel_day}
        privacy["rho_per_window"] = rho_window
        privacy["conversion_delta"] = plan.conversion_delta
    return HatRelease(speed=speed, speeding=speeding, privacy=privacy, ledger=ledger)


def _user_level_means(
    contributions: pl.DataFrame,
    released: pl.DataFrame,
    cfg: HatReleaseConfig,
    epsilon_hat: float,
    noise: NoiseSource,
    slots: SlotSpec,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query 1 by a user-level mean estimator (issue 3): one "user" = one vehicle-day in the HAT.

    Each released HAT gets ``epsilon_hat``; a vehicle-day is in at most K of them, so the per-day cost is the sum
    of the K largest (basic composition), as for the report's estimator.
    """
    from urbandp.estimators.hat import estimate_hat_means

    if "speeds" not in contributions.columns:
        raise InputError("the user-level estimators need contributions computed with keep_speeds=True")
    keys = released.select("cell", "slot")
    frame = contributions.join(keys, on=["cell", "slot"], how="semi").select(
        _cell_expr().alias("h3_cell"),
        slots.label_expr(pl.col("slot")).alias("slot"),
        pl.format("{}|{}", pl.col("vehicle"), pl.col("day")).alias("unit"),
        pl.col("speeds"),
    )
    hats = keys.select(_cell_expr().alias("h3_cell"), slots.label_expr(pl.col("slot")).alias("slot"))
    est = estimate_hat_means(
        frame,
        cfg.speed_estimator,
        epsilon_hat,
        cfg.speed_max,
        noise,
        hats=hats if cfg.speed_estimator == "clipped-mean" else None,
    )
    aligned = hats.join(est, on=["h3_cell", "slot"], how="left", maintain_order="left")
    return (
        aligned["mean_speed"].to_numpy().astype(float),
        aligned["epsilon_hat"].to_numpy().astype(float),
        aligned["noise_scale"].to_numpy().astype(float),
    )


def _cell_expr() -> pl.Expr:
    from urbandp.grid.h3cells import cell_to_string

    return cell_to_string(pl.col("cell"))
