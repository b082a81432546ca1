"""The forecast of a fleet release before spending budget: what ``urbandp plan`` reports (docs/fleet.md, "Planner
and guardrails", lists plan.json's figures); the release's own plan, which this forecast reads, is
:mod:`urbandp.fleet._plan`.

:func:`make_plan` reads public parameters only (the release config and D, the public window's days) and predicts
from the same calibration the release uses (:func:`urbandp.fleet._plan.plan_release`,
:func:`urbandp.fleet._measure_selection.calibrate_selection`, OpenDP's maps): the sd of every noisy column and of
the mean at ``n`` vehicle-days (delta method), the selection threshold and its pass probability, and what reaches
``target_error``. Under add/remove the speed noise does not depend on the data at all; under presence-public it
depends on the public N of the released HATs, which the planner takes as ``n`` for all K HATs of a vehicle-day
(worst case). The distribution of vehicle-days per HAT is data: the planner gets it only through a charged DP
histogram or pilot (:func:`dp_histogram`, :func:`paid_pilot`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import cast

import numpy as np
import polars as pl

from urbandp._privacy.loss import Loss
from urbandp._privacy.mechanisms import calibrate
from urbandp._privacy.noise import NoiseSource, rho_for_epsilon, zcdp_epsilon
from urbandp.errors import InvalidParameterError
from urbandp.fleet._domain import domain_grid, restrict_to_domain
from urbandp.fleet._domain_files import PublicDomain
from urbandp.fleet._measure import l2_normalised, per_hat_aggregates, truncate_vehicle_days
from urbandp.fleet._measure_selection import calibrate_selection, measure_selection
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._plan import (
    ReleasePlan,
    calibrate_level_selection,
    calibrate_queries,
    plan_release,
    planned_loss,
)
from urbandp.fleet._postprocess_pooling import mean_variance
from urbandp.fleet._predict import (
    M_EDGES,
    M_HISTOGRAM_SHARE,
    RUNS,
    TYPICAL_SPEED,
    cfg_k,
    predict_release,
    schedule_profile,
    simulate,
)

HISTOGRAM_EDGES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


@dataclass(frozen=True)
class NoisePrediction:
    """The noise sds of the release's columns at a HAT of ``n`` vehicle-days, the sd of its mean, and the
    selection's threshold and noise (:func:`predict_noise`)."""

    sd_sum: float | None  # add/remove: sd of noisy_sum
    sd_count: float | None  # sd of noisy_vehicle_days (selection or count)
    sd_speeding: float
    sd_mean: float
    threshold: float | None
    selection_sd: float | None

    def pass_probability(self, n: float) -> float:
        """Probability that a HAT with ``n`` true vehicle-days passes the selection threshold."""
        if self.threshold is None or self.selection_sd is None:
            return 1.0 if self.threshold is None else float(n >= self.threshold)
        return 1.0 - NormalDist(n, self.selection_sd).cdf(self.threshold - 0.5)


def _selection_sd(plan: ReleasePlan, scale: float) -> float:
    """The sd of the selection's noisy count: OpenDP's discrete Laplace on the integer count under pure DP,
    ``sqrt(2 e^(-1/b)) / (1 - e^(-1/b))`` (Canonne, Kamath, Steinke 2020, section 2), about 4% below the continuous
    ``sqrt(2) b`` at ``b = 1``; the Gaussian's discrete twin has the continuous sd to within 1e-8 for sigma >= 1."""
    if plan.gaussian:
        return plan.noise(scale).std
    q = math.exp(-1.0 / scale)
    return math.sqrt(2.0 * q) / (1.0 - q)


