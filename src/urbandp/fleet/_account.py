"""Step 6 of a fleet release: account, a pure function of the plan and the measurements (no noise is drawn here).

:func:`account` charges one level (the composition rules: :mod:`urbandp.fleet._account_composition`) and returns
the typed :class:`HatRelease`, the tables and privacy.json's content (written by
:func:`urbandp._privacy.report.write_privacy_json`); :func:`combine_levels` composes the levels of a coarsened
release and its DP clip bound. Losses are :class:`~urbandp._privacy.loss.Loss`: epsilon for Laplace, rho for
Gaussian noise, converted once to (epsilon, delta) by OpenDP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from urbandp._grid.h3cells import cell_to_string
from urbandp._grid.slots import SlotSpec
from urbandp._privacy.ledger import LedgerEntry, PrivacyLedger
from urbandp._privacy.loss import Loss
from urbandp._privacy.rounding import round_to_precision
from urbandp.errors import Advice, BudgetExceededError, InvalidParameterError
from urbandp.fleet._account_composition import top_k_sum
from urbandp.fleet._measure import ClipChoice, Measured
from urbandp.fleet._measure_selection import SelectionResult
from urbandp.fleet._options import COARSEN_LEVELS, HatReleaseConfig
from urbandp.fleet._plan import QueryScales, ReleasePlan

NEIGHBOURING_TEXT = {
    "presence-public": (
        "presence-public (the ITMS report's replace-one relation, III E): neighbouring datasets differ in the speed "
        "records of one vehicle-day; which vehicles are present in which HAT on which day (hence N) is treated as "
        "public, as in a published timetable. DP for speeds; presence public. Query 1 sensitivity = speed_max / N "
        "per HAT, Query 2 sensitivity = 1 / D."
    ),
    "add-remove": (
        "add-remove: neighbouring datasets differ by adding or removing all records of one vehicle on one day, so "
        "N (vehicle-days per HAT) and presence are protected too. Query 1 = speed_max/2 + the noisy sum of "
        "per-vehicle-day mean speeds centred at speed_max/2 (sensitivity speed_max/2 per HAT) / the selection's "
        "noisy N; Query 2 sensitivity = 1 / D."
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


@dataclass
class HatRelease:
    """Released tables and the privacy accounting of one run."""

    speed: pl.DataFrame
    speeding: pl.DataFrame
    privacy: dict[str, object]
    ledger: PrivacyLedger = field(default_factory=PrivacyLedger)
    owner_notes: dict[str, object] = field(default_factory=dict)  # true-data notes for owner_only/, not DP
    # exact counts: owner_only/input_report.json
    owner_report: dict[str, object] = field(default_factory=dict)
    keys: pl.DataFrame = field(default_factory=pl.DataFrame)  # released (cell, slot), for coarser levels
    window: Loss = field(default_factory=Loss)  # per vehicle over the window, before the rho conversion


def _stated(window: Loss, plan: ReleasePlan, days: int) -> tuple[float, float]:
    """(epsilon, delta) of the window's loss, or a one-line refusal when it cannot be stated (an overflow)."""
    eps, delta, why = window.approx(plan.conversion_delta)
    if eps is None or delta is None:
        raise InvalidParameterError(
            f"the privacy loss over the {days}-day window cannot be stated ({why}); shorten the window"
        )
    return eps, delta


def ledger_entry(name: str, loss: Loss, neighbouring: str, mechanism: str) -> LedgerEntry:
    """One charge of a vehicle-day's loss (its epsilon, delta and rho parts) in the release's ledger."""
    return LedgerEntry(name, loss.epsilon, loss.delta, "vehicle-day", neighbouring, mechanism, rho=loss.rho)


def _charged(cfg: HatReleaseConfig, plan: ReleasePlan, entries: list[LedgerEntry]) -> PrivacyLedger:
    """A ledger with the release's budget per day (epsilon) and the plan's rho -> epsilon conversion delta,
    charged with ``entries`` in order; a charge beyond the budget refuses the release."""
    ledger = PrivacyLedger(
        budget_epsilon=cfg.budget_per_day or cfg.epsilon_per_day,
        budget_delta=None,
        conversion_delta=plan.conversion_delta,
    )
    try:
        for entry in entries:
            ledger.charge(entry)
    except BudgetExceededError as err:
        raise BudgetExceededError(f"release refused: {err}") from None
    return ledger


