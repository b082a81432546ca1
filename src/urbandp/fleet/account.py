"""Step 6 of a fleet release: account. A pure function of the plan and the measurements; no noise is drawn here.

:func:`account` charges one level's ledger from OpenDP's maps (per-HAT costs of the plan's mechanism, per day
the sum of the K largest: a vehicle-day touches at most K HATs, ITMS report III E step 3), composes the losses
as :class:`~urbandp.privacy.loss.Loss` (epsilon for Laplace; rho for Gaussian, converted once to (epsilon,
delta) by OpenDP), per window by group privacy over the D vehicle-days of one vehicle plus the selection's map at
the window's distance, and returns the typed :class:`HatRelease`: the tables and privacy.json's content (written
by :func:`urbandp.privacy.report.write_privacy_json`). :func:`combine_levels` composes the levels of a coarsened
release and its DP clip bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from urbandp.errors import BudgetExceededError, InvalidParameterError
from urbandp.fleet.accounting import top_k_sum
from urbandp.fleet.config import HatReleaseConfig
from urbandp.fleet.measure import ClipChoice, Measured, cell_expr
from urbandp.fleet.plan import QueryScales, ReleasePlan
from urbandp.fleet.selection import SelectionResult
from urbandp.grid.slots import SlotSpec
from urbandp.privacy.ledger import LedgerEntry, PrivacyLedger
from urbandp.privacy.loss import Loss
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
    owner_report: dict[str, object] = field(
        default_factory=dict
    )  # exact counts: owner_only/input_report.json
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
    count_day = 0.0
    if scales.count is not None:
        count_day = top_k_sum(np.full(h, plan.cost(1.0, scales.count)), k_eff)
    sel_day = selection.per_day(plan.currency) + count_day
    ledger = PrivacyLedger(
        budget_epsilon=cfg.budget_per_day or cfg.epsilon_per_day,
        budget_delta=None,
        conversion_delta=plan.conversion_delta,
    )
    sel_mech = selection.mechanism + (f" + {plan.mechanism} count" if scales.count else "")
    charges = [
        ("selection", plan.loss(sel_day, selection.delta_per_day), sel_mech),
        ("speed", plan.loss(speed_day), plan.mechanism),
        ("speeding", plan.loss(speeding_day), plan.mechanism),
    ]
    try:
        for name, loss, mech in charges:
            ledger.charge(ledger_entry(name, loss, cfg.neighbouring, mech))
    except BudgetExceededError as err:
        raise BudgetExceededError(f"release refused: {err}") from None
    cumulative = ledger.epsilon_spent
    delta_day = ledger.delta_spent
    d = plan.days
    # per window: the queries' per-day loss for the group of D vehicle-days, plus the selection's OpenDP map at
    # the window's distance; rho is converted once
    window = plan.loss(speed_day + speeding_day + count_day).group(d) + plan.loss(*selection.window_cost)
    eps_window, delta_window = _stated(window, plan, d)
    rho_window = window.rho if gauss else None
    per_query = {
        "speed": plan.loss(speed_day).approx(plan.conversion_delta)[0],
        "speeding": plan.loss(speeding_day).approx(plan.conversion_delta)[0],
        "selection": plan.loss(sel_day).approx(plan.conversion_delta)[0],
    }
    warnings: list[str] = []
    if delta_window > 1e-5:
        warnings.append(
            f"delta per window is {delta_window:.3g}, not small: a vehicle's presence over the {d}-day window is "
            "weakly protected; give --domain-bbox (no delta for selection) or a shorter window"
        )

    labels = released.select(slots.label_expr(pl.col("slot")).alias("slot"))["slot"]
    cells = released.select(cell_expr()).to_series()
    prec = cfg.precision
    cost_col = f"{plan.currency}_hat_day"
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
            else "public bound, enforced by truncation on presence (daytime first, long dwells in one cell last, "
            "then a keyed hash of vehicle, day, cell, slot)"
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
    return HatRelease(speed=speed, speeding=speeding, privacy=privacy, ledger=ledger, window=window)


# --- levels and the clip bound composed ----------------------------------------------------------------------

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
    kind = plan.currency
    try:
        if clip is not None:
            ledger.charge(
                ledger_entry(
                    "clip bound (dp-quantile)",
                    plan.loss(clip.cost_day),
                    cfg.neighbouring,
                    "opendp make_private_quantile" + (" (zCDP)" if gauss else ""),
                )
            )
        for name, r in zip(names, results, strict=True):
            for e in r.ledger.entries:
                ledger.charge(replace(e, name=f"{e.name} [{name}]" if len(results) > 1 else e.name))
    except BudgetExceededError as err:
        raise BudgetExceededError(f"release refused: {err}") from None
    per_query: dict[str, float] = {}
    for r in results:
        src = r.privacy[f"{kind}_per_day"]
        for q, v in src.items():  # type: ignore[attr-defined]
            per_query[q] = per_query.get(q, 0.0) + float(v)
    if clip is not None:
        per_query["clip_bound"] = clip.cost_day
    clip_window = clip.cost_window if clip is not None else 0.0
    window = sum((r.window for r in results), plan.loss(clip_window))
    eps_window, delta_window = _stated(window, plan, plan.days)
    p = dict(results[0].privacy)
    p["epsilon_per_day"] = {q: plan.loss(v).approx(plan.conversion_delta)[0] for q, v in per_query.items()}
    if gauss:
        p["rho_per_day"] = per_query
        p["rho_per_window"] = window.rho
    p["epsilon_per_window"] = eps_window
    p["delta_per_window"] = delta_window
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
                _level_summary(name, lv, r, cfg, plan.for_level(i))
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
    return HatRelease(speed=speed, speeding=speeding, privacy=p, ledger=ledger, keys=keys, window=window)


def _level_summary(
    name: str, level: tuple[int, int], r: HatRelease, cfg: HatReleaseConfig, plan: ReleasePlan
) -> dict[str, object]:
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