def predict_noise(
    cfg: HatReleaseConfig, days: int, n: float, domain_hats: int | None = None
) -> NoisePrediction:
    """The noise sds the release will use at a HAT of ``n`` vehicle-days, assuming at least K HATs are released
    (the usual case), from the release's own calibration (:func:`urbandp.fleet._plan.calibrate_level_selection`,
    :func:`urbandp.fleet._plan.calibrate_queries`).

    ``domain_hats``: the size of the public domain (:func:`urbandp.fleet._domain.domain_grid`, as the release
    counts it), which sets its display threshold; None: the threshold of an unknown domain. The sd of the mean is
    the speed noise's under presence-public (N public), and under add/remove the delta method's on ``U/2 + S~/N~``
    (:func:`urbandp.fleet._postprocess_pooling.mean_variance`) at a mean speed of
    :data:`urbandp.fleet._predict.TYPICAL_SPEED`.
    """
    plan = plan_release(cfg, days)
    k = plan.k or cfg_k(cfg)
    threshold = selection_sd = None
    if cfg.selection == "dp":
        cal = calibrate_level_selection(cfg, plan, k, domain_hats)
        threshold, selection_sd = cal.threshold, _selection_sd(plan, cal.scale)
    scales = calibrate_queries(cfg, plan, np.full(k, float(n)), k)
    sd_count = selection_sd if scales.count is None else plan.noise(scales.count).std
    sd_speed, sd_speeding = plan.noise(scales.speed).std, plan.noise(scales.speeding).std
    if cfg.neighbouring == "presence-public":
        return NoisePrediction(None, sd_count, sd_speeding, sd_speed, threshold, selection_sd)
    centre = min(cfg.speed_max, TYPICAL_SPEED) - cfg.speed_max / 2  # the sum is centred at U/2
    sd_mean = math.sqrt(mean_variance(sd_speed, sd_count or 0.0, np.asarray(centre), np.asarray(n)))
    return NoisePrediction(sd_speed, sd_count, sd_speeding, sd_mean, threshold, selection_sd)


PRIOR_EPSILONS = (1.0, 2.0, 4.0, 8.0, 16.0)
PRIOR_RUNS = 3
"""Simulated releases per epsilon of the schedule prior's table (the headline prediction has :data:`RUNS`)."""


def schedule_prior(
    cfg: HatReleaseConfig, days: int, domain: PublicDomain, prediction: dict[str, object]
) -> dict[str, object]:
    """Useful HATs expected from the GTFS schedule at this epsilon (``prediction``, the release run on fleets
    drawn from the schedule, :func:`urbandp.fleet._predict.simulate`) and at :data:`PRIOR_EPSILONS`."""
    profile = schedule_profile(domain, cfg)
    table = []
    for e in PRIOR_EPSILONS:
        at_e = cfg.model_copy(update={"epsilon_per_day": e})
        got = simulate(at_e, days, profile, domain, PRIOR_RUNS).summary("useful")
        table.append({"epsilon_per_day": e, "expected_useful_hats": got["mean"], "sd": got["sd"]})
    useful = cast(dict[str, float], prediction["useful"])
    return {
        "epsilon_per_day": cfg.epsilon_per_day,
        "expected_useful_hats": useful["mean"],
        "sd": useful["sd"],
        "interval95": [useful["low"], useful["high"]],
        "target_width_kmh": cfg.target_width,
        "scheduled_hats": int(domain.scheduled_trips.height) if domain.scheduled_trips is not None else 0,
        "by_epsilon": table,
        "hats_per_vehicle_day": domain.hats_per_vehicle_day,
        "assumptions": profile.assumptions + "; the release itself run on fleets drawn from the schedule",
    }


def epsilon_for_target(cfg: HatReleaseConfig, days: int, n: float, target: float) -> float | None:
    """Epsilon per day whose predicted sd of the mean at ``n`` vehicle-days equals ``target``.

    Every scale of the release is proportional to 1 / budget (Laplace, budget epsilon) or 1 / sqrt(budget)
    (Gaussian, budget rho), and so is the sd of the mean; so the budget is solved in closed form from one
    prediction and converted back to epsilon by OpenDP's map.
    """
    eps0 = cfg.epsilon_per_day or 10.0
    c = cfg.model_copy(update={"epsilon_per_day": eps0, "noise_scale": None})
    sd0 = predict_noise(c, days, n).sd_mean
    plan = plan_release(c, days)
    if not plan.gaussian:
        return eps0 * sd0 / target
    assert plan.total_budget is not None and plan.conversion_delta is not None
    # every share (clip bound, levels, selection, queries) scales with the total rho
    return zcdp_epsilon(plan.total_budget * (sd0 / target) ** 2, plan.conversion_delta)