def _window_delta_warning(delta_window: float, days: int) -> str | None:
    """The warning when the delta over the window is above 1e-5 (presence weakly protected); else None."""
    if delta_window <= 1e-5:
        return None
    return Advice(
        f"delta per window is {delta_window:.3g}, not small: a vehicle's presence over the {days}-day window is "
        "weakly protected; give domain_bbox (no delta for selection) or a shorter window",
        parameters="domain_bbox",
    )


@dataclass(frozen=True)
class DayCosts:
    """One level's cost per vehicle-day (epsilon for Laplace, rho for Gaussian noise), step by step.

    Each step's term is the sum of its K largest per-HAT costs (a vehicle-day touches at most K HATs; ITMS report
    III E step 3). ``selection`` includes the add-remove noisy count (``count``) when selection gave none.
    """

    speed: float
    speeding: float
    speeding_hat: float  # Query 2's cost in one HAT (one scale for every HAT)
    count: float
    selection: float

    @property
    def queries(self) -> float:
        """The queries' part (speed, speeding and the noisy count): what group privacy multiplies over a window."""
        return self.speed + self.speeding + self.count

    @property
    def per_step(self) -> dict[str, float]:
        """Each step's cost per vehicle-day, as privacy.json lists them."""
        return {"speed": self.speed, "speeding": self.speeding, "selection": self.selection}


def _each_epsilon(plan: ReleasePlan, per_step: dict[str, float]) -> dict[str, float | None]:
    """Each step's epsilon per vehicle-day alone (Gaussian: its rho converted at the plan's conversion delta)."""
    return {q: plan.loss(v).approx(plan.conversion_delta)[0] for q, v in per_step.items()}


def _speed_sensitivity(cfg: HatReleaseConfig, bound: float) -> str | float:
    """Query 1's sensitivity at the speed bound: ``bound``/N per HAT under presence-public, else ``bound``/2."""
    return f"{bound}/N per HAT" if cfg.neighbouring == "presence-public" else bound / 2


@dataclass(frozen=True)
class Level:
    """What one level's accounting reads: the spec, the plan, the selection, the queries' scales and answers, and
    the HATs released (``cell``, ``slot``, ``n``...)."""

    cfg: HatReleaseConfig
    plan: ReleasePlan
    selection: SelectionResult
    scales: QueryScales
    measured: Measured
    released: pl.DataFrame

    @property
    def hats(self) -> int:
        return self.released.height


def _day_costs(lv: Level, k_eff: int) -> DayCosts:
    """The per-day costs of :class:`DayCosts` from OpenDP's maps (``plan.cost``) and the measured per-HAT costs."""
    plan, scales, hats = lv.plan, lv.scales, lv.hats
    speeding_hat = plan.cost(1.0 / plan.days, scales.speeding) if math.isfinite(scales.speeding) else 0.0
    count = 0.0
    if scales.count is not None:
        count = top_k_sum(np.full(hats, plan.cost(1.0, scales.count)), k_eff)
    return DayCosts(
        speed=top_k_sum(lv.measured.speed_costs, k_eff),
        speeding=top_k_sum(np.full(hats, speeding_hat), k_eff),
        speeding_hat=speeding_hat,
        count=count,
        selection=lv.selection.per_day(plan.currency) + count,
    )


def _charge_level(lv: Level, costs: DayCosts) -> PrivacyLedger:
    """A ledger charged with the level's three steps (selection with its count, speed, speeding), or a refusal."""
    cfg, plan, selection = lv.cfg, lv.plan, lv.selection
    sel_mech = selection.mechanism + (f" + {plan.mechanism} count" if lv.scales.count else "")
    charges = [
        ("selection", plan.loss(costs.selection, selection.delta_per_day), sel_mech),
        ("speed", plan.loss(costs.speed), plan.mechanism),
        ("speeding", plan.loss(costs.speeding), plan.mechanism),
    ]
    return _charged(
        cfg, plan, [ledger_entry(name, loss, cfg.neighbouring, mech) for name, loss, mech in charges]
    )


