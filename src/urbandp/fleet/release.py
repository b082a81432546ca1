"""Differentially private release of average speed (Query 1) and speeding counts (Query 2) per HAT.

ITMS report sections II D, III D-F and IV C-D, with the corrections DESIGN.md requires:

* contribution bounding: a vehicle-day keeps at most K HATs (its K busiest, a per-vehicle-day choice, so the
  truncation is stable); K is a public bound, not the observed maximum the report reads from the data;
* speeds are clipped to [0, U] before Query 1, so (U - 0) really bounds a vehicle-day's mean;
* all noise from OpenDP; outputs rounded to a declared precision (Mironov 2012);
* the neighbouring relation is explicit: ``replace-one`` reproduces the report (N public, Query 1 sensitivity
  U/N); ``add-remove`` protects N too (noisy sum over noisy count).

The result holds the released tables and the full privacy accounting; :mod:`urbandp.fleet.pipeline` writes it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from urbandp.errors import BudgetExceededError, InputError
from urbandp.fleet.accounting import top_k_sum, window_delta, window_epsilon
from urbandp.fleet.config import PAPER_ESTIMATORS, HatReleaseConfig
from urbandp.fleet.selection import (
    SelectionResult,
    domain_cells,
    dp_public_domain,
    dp_threshold,
    public_threshold,
)
from urbandp.grid.slots import SlotSpec
from urbandp.privacy.ledger import LedgerEntry, PrivacyLedger
from urbandp.privacy.noise import NoiseSource, laplace_epsilon
from urbandp.privacy.rounding import round_to_precision

NEIGHBOURING_TEXT = {
    "replace-one": (
        "replace-one (ITMS report): neighbouring datasets differ in the records of one vehicle in one HAT on one day; "
        "which vehicles are present in each HAT on each day (hence N) is treated as public. Query 1 sensitivity = "
        "(speed_max - 0) / N, Query 2 sensitivity = 1 / D."
    ),
    "add-remove": (
        "add-remove: neighbouring datasets differ by adding or removing all records of one vehicle on one day, so "
        "N (vehicle-days per HAT) is protected too. Query 1 = noisy sum of per-vehicle-day mean speeds "
        "(sensitivity speed_max) / noisy N; Query 2 sensitivity = 1 / D."
    ),
}


SELECTION_MECHANISM = {
    "dp": "OpenDP make_laplace_threshold (unknown domain)",
    "dp-public-domain": "OpenDP discrete Laplace on every HAT of the public domain",
    "public-threshold": "none: true counts (report III C)",
}


@dataclass
class HatRelease:
    """Released tables and the privacy accounting of one run."""

    speed: pl.DataFrame
    speeding: pl.DataFrame
    privacy: dict[str, object]
    ledger: PrivacyLedger = field(default_factory=PrivacyLedger)


def truncate_vehicle_days(contributions: pl.DataFrame, k: int) -> tuple[pl.DataFrame, int]:
    """Keep each vehicle-day's K HATs with the most records (ties: lowest cell, slot); return rows dropped."""
    ranked = contributions.with_columns(
        pl.struct(
            (-pl.col("n_records").cast(pl.Int64)).alias("a"),
            pl.col("cell").alias("b"),
            pl.col("slot").alias("c"),
        )
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


def _grow_until(b: float, fits: Callable[[float], bool]) -> float:
    """OpenDP's maps round outward: grow a scale by a few ulps until its computed epsilon fits the budget."""
    for _ in range(200):
        if fits(b):
            return b
        b = float(np.nextafter(b, np.inf)) * (1 + 4e-16)
    raise RuntimeError("could not calibrate the noise scale within the budget")


def _shared_scale(cfg: HatReleaseConfig, n: np.ndarray, k_eff: int, days: int, eps: float) -> float:
    """The report's rule: one B for both queries so their epsilons per day sum to ``eps`` (III E-F solved for B)."""
    c = top_k_sum(cfg.speed_max / n, k_eff) + k_eff / days
    return _grow_until(
        c / eps,
        lambda b: (
            top_k_sum(_speed_epsilons(cfg, n, b), k_eff)
            + top_k_sum(np.full(len(n), laplace_epsilon(1 / days, b)), k_eff)
            <= eps
        ),
    )


def _speed_scale(cfg: HatReleaseConfig, n: np.ndarray, k_eff: int, eps: float) -> float:
    """Scale for Query 1 so that the sum of the K largest per-HAT epsilons equals ``eps``."""
    c = top_k_sum(cfg.speed_max / n, k_eff) if cfg.neighbouring == "replace-one" else k_eff * cfg.speed_max
    return _grow_until(c / eps, lambda b: top_k_sum(_speed_epsilons(cfg, n, b), k_eff) <= eps)


def _speeding_scale(k_eff: int, days: int, eps: float) -> float:
    """Scale for Query 2: K HATs each at sensitivity 1/D."""
    return _grow_until(k_eff / (days * eps), lambda b: k_eff * laplace_epsilon(1 / days, b) <= eps)


def _speed_epsilons(cfg: HatReleaseConfig, n: np.ndarray, b: float) -> np.ndarray:
    if cfg.neighbouring == "replace-one":
        distinct = {int(v): laplace_epsilon(cfg.speed_max / int(v), b) for v in np.unique(n)}
        return np.array([distinct[int(v)] for v in n], dtype=float)
    return np.full(len(n), laplace_epsilon(cfg.speed_max, b))


def release_hats(
    contributions: pl.DataFrame,
    cfg: HatReleaseConfig,
    days: int,
    noise: NoiseSource,
    *,
    slots: SlotSpec | None = None,
) -> HatRelease:
    """Run selection, Query 1 and Query 2 over a contributions table; return tables and accounting.

    ``days`` is D, the number of calendar days in the (public) date window.
    """
    if days < 1:
        raise InputError("the date window holds no day")
    slots = slots or SlotSpec(cfg.slot_minutes, *cfg.hours)
    not_dp: list[str] = []
    if cfg.max_hats_per_vehicle_day == "observed":
        k = max(1, observed_max_hats(contributions))
        not_dp.append("K (max HATs per vehicle-day) read from the data (report III E)")
        truncated = 0
    else:
        k = int(cfg.max_hats_per_vehicle_day)
        contributions, truncated = truncate_vehicle_days(contributions, k)
    per_hat = per_hat_aggregates(contributions, cfg.speed_limit)

    # --- selection -------------------------------------------------------------------------------------------
    eps_sel_day = (
        cfg.selection_fraction * cfg.epsilon_per_day if cfg.epsilon_per_day else cfg.selection_epsilon
    )
    selection: SelectionResult
    if cfg.selection == "dp" and cfg.domain_bbox is not None:
        cells = domain_cells(cfg.domain_bbox, cfg.resolution)
        if cells.len() == 0:
            raise InputError("domain_bbox holds no H3 cell centroid at this resolution")
        selection = dp_public_domain(
            per_hat, cells, slots.slots, k, eps_sel_day, cfg.min_vehicles_per_day, days, noise
        )
    elif cfg.selection == "dp":
        selection = dp_threshold(per_hat, k, eps_sel_day, cfg.delta, cfg.min_vehicles_per_day, days, noise)
    else:
        selection = public_threshold(per_hat, slots.slots, cfg.min_vehicles_per_day, days)
        if cfg.neighbouring == "add-remove":
            not_dp.append("public-threshold selection reads true vehicle counts (report III C)")
    released = (
        selection.hats.join(per_hat, on=["cell", "slot"], how="left")
        .with_columns(
            pl.col("n").fill_null(0),
            pl.col("sum_mean_speed").fill_null(0.0),
            pl.col("n_over_limit").fill_null(0),
        )
        .sort("cell", "slot")
    )
    if cfg.neighbouring == "replace-one":
        # N is public under replace-one, so HATs nobody visited are dropped without cost (Query 1 needs N > 0).
        released = released.filter(pl.col("n") > 0)
    h = released.height
    k_eff = min(k, h)
    n = released["n"].to_numpy().astype(float)

    # --- count for the add/remove denominator --------------------------------------------------------------------
    count_eps_day = 0.0
    count_scale: float | None = None
    if cfg.neighbouring == "add-remove" and h:
        if "noisy_n" in released.columns:
            noisy_n = released["noisy_n"].to_numpy().astype(float)
        else:  # public-threshold under add/remove: release a noisy count, charged
            count_scale = k / eps_sel_day
            noisy_n = noise.laplace(n, count_scale)
            count_eps_day = laplace_epsilon(float(k), count_scale)
    eps_selection_day = selection.epsilon_per_day + count_eps_day

    if cfg.neighbouring == "add-remove" and cfg.speed_estimator in PAPER_ESTIMATORS:
        not_dp.append(
            f"estimator {cfg.speed_estimator} assumes unit counts are public (replace-one); use clipped-mean"
        )

    # --- noise scales ------------------------------------------------------------------------------------------------
    if cfg.noise_scale is not None:
        b_speed = b_speeding = cfg.noise_scale
    elif h == 0:
        b_speed = b_speeding = math.inf
    else:
        assert cfg.epsilon_per_day is not None
        selection_share = (
            eps_selection_day if cfg.selection == "dp" or cfg.neighbouring == "add-remove" else 0.0
        )
        remaining = cfg.epsilon_per_day - selection_share
        if remaining <= 0:
            raise InputError("epsilon_per_day leaves nothing for the queries after selection")
        if cfg.neighbouring == "replace-one" and cfg.speed_share is None and cfg.speed_estimator == "report":
            b_speed = b_speeding = _shared_scale(cfg, n, k_eff, days, remaining)
        else:
            share = 0.5 if cfg.speed_share is None else cfg.speed_share
            eps_speed_budget = share * remaining
            b_speed = (
                _speed_scale(cfg, n, k_eff, eps_speed_budget) if cfg.speed_estimator == "report" else math.nan
            )
            b_speeding = _speeding_scale(k_eff, days, (1 - share) * remaining)

    # --- Query 1: average speed ------------------------------------------------------------------------------------
    speed_scales = np.full(h, b_speed)
    if h and cfg.speed_estimator != "report":
        mean_speed, eps_speed_hat, speed_scales = _user_level_means(
            contributions, released, cfg, eps_speed_budget / k_eff, noise, slots
        )
    if h:
        if cfg.speed_estimator == "report":
            eps_speed_hat = _speed_epsilons(cfg, n, b_speed)
            s = released["sum_mean_speed"].to_numpy().astype(float)
            if cfg.neighbouring == "replace-one":
                mean_speed = noise.laplace(s / n, b_speed)
            else:
                noisy_sum = noise.laplace(s, b_speed)
                mean_speed = np.clip(noisy_sum / np.maximum(noisy_n, 1.0), 0.0, cfg.speed_max)
        eps_speeding_hat = laplace_epsilon(1.0 / days, b_speeding)
        m = released["n_over_limit"].to_numpy().astype(float)
        over_per_day = noise.laplace(m / days, b_speeding)
    else:
        eps_speed_hat = np.zeros(0)
        eps_speeding_hat = laplace_epsilon(1.0 / days, b_speeding) if math.isfinite(b_speeding) else 0.0
        mean_speed = over_per_day = np.zeros(0)
    eps_speed_day = top_k_sum(eps_speed_hat, k_eff)
    eps_speeding_day = top_k_sum(np.full(h, eps_speeding_hat), k_eff)
    cumulative = eps_speed_day + eps_speeding_day + eps_selection_day

    ledger = PrivacyLedger(budget_epsilon=cfg.budget_per_day or cfg.epsilon_per_day)
    try:
        ledger.charge(
            LedgerEntry(
                "selection",
                eps_selection_day,
                selection.delta_per_day,
                "vehicle-day",
                cfg.neighbouring,
                SELECTION_MECHANISM[selection.method] + (" + laplace count" if count_scale else ""),
            )
        )
        ledger.charge(LedgerEntry("speed", eps_speed_day, 0.0, "vehicle-day", cfg.neighbouring, "laplace"))
        ledger.charge(
            LedgerEntry("speeding", eps_speeding_day, 0.0, "vehicle-day", cfg.neighbouring, "laplace")
        )
    except BudgetExceededError as err:
        raise BudgetExceededError(f"release refused: {err}") from None

    labels = released.select(slots.label_expr(pl.col("slot")).alias("slot"))
    cells = released.select(_cell_expr()).to_series()
    speed = pl.DataFrame(
        {
            "h3_cell": cells,
            "slot": labels["slot"],
            "mean_speed": round_to_precision(mean_speed, cfg.precision),
            "noise_scale": speed_scales,
            "epsilon_hat_day": eps_speed_hat,
        }
    )
    speeding = pl.DataFrame(
        {
            "h3_cell": cells,
            "slot": labels["slot"],
            "vehicles_over_limit_per_day": round_to_precision(over_per_day, cfg.precision),
            "noise_scale": np.full(h, b_speeding),
            "epsilon_hat_day": np.full(h, eps_speeding_hat),
        }
    )
    privacy: dict[str, object] = {
        "differentially_private": not not_dp,
        "not_dp_reasons": not_dp,
        "neighbouring": cfg.neighbouring,
        "neighbouring_explanation": NEIGHBOURING_TEXT[cfg.neighbouring],
        "privacy_unit": "vehicle-day",
        "noise_scale": {
            "speed": float(np.nanmax(speed_scales)) if h else b_speed,
            "speeding": b_speeding,
            "selection": selection.scale,
            "count": count_scale,
        },
        "sensitivity": {
            "speed": (f"{cfg.speed_max}/N per HAT" if cfg.neighbouring == "replace-one" else cfg.speed_max),
            "speeding": 1.0 / days,
        },
        "epsilon_per_hat_per_day": {
            "speed": float(eps_speed_hat.max()) if h else 0.0,
            "speeding": float(eps_speeding_hat) if h else 0.0,
            "selection": selection.epsilon_per_hat_per_day,
        },
        "epsilon_per_day": {
            "speed": eps_speed_day,
            "speeding": eps_speeding_day,
            "selection": eps_selection_day,
        },
        "delta_per_day": selection.delta_per_day,
        "cumulative_epsilon_per_day": cumulative,
        "days": days,
        "epsilon_per_window": window_epsilon(cumulative, days),
        "delta_per_window": window_delta(cumulative, selection.delta_per_day, days),
        "max_hats_per_vehicle_day": k,
        "max_hats_per_vehicle_day_source": (
            "observed in the data (not DP)"
            if cfg.max_hats_per_vehicle_day == "observed"
            else "public bound, enforced by truncation"
        ),
        "hats_released": h,
        "selection": {
            "method": selection.method,
            "differentially_private": selection.differentially_private or cfg.neighbouring == "replace-one",
            "threshold_vehicle_days": selection.threshold,
            "noise_scale": selection.scale,
            "epsilon_per_day": selection.epsilon_per_day,
            "delta_per_day": selection.delta_per_day,
        },
        "speed_max": cfg.speed_max,
        "speed_limit": cfg.speed_limit,
        "precision": cfg.precision,
        "speed_estimator": cfg.speed_estimator,
        "vehicle_hat_days_truncated": truncated,
        "ledger": ledger.to_dict(),
    }
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