def _dp_bins(
    values: np.ndarray,
    edges: tuple[int, ...],
    mechanism: str,
    sensitivity: float,
    budget: float,
    noise: NoiseSource,
    name: str,
) -> tuple[list[dict[str, float]], Loss]:
    """A histogram of ``values`` in ``edges`` bins (the last one open) with OpenDP's ``mechanism`` calibrated to
    ``budget`` at ``sensitivity``; each bin's noisy count clamped at 0 and unclamped, and the loss spent."""
    bounds = np.array([*edges, np.inf])
    counts = np.histogram(values, bins=bounds)[0].astype(float)
    histogram = calibrate(mechanism, sensitivity, budget)
    noisy = histogram.draw(counts, noise)
    bins = [
        {"from": float(a), "to": float(b), name: max(float(v), 0.0), f"{name}_unclamped": float(v),
         "noise_sd": histogram.std}
        for a, b, v in zip(bounds[:-1], bounds[1:], noisy, strict=True)
    ]  # fmt: skip
    return bins, histogram.loss(sensitivity)


def dp_histogram(
    per_hat_counts: np.ndarray, k: int, epsilon: float, noise: NoiseSource
) -> tuple[list[dict[str, float]], float]:
    """Laplace histogram of vehicle-days per HAT in :data:`HISTOGRAM_EDGES` bins; returns (bins, epsilon spent).

    Add/remove one vehicle-day moves each of its <= K HATs by one vehicle-day, so at most 2K bin counts change by
    1 (L1 sensitivity 2K); noise scale 2K / epsilon (OpenDP's Laplace; epsilon from its map).
    """
    bins, loss = _dp_bins(per_hat_counts, HISTOGRAM_EDGES, "laplace", 2.0 * k, epsilon, noise, "noisy_hats")
    return bins, loss.epsilon


def dp_pilot(
    contributions: pl.DataFrame,
    cfg: HatReleaseConfig,
    days: int,
    rho: float,
    grid: pl.DataFrame,
    noise: NoiseSource,
) -> tuple[pl.DataFrame, float]:
    """A pilot of the release over its public domain: the release's own L2-normalised weights and its own noisy
    count of every domain HAT (:func:`urbandp.fleet._measure.select_hats`'s calibration: Gaussian, L2 sensitivity 1)
    at ``rho`` per vehicle-day, whatever the release's bounding (under truncation the weights' sensitivity 1 gives
    sqrt K times less noise than counts truncated to K; the planner turns weighted counts back into vehicle-days
    with the histogram of HATs per vehicle-day). Returns the HATs ``(cell, slot, noisy_n)`` and the noise sd.
    Contributions must already be restricted to the domain."""
    bounded, k = l2_normalised(contributions), 1
    cal = calibrate_selection(
        gaussian=True, k=k, days=days, budget=rho, delta=cfg.delta, min_per_day=cfg.min_per_day,
        domain_size=grid.height, release_all=True,
    )  # fmt: skip
    result = measure_selection(cal, per_hat_aggregates(bounded, cfg.speed_limit), noise, grid)
    return result.hats.select("cell", "slot", "noisy_n"), cal.scale


@dataclass(frozen=True)
class PaidPilot:
    """What ``--histogram-epsilon`` buys over a public domain: the histogram of HATs per vehicle-day and the pilot's
    noisy counts with their noise sd (:func:`paid_pilot`)."""

    m_histogram: list[dict[str, float]]
    pilot: tuple[pl.DataFrame, float]


def pilot_loss(cfg: HatReleaseConfig, epsilon: float) -> Loss:
    """The pilot's loss per vehicle-day: the rho whose conversion at the release's delta is ``epsilon``."""
    return Loss.zcdp(rho_for_epsilon(epsilon, cfg.delta))


def paid_pilot(
    contributions: pl.DataFrame,
    cfg: HatReleaseConfig,
    days: int,
    domain: PublicDomain,
    rho: float,
    noise: NoiseSource,
) -> PaidPilot:
    """Spend ``rho`` per vehicle-day on the planner's inputs over a public domain: the contributions off the domain
    dropped (as the release drops them), then :data:`urbandp.fleet._predict.M_HISTOGRAM_SHARE` of ``rho`` on the
    histogram of HATs per vehicle-day in :data:`urbandp.fleet._predict.M_EDGES` bins (add/remove one vehicle-day
    moves one bin count by 1: L2 sensitivity 1) and the rest on the pilot (:func:`dp_pilot`). Both Gaussian, so the
    two compose by adding rho; over D days a vehicle pays the group bound D^2 rho."""
    grid = domain_grid(domain, cfg.slot_spec.slots)
    kept = restrict_to_domain(contributions, grid, domain)[0]
    per_vehicle_day = kept.group_by("vehicle", "day").len()["len"].to_numpy()
    share = M_HISTOGRAM_SHARE * rho
    m_histogram = _dp_bins(per_vehicle_day, M_EDGES, "gaussian", 1.0, share, noise, "noisy_vehicle_days")[0]
    return PaidPilot(m_histogram, dp_pilot(kept, cfg, days, (1 - M_HISTOGRAM_SHARE) * rho, grid, noise))