def _released_tables(lv: Level, slots: SlotSpec, speeding_hat: float) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Query 1's and Query 2's tables: one row per released HAT, values rounded to ``cfg.precision``.

    Under presence-public N is public, so Query 1 carries no noisy sum or count; Query 2's table is empty when it
    was not asked for.
    """
    cfg, measured, released, h = lv.cfg, lv.measured, lv.released, lv.hats
    labels = released.select(slots.label_expr(pl.col("slot")).alias("slot"))["slot"]
    cells = released.select(cell_to_string(pl.col("cell"))).to_series()
    prec = cfg.precision
    cost_col = f"{lv.plan.currency}_hat_day"
    keys = {"h3_cell": cells, "resolution": np.full(h, cfg.resolution, dtype=np.int64), "slot": labels}
    speed = pl.DataFrame(
        {
            **keys,
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
            **keys,
            "vehicles_over_limit_per_day": round_to_precision(measured.over_per_day, prec),
            "ci95_low": round_to_precision(measured.over_low, prec),
            "ci95_high": round_to_precision(measured.over_high, prec),
            "noise_scale": np.full(h, lv.scales.speeding),
            cost_col: np.full(h, speeding_hat),
        },
        nan_to_null=True,
    )
    if cfg.neighbouring == "presence-public":  # N is public there: no noisy count, no noisy sum
        speed = speed.drop("noisy_sum", "noisy_vehicle_days")
    if "speeding" not in cfg.queries:
        speeding = speeding.clear()
    return speed, speeding


def _status_section(
    cfg: HatReleaseConfig, plan: ReleasePlan, not_dp: list[str], warnings: list[str]
) -> dict[str, object]:
    """privacy.json's head: whether the release is DP (and why not), its warnings, mechanism and neighbouring."""
    return {
        "differentially_private": not not_dp,
        "dp_label": DP_LABEL[cfg.neighbouring] if not not_dp else "NOT differentially private",
        "not_dp_reasons": not_dp,
        "warnings": warnings,
        "mechanism": plan.mechanism,
        "neighbouring": cfg.neighbouring,
        "neighbouring_explanation": NEIGHBOURING_TEXT[cfg.neighbouring],
        "privacy_unit": "vehicle-day",
    }


def _noise_section(lv: Level) -> dict[str, object]:
    """The noise scales (Laplace b or Gaussian sigma) and the queries' sensitivities (ITMS report III D-E)."""
    cfg, plan, scales, hats = lv.cfg, lv.plan, lv.scales, lv.hats
    presence_public = cfg.neighbouring == "presence-public"
    return {
        "noise_scale_kind": "gaussian sigma" if plan.gaussian else "laplace b",
        "noise_scale": {
            "speed": float(np.nanmax(lv.measured.speed_scales)) if hats else scales.speed,
            "speeding": scales.speeding,
            "selection": lv.selection.scale,
            "count": scales.count,
        },
        "noise_scale_reason": None if hats else "no HAT passed selection: the queries drew no noise",
        "sensitivity": {
            "speed": _speed_sensitivity(cfg, cfg.speed_max),
            "speed_note": None
            if presence_public
            else "add-remove: the sum of vehicle-day mean speeds centred at speed_max/2, so one vehicle-day moves "
            "it by at most speed_max/2",
            "speed_norm": ("L2 over the K HATs of a vehicle-day" if plan.gaussian else "L1 over the K HATs"),
            "speeding": 1.0 / plan.days,
        },
    }


def _per_hat_costs(lv: Level, costs: DayCosts, currency: str) -> dict[str, object]:
    """The largest cost in one HAT per day of each step, in ``currency`` (``epsilon`` or ``rho``)."""
    selection = lv.selection
    return {
        "speed": float(lv.measured.speed_costs.max()) if lv.hats else 0.0,
        "speeding": float(costs.speeding_hat) if lv.hats else 0.0,
        "selection": selection.rho_per_hat_per_day
        if currency == "rho"
        else selection.epsilon_per_hat_per_day,
    }


def _per_day_section(lv: Level, costs: DayCosts, ledger: PrivacyLedger) -> dict[str, object]:
    """Per HAT and per vehicle-day: each step's epsilon (Gaussian: converted from its rho alone) and the ledger's
    cumulative epsilon and delta per day (Gaussian: the summed rho converted once)."""
    plan = lv.plan
    gauss = plan.gaussian
    per_hat = _per_hat_costs(lv, costs, "epsilon")
    return {
        "epsilon_per_hat_per_day": {q: None if gauss else v for q, v in per_hat.items()},
        "epsilon_per_hat_per_day_reason": (
            "Gaussian noise is accounted in rho per HAT (rho_per_hat_per_day), composed and converted once"
            if gauss
            else None
        ),
        "epsilon_per_day": _each_epsilon(plan, costs.per_step),
        "epsilon_per_day_note": (
            "each query alone, converted from its rho at conversion_delta; the cumulative figure converts the "
            "summed rho once (tighter than the sum)"
            if gauss
            else "basic composition: the cumulative figure is the sum"
        ),
        "delta_per_day": ledger.delta_spent,
        "cumulative_epsilon_per_day": ledger.epsilon_spent,
    }


def _selection_section(
    cfg: HatReleaseConfig, plan: ReleasePlan, selection: SelectionResult
) -> dict[str, object]:
    """privacy.json's ``selection``: which HATs are released, how, and at what cost (per day and per window)."""
    return {
        "method": selection.method,
        "mechanism": selection.mechanism,
        "differentially_private": selection.differentially_private or cfg.neighbouring == "presence-public",
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
        # a route domain: every domain HAT is released; the threshold decides only where a mean is shown
        "every_domain_hat_released": selection.release_all,
    }


def _contribution_section(cfg: HatReleaseConfig, k: int, measured: Measured, hats: int) -> dict[str, object]:
    """K (max HATs per vehicle-day; 1 under L2 weights) and where it came from, and how many HATs were released or
    had a mean withheld."""
    return {
        "max_hats_per_vehicle_day": k,
        "max_hats_per_vehicle_day_source": (
            "contribution_bounding l2: no truncation, every domain HAT a vehicle-day visits is kept with weight "
            "1/sqrt(m) (m its HATs); the weights' L2 norm is 1, the sensitivity of K = 1 (docs/fleet.md)"
            if cfg.contribution_bounding == "l2"
            else "observed in the data (not DP)"
            if cfg.max_hats_per_vehicle_day == "observed"
            else "public bound, enforced by truncation on presence (daytime first, long dwells in one cell last, "
            "then a keyed hash of vehicle, day, cell, slot)"
        ),
        "hats_released": hats,
        "means_withheld_small_noisy_count": measured.withheld,
    }


def _settings_section(cfg: HatReleaseConfig, plan: ReleasePlan, truncated: int) -> dict[str, object]:
    """The public parameters of the release, the intervals' meaning and the truncation count."""
    return {
        "speed_max": cfg.speed_max,
        "queries": list(cfg.queries),
        "budget_split": plan.split_rule,
        "speed_limit": cfg.speed_limit,
        "precision": cfg.precision,
        "speed_estimator": cfg.speed_estimator,
        "intervals": CI_LABEL,
        "resolution": cfg.resolution,
        "vehicle_hat_days_truncated": truncated,
    }


def _rho_section(lv: Level, costs: DayCosts, window: Loss) -> dict[str, object]:
    """Gaussian noise only: the rho per HAT, per day and per window, and the delta of the one conversion."""
    return {
        "rho_per_hat_per_day": _per_hat_costs(lv, costs, "rho"),
        "rho_per_day": costs.per_step,
        "rho_per_window": window.rho,
        "conversion_delta": lv.plan.conversion_delta,
    }


def account(lv: Level, slots: SlotSpec, k: int, k_eff: int, truncated: int, not_dp: list[str]) -> HatRelease:
    """Charge the ledger from OpenDP's maps and build the tables and privacy.json's content.

    Per vehicle-day (:class:`DayCosts`): each step's top-K sum of per-HAT costs (ITMS report III E step 3). Per
    window: the queries' per-day loss for the group of D vehicle-days, plus the selection's OpenDP map at the
    window's distance; rho is converted once.
    """
    cfg, plan, selection, h = lv.cfg, lv.plan, lv.selection, lv.hats
    costs = _day_costs(lv, k_eff)
    ledger = _charge_level(lv, costs)
    window = plan.loss(costs.queries).group(plan.days) + plan.loss(*selection.window_cost)
    eps_window, delta_window = _stated(window, plan, plan.days)
    warning = _window_delta_warning(delta_window, plan.days)
    warnings = [] if warning is None else [warning]
    speed, speeding = _released_tables(lv, slots, costs.speeding_hat)
    privacy: dict[str, object] = {
        **_status_section(cfg, plan, not_dp, warnings),
        **_noise_section(lv),
        **_per_day_section(lv, costs, ledger),
        "days": plan.days,
        "epsilon_per_window": eps_window,
        "delta_per_window": delta_window,
        **_contribution_section(cfg, k, lv.measured, h),
        "selection": _selection_section(cfg, plan, selection),
        **_settings_section(cfg, plan, truncated),
        "ledger": ledger.to_dict(),
    }
    if plan.gaussian:
        privacy.update(_rho_section(lv, costs, window))
    return HatRelease(speed=speed, speeding=speeding, privacy=privacy, ledger=ledger, window=window)