def expected_passing(pred: NoisePrediction, bins: list[dict[str, float]]) -> tuple[float, float]:
    """Expected HATs passing selection from a noisy histogram, and the sd of that estimate from the histogram's
    noise: sum over bins of the bin's count x the pass probability at the bin's centre.

    The unclamped noisy counts are used (clamping each bin at 0 adds the positive part of the noise of every empty
    bin: with K = 96 at epsilon 0.1 that bias alone was thousands of HATs). The estimate is post-processing.
    """
    total = var = 0.0
    for b in bins:
        hi = b["to"] if math.isfinite(b["to"]) else 2 * b["from"]
        p = pred.pass_probability(math.sqrt(b["from"] * hi))
        total += b.get("noisy_hats_unclamped", b["noisy_hats"]) * p
        var += (p * b.get("noise_sd", 0.0)) ** 2
    return max(total, 0.0), math.sqrt(var)


def check_target_error(target_error: float | None) -> None:
    """Refuse a ``--target-error`` that no release can reach: 0, negative or not finite."""
    if target_error is not None and not (math.isfinite(target_error) and target_error > 0):
        raise InvalidParameterError(
            f"target_error must be a finite sd in km/h above 0, got {target_error:g}: no release reaches it",
            parameters="target_error",
        )


def _vehicle_day_sizes(cfg: HatReleaseConfig, days: int, pred: NoisePrediction) -> list[float]:
    """The HAT sizes (vehicle-days) the report is given at: 0.5, 1, 2, 4 and 10 x the selection threshold (or x
    the minimum per day x D without selection), at least 1."""
    base_t = pred.threshold or cfg.min_per_day * days
    return sorted({max(1.0, round(base_t * f)) for f in (0.5, 1, 2, 4, 10)})


def _noise_section(
    cfg: HatReleaseConfig,
    days: int,
    pred: NoisePrediction,
    ns: list[float],
    spends: dict[str, object],
    typical_m: float | None = None,
) -> dict[str, object]:
    """The report's head: what the plan spends (``spends``: the epsilon and what it buys, None when it reads no
    data), the mechanism, the bounding, the noise of each column and, at each size in ``ns``, the sd of the mean
    and the probability of passing selection. Under L2 weights the sizes are weighted counts (a vehicle-day of m
    HATs counts ``1/sqrt(m)``), with the unweighted figure at ``typical_m``."""
    l2 = cfg.contribution_bounding == "l2"
    rows = [
        {
            "vehicle_days": n,
            **({"vehicle_days_unweighted": round(n * math.sqrt(typical_m), 1)} if l2 and typical_m else {}),
            "sd_mean_speed": predict_noise(cfg, days, n).sd_mean,
            "pass_probability": pred.pass_probability(n),
        }
        for n in ns
    ]
    return {
        "spends": spends,
        "reads_data": spends["what"] is not None,
        "mechanism": cfg.resolved_mechanism,
        "neighbouring": cfg.neighbouring,
        "days": days,
        "contribution_bounding": cfg.contribution_bounding,
        "max_hats_per_vehicle_day": None if l2 else cfg.max_hats_per_vehicle_day,
        "bounding_note": (
            "l2: no cap on HATs per vehicle-day; every domain HAT a vehicle-day visits is kept with weight 1/sqrt(m) "
            "(m its HATs), the sensitivities of K = 1"
            if l2
            else f"truncate: each vehicle-day keeps at most K = {cfg.max_hats_per_vehicle_day} HATs"
        ),
        "vehicle_days_are": (
            "weighted counts: each vehicle-day adds 1/sqrt(m) to each of its m HATs (vehicle_days_unweighted: the "
            f"count of vehicle-days of m = {typical_m:.0f} HATs giving that weight)"
            if l2 and typical_m
            else "weighted counts: each vehicle-day adds 1/sqrt(m) to each of its m HATs"
            if l2
            else "vehicle-days (each kept HAT of a vehicle-day counts 1)"
        ),
        "noise_sd": {
            "noisy_sum": pred.sd_sum,
            "noisy_vehicle_days": pred.sd_count,
            "vehicles_over_limit_per_day": pred.sd_speeding,
        },
        "selection_threshold_vehicle_days": pred.threshold,
        "per_vehicle_days": rows,
        "note": (
            f"sd of the mean by the delta method at a mean speed of {TYPICAL_SPEED:g} km/h; intervals: 1.96 sd. "
            "Coarser H3 resolution (one level) gathers about 7x the vehicle-days per HAT, slots twice as long 2x."
        ),
    }