# --- levels and the clip bound composed ----------------------------------------------------------------------

LEVEL_NAMES = {(0, 1): "finest"} | {lv[0]: mode for mode, lv in COARSEN_LEVELS.items() if len(lv) == 1}
"""Each level by name: the finest, and a coarser one by the coarsen mode that releases it alone."""

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


def _combined_ledger(
    cfg: HatReleaseConfig,
    plan: ReleasePlan,
    names: list[str],
    results: list[HatRelease],
    clip: ClipChoice | None,
) -> PrivacyLedger:
    """One ledger: the clip bound's charge (if any), then every level's entries (named ``entry [level]`` when there
    are several levels); a charge beyond the budget refuses the release."""
    entries = [
        replace(e, name=f"{e.name} [{name}]" if len(results) > 1 else e.name)
        for name, r in zip(names, results, strict=True)
        for e in r.ledger.entries
    ]
    if clip is not None:
        quantile = "opendp make_private_quantile" + (" (zCDP)" if plan.gaussian else "")
        entries.insert(
            0, ledger_entry("clip bound (dp-quantile)", plan.loss(clip.cost_day), cfg.neighbouring, quantile)
        )
    return _charged(cfg, plan, entries)


def _summed_per_query(
    plan: ReleasePlan, results: list[HatRelease], clip: ClipChoice | None
) -> dict[str, float]:
    """Each step's cost per vehicle-day (epsilon or rho) summed over the levels, plus the clip bound's."""
    per_query: dict[str, float] = {}
    for r in results:
        src = r.privacy[f"{plan.currency}_per_day"]
        for q, v in src.items():  # type: ignore[attr-defined]
            per_query[q] = per_query.get(q, 0.0) + float(v)
    if clip is not None:
        per_query["clip_bound"] = clip.cost_day
    return per_query


def _coarsen_section(
    cfg: HatReleaseConfig,
    plan: ReleasePlan,
    names: list[str],
    levels: tuple[tuple[int, int], ...],
    results: list[HatRelease],
) -> dict[str, object]:
    """privacy.json's ``coarsen``: the mode, rule and accounting of the levels, and one summary per level."""
    return {
        "mode": cfg.coarsen,
        "share": cfg.coarsen_share,
        "rule": cfg.coarsen_rule,
        "rule_explanation": COARSEN_RULES[cfg.coarsen_rule],
        "accounting": COARSEN_ACCOUNTING,
        "levels": [
            _level_summary(name, lv, r, cfg, plan.for_level(i))
            for i, (name, lv, r) in enumerate(zip(names, levels, results, strict=True))
        ],
    }


def _clip_section(cfg: HatReleaseConfig, plan: ReleasePlan, clip: ClipChoice) -> dict[str, object]:
    """privacy.json's ``clip_bound``: the DP quantile U' <= U, its OpenDP mechanism and its cost."""
    kind = plan.currency
    return {
        "method": "dp-quantile",
        "statistic": "each vehicle-day's largest HAT mean speed (after truncation to K)",
        "quantile": clip.alpha,
        "share": cfg.clip_share,
        "bound": clip.bound,
        "speed_max_public": cfg.speed_max,
        "candidates": f"{clip.candidates} equally spaced in (0, {cfg.speed_max}]",
        "mechanism": "opendp make_private_quantile, unknown size, "
        + ("zero-concentrated divergence" if plan.gaussian else "max divergence"),
        "scale": clip.scale,
        "distance_vehicle_day": clip.d_in,
        f"{kind}_per_day": clip.cost_day,
        f"{kind}_per_window": clip.cost_window,
        "note": "HAT mean speeds are clipped to [0, bound] and Query 1's sensitivity uses the bound (U' <= U); "
        "released means and intervals are clipped to [0, bound]",
    }


def _merged_warnings(results: list[HatRelease], delta_window: float, days: int) -> list[str]:
    """The levels' warnings once each, their per-level delta warnings replaced by one for the combined window."""
    warnings = [w for r in results for w in r.privacy["warnings"]]  # type: ignore[attr-defined]
    merged = [w for i, w in enumerate(warnings) if w not in warnings[:i] and "delta per window" not in w]
    warning = _window_delta_warning(delta_window, days)
    return merged if warning is None else [*merged, warning]


def _stacked(tables: list[pl.DataFrame], names: list[str]) -> pl.DataFrame:
    """The levels' tables stacked (diagonally); with several levels each row names its ``level``."""
    if len(tables) == 1:
        return pl.concat(tables, how="diagonal")
    return pl.concat(
        [t.with_columns(pl.lit(name).alias("level")) for t, name in zip(tables, names, strict=True)],
        how="diagonal",
    )


def _level_total(results: list[HatRelease], key: str) -> int:
    """The sum over the levels of an integer count in their privacy.json (``hats_released``, ...)."""
    return sum(int(r.privacy[key]) for r in results)  # type: ignore[call-overload]


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
    names = [LEVEL_NAMES[lv] for lv in levels]
    ledger = _combined_ledger(cfg, plan, names, results, clip)
    per_query = _summed_per_query(plan, results, clip)
    clip_window = clip.cost_window if clip is not None else 0.0
    window = sum((r.window for r in results), plan.loss(clip_window))
    eps_window, delta_window = _stated(window, plan, plan.days)
    p = dict(results[0].privacy)
    p["epsilon_per_day"] = _each_epsilon(plan, per_query)
    if plan.gaussian:
        p["rho_per_day"] = per_query
        p["rho_per_window"] = window.rho
    p["epsilon_per_window"] = eps_window
    p["delta_per_window"] = delta_window
    p["cumulative_epsilon_per_day"] = ledger.epsilon_spent
    p["delta_per_day"] = ledger.delta_spent
    p["ledger"] = ledger.to_dict()
    p["hats_released"] = _level_total(results, "hats_released")
    p["means_withheld_small_noisy_count"] = _level_total(results, "means_withheld_small_noisy_count")
    p["speed_max"] = cfg.speed_max
    p["resolution"] = cfg.resolution
    if len(results) > 1:
        p["coarsen"] = _coarsen_section(cfg, plan, names, levels, results)
    if clip is not None:
        p["clip_bound"] = _clip_section(cfg, plan, clip)
        # Query 1's sensitivity at the DP clip bound U' in place of U
        p["sensitivity"] = {**p["sensitivity"], "speed": _speed_sensitivity(cfg, clip.bound)}  # type: ignore[dict-item]
    p["warnings"] = _merged_warnings(results, delta_window, plan.days)
    speed = _stacked([r.speed for r in results], names)
    speeding = _stacked([r.speeding for r in results], names)
    keys = pl.concat([r.keys for r in results])
    return HatRelease(speed=speed, speeding=speeding, privacy=p, ledger=ledger, keys=keys, window=window)


def _level_summary(
    name: str, level: tuple[int, int], r: HatRelease, cfg: HatReleaseConfig, plan: ReleasePlan
) -> dict[str, object]:
    """One level's entry in privacy.json's ``coarsen.levels``: its grid, budget, cost per day and HAT counts."""
    kind = plan.currency
    q = r.privacy[f"{kind}_per_day"]
    return {
        "level": name,
        "resolution": cfg.resolution - level[0],
        "slot_minutes": cfg.slot_minutes * level[1],
        f"{kind}_budget": plan.budget,
        f"{kind}_per_day": q,
        f"{kind}_per_day_total": math.fsum(q.values()),  # type: ignore[attr-defined]
        "hats_passing_selection": r.privacy["hats_passing_selection"],
        "hats_covered_by_finer_level": r.privacy["hats_covered_by_finer_level"],
        "hats_released": r.privacy["hats_released"],
        "selection_threshold_vehicle_days": r.privacy["selection"]["threshold_vehicle_days"],  # type: ignore[index]
        "noise_scale": r.privacy["noise_scale"],
    }