def _budget_split(cfg: HatReleaseConfig, days: int) -> dict[str, object]:
    """How the budget is shared between the DP clip bound and the coarsening levels."""
    plan = plan_release(cfg, days)
    return {
        "total": plan.total_budget,
        "clip_bound": plan.clip_budget,
        "levels": list(plan.level_budgets),
        "unit": plan.currency,
        "note": "the noise above is the finest level's, at its share of the budget; with clip_bound "
        "dp-quantile it assumes U (the DP bound U' <= U is only known after the release)",
    }


def _passing_section(
    cfg: HatReleaseConfig,
    pred: NoisePrediction,
    histogram: list[dict[str, float]] | None,
    pilot_run: dict[str, float] | None = None,
) -> dict[str, object]:
    """The expected HATs passing selection: with a pilot, the HATs the release released in its runs on the pilot's
    fleets (``pilot_run``); else from the DP histogram of vehicle-days per HAT, bought only without a public domain
    (so never under L2 weights, which need one; :func:`expected_passing`), with a warning when the histogram's
    noise swamps the estimate; without either, why there is none."""
    if pilot_run is not None:
        return {"expected_hats_passing": pilot_run["mean"], "expected_hats_passing_sd": pilot_run["sd"]}
    if histogram is None:
        return {
            "expected_hats_passing": None,
            "expected_hats_passing_reason": "needs the distribution of vehicle-days per HAT: --histogram-epsilon",
        }
    expected, sd = expected_passing(pred, histogram)
    out: dict[str, object] = {
        "histogram": histogram,
        "expected_hats_passing": expected,
        "expected_hats_passing_sd": sd,
    }
    if sd > 0.2 * max(expected, 1.0):
        out["expected_hats_passing_warning"] = (
            f"the histogram's noise (sd {sd:.0f} HATs on this estimate) is more than 20% of it: the histogram "
            f"moves by up to 2K = {2 * (cfg_k(cfg))} bin counts per vehicle-day; raise --histogram-epsilon or "
            "lower --max-hats-per-vehicle-day for a usable estimate"
        )
    return out


def _prior_section(
    cfg: HatReleaseConfig, days: int, domain: PublicDomain, prediction: dict[str, object] | None
) -> dict[str, object]:
    """The schedule prior (:func:`schedule_prior`) when the domain has a schedule and the prediction came from it,
    else why not."""
    if prediction is not None and prediction.get("source") == "schedule":  # run on the domain's schedule
        return {"schedule_prior": schedule_prior(cfg, days, domain, prediction)}
    return {
        "schedule_prior": None,
        "schedule_prior_reason": "needs a schedule (--domain-gtfs with stop_times) and --epsilon-per-day; "
        "other inputs: see prediction",
    }


def _typical_m(domain: PublicDomain | None, m_histogram: list[dict[str, float]] | None) -> float | None:
    """HATs per vehicle-day where known before the release: the schedule's, else the median of the DP histogram
    of HATs per vehicle-day (its noisy counts clamped at 0, each bin at its geometric centre)."""
    if domain is not None and domain.hats_per_vehicle_day:
        return float(domain.hats_per_vehicle_day)
    if not m_histogram:
        return None
    centres = [
        math.sqrt(b["from"] * (b["to"] if math.isfinite(b["to"]) else 2 * b["from"])) for b in m_histogram
    ]
    counts = np.array([max(b.get("noisy_vehicle_days", 0.0), 0.0) for b in m_histogram])
    if counts.sum() <= 0:
        return None
    return float(centres[int(np.searchsorted(np.cumsum(counts), counts.sum() / 2))])


def _target_section(
    cfg: HatReleaseConfig, days: int, ns: list[float], target_error: float
) -> dict[str, object]:
    """What reaches ``target_error``: the epsilon per day needed at each size in ``ns``
    (:func:`epsilon_for_target`) and the largest K at this epsilon at the middle size."""
    reach = [
        {"vehicle_days": n, "epsilon_per_day": epsilon_for_target(cfg, days, n, target_error)} for n in ns
    ]
    n_mid = ns[len(ns) // 2]
    k_ok = None
    if cfg.epsilon_per_day is not None:
        for k in range(cfg_k(cfg), 0, -1):
            c = cfg.model_copy(update={"max_hats_per_vehicle_day": k})
            if predict_noise(c, days, n_mid).sd_mean <= target_error:
                k_ok = k
                break
    return {
        "km_h": target_error,
        "epsilon_per_day_needed": reach,
        "largest_k_at_this_epsilon": k_ok,
        "at_vehicle_days": n_mid,
    }


def make_plan(
    cfg: HatReleaseConfig,
    days: int,
    *,
    target_error: float | None = None,
    histogram: list[dict[str, float]] | None = None,
    histogram_epsilon: float = 0.0,
    domain: PublicDomain | None = None,
    m_histogram: list[dict[str, float]] | None = None,
    fleet_size: float | None = None,
    runs: int | None = None,
    pilot: tuple[pl.DataFrame, float] | None = None,
) -> dict[str, object]:
    """The planner's report (also written as JSON).

    ``target_error`` (``--target-error``), the sd of a released mean in km/h, must be a finite number above 0: the
    epsilon it needs grows as ``1 / target_error**2`` (:func:`epsilon_for_target`). ``domain``: the public domain
    (:func:`urbandp.fleet._domain.load_public_domain`); with a GTFS schedule the report adds the expected
    useful HATs, spending nothing. ``prediction``: shown and useful HATs (pooled too with ``borrow_strength``) with
    a 95% interval, from the release itself run on fleets drawn from the ``pilot`` (with ``m_histogram``, its
    histogram of HATs per vehicle-day), the schedule or a GeoJSON domain's route lengths with ``fleet_size``
    (:mod:`urbandp.fleet._predict`). ``histogram``: the DP histogram of vehicle-days per HAT bought without a
    public domain, read by the closed form of the HATs passing selection (:func:`expected_passing`).
    """
    check_target_error(target_error)
    hats = None if domain is None else domain_grid(domain, cfg.slot_spec.slots).height
    pred = predict_noise(cfg, days, 1.0, hats)
    ns = _vehicle_day_sizes(cfg, days, pred)
    m = _typical_m(domain, m_histogram)
    what = "DP histogram of vehicle-days per HAT" if histogram else None
    if pilot is not None:
        what = (
            "a pilot: the release's own noisy count of every domain HAT, and a histogram of HATs per vehicle-day "
            "(Gaussian noise, zCDP; epsilon at the release's delta)"
        )
    out = _noise_section(cfg, days, pred, ns, {"epsilon": histogram_epsilon, "what": what}, m)
    # privacy.json's ``loss`` for these options: the object the release reserves and the store books (None when
    # it follows from the data, a noise scale without a budget)
    loss = planned_loss(cfg, days)
    out["loss"] = None if loss is None else loss.to_json()
    if cfg.clip_bound == "dp-quantile" or cfg.coarsen != "none":
        out["budget_split"] = _budget_split(cfg, days)
    predicted = predict_release(
        cfg, days, domain, m_histogram=m_histogram, fleet_size=fleet_size, pilot=pilot, runs=runs or RUNS
    )
    prediction = cast(dict[str, object] | None, predicted["prediction"])
    pilot_run = cast(dict[str, float], prediction["released"]) if pilot is not None and prediction else None
    out.update(_passing_section(cfg, pred, histogram, pilot_run))
    if m_histogram:
        out["hats_per_vehicle_day_histogram"] = m_histogram
    out.update(predicted)
    if domain is not None:
        out.update(_prior_section(cfg, days, domain, prediction))
    if target_error is not None:
        out["target_error"] = _target_section(cfg, days, ns, target_error)
    return out


def per_hat_counts(contributions: pl.DataFrame, k: int, slot_minutes: int = 60) -> np.ndarray:
    """True vehicle-days per HAT after truncation (input of :func:`dp_histogram` only)."""
    kept, _ = truncate_vehicle_days(contributions, k, slot_minutes)
    return kept.group_by("cell", "slot").len()["len"].to_numpy()
