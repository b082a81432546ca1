"""Differentially private release of the mean of vehicle-day mean speeds (Query 1) and speeding counts (Query 2) per
HAT (ITMS report sections II D, III D-F and IV C-D, with the corrections docs/design.md requires).

:func:`_release_hats` runs the steps in order, each in its own module: plan (:func:`~urbandp.fleet._plan.plan_release`,
public parameters only), bound (:func:`~urbandp.fleet._measure.truncate_vehicle_days`, or L2 weights), select
(:mod:`urbandp.fleet._measure_selection`), calibrate (:func:`~urbandp.fleet._plan.calibrate_queries`, from the HATs
the selection released), measure (:func:`~urbandp.fleet._measure.measure_queries`, the only draw) and account
(:func:`~urbandp.fleet._account.account`: per day the sum of the K largest per-HAT costs, III E step 3; per window
OpenDP's maps at the window's distance). It is internal: it draws from the noise source it is given and states the
loss, but reserves nothing and runs no guard; its one caller is :func:`urbandp.fleet._pipeline.release_fleet`,
inside a charge of the session.

``clip_bound="dp-quantile"`` spends a share of the budget on a DP clip bound U' <= U
(:func:`urbandp.fleet._measure.choose_clip_bound`, after bounding); ``coarsen`` repeats select to account at coarser
levels (H3 parents, merged slots; :mod:`urbandp.fleet._levels`) on what the finer levels did not release, and
:func:`urbandp.fleet._account.combine_levels` composes the levels' costs (docs/fleet.md, "Coarser where sparse").
The neighbouring relations are described in :mod:`urbandp.fleet._options`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from urbandp._grid.slots import SlotSpec
from urbandp._privacy.noise import NoiseSource
from urbandp.fleet._account import HatRelease, Level, account, combine_levels
from urbandp.fleet._domain import describe as describe_domain
from urbandp.fleet._domain import domain_grid, load_public_domain, restrict_to_domain
from urbandp.fleet._levels import coarse_contributions, covered_keys, released_units
from urbandp.fleet._measure import (
    ClipChoice,
    choose_clip_bound,
    l2_normalised,
    measure_queries,
    observed_max_hats,
    per_hat_aggregates,
    select_hats,
    truncate_vehicle_days,
)
from urbandp.fleet._options import COARSEN_LEVELS, PAPER_ESTIMATORS, HatReleaseConfig
from urbandp.fleet._plan import ReleasePlan, calibrate_queries, plan_release
from urbandp.fleet._postprocess_usefulness import useful_expr, usefulness, with_count_interval

if TYPE_CHECKING:
    from urbandp.fleet._domain_files import PublicDomain

__all__ = ["HatRelease"]


def _release_hats(
    contributions: pl.DataFrame,
    cfg: HatReleaseConfig,
    days: int,
    noise: NoiseSource,
    *,
    slots: SlotSpec | None = None,
    domain: PublicDomain | None = None,
) -> HatRelease:
    """Plan, bound, (clip bound), then per level select, calibrate, measure, account; combine the levels (the steps:
    the module's docstring). ``days`` is D, the public days of the window. ``domain``: the public domain
    (:func:`~urbandp.fleet._domain.load_public_domain`; loaded here from an extent when not given): contributions
    off it are dropped before truncation."""
    plan = plan_release(cfg, days)
    slots = slots or cfg.slot_spec
    not_dp = cfg.not_dp_reasons
    if domain is None and cfg.public_domain:
        domain = load_public_domain(cfg)
    grid = domain_grid(domain, slots.slots) if domain is not None else None
    off_domain = 0
    if grid is not None:
        contributions, off_domain = restrict_to_domain(contributions, grid, domain)
    contributions, k, truncated = _bound(contributions, cfg, plan, slots)
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
        level_cfg, level_slots = _level_setting(base_cfg, slots, up, merge)
        level_contrib, covered = _level_input(contributions, cfg, slots, published, up, level_slots)
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
            grid if i == 0 else None,
        )
        published.append((result.keys, merge))
        results.append(result)
    combined = (
        results[0] if len(results) == 1 and clip is None else combine_levels(cfg, plan, results, levels, clip)
    )
    _describe_release(combined, cfg, domain, grid, off_domain)
    return combined


def _bound(
    contributions: pl.DataFrame, cfg: HatReleaseConfig, plan: ReleasePlan, slots: SlotSpec
) -> tuple[pl.DataFrame, int, int]:
    """Step 2, bound each vehicle-day's contribution: (contributions, K, vehicle-days truncated).

    ``l2``: weights of L2 norm 1 per vehicle-day, the sensitivities (and accounting) of K = 1; K read from the
    data (``observed``): not DP (:attr:`HatReleaseConfig.not_dp_reasons`); else truncation to the plan's K HATs.
    """
    if cfg.contribution_bounding == "l2":
        return l2_normalised(contributions), 1, 0
    if plan.k is None:
        return contributions, max(1, observed_max_hats(contributions)), 0
    contributions, truncated = truncate_vehicle_days(contributions, plan.k, slots.slot_minutes)
    return contributions, plan.k, truncated


def _level_setting(
    base_cfg: HatReleaseConfig, slots: SlotSpec, up: int, merge: int
) -> tuple[HatReleaseConfig, SlotSpec]:
    """The config and slots of the level ``up`` H3 levels coarser with ``merge`` slots merged (the finest level
    keeps both)."""
    if (up, merge) == (0, 1):
        return base_cfg, slots
    level_cfg = base_cfg.model_copy(update={"resolution": base_cfg.resolution - up})
    return level_cfg, SlotSpec(slots.slot_minutes, slots.start_hour, slots.end_hour, merge)


def _level_input(
    contributions: pl.DataFrame,
    cfg: HatReleaseConfig,
    slots: SlotSpec,
    published: list[tuple[pl.DataFrame, int]],
    up: int,
    level_slots: SlotSpec,
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """A level's contributions, on its coarser HATs, and the HATs the finer levels' ``published`` keys cover
    (None at the finest level). Both read only released keys of finer levels: post-processing."""
    remainder = contributions
    if published and cfg.coarsen_rule == "fill":
        # a coarser HAT stands for its part that finer levels did not release: their rows are left out (the
        # choice reads released keys only: post-processing; each row still lies in one HAT per level)
        done = released_units(published, cfg.resolution, slots.slots)
        remainder = contributions.join(done, on=["cell", "slot"], how="anti")
    level_contrib = coarse_contributions(remainder, cfg.resolution - up, up, level_slots)
    if not published:
        return level_contrib, None
    covered = covered_keys(
        published,
        cfg.resolution - up,
        level_slots,
        rule=cfg.coarsen_rule,
        fine_resolution=cfg.resolution,
        base_slots=slots.slots,
    )
    return level_contrib, covered


def _describe_release(
    combined: HatRelease,
    cfg: HatReleaseConfig,
    domain: PublicDomain | None,
    grid: pl.DataFrame | None,
    off_domain: int,
) -> None:
    """Add to the release its contribution bounding, the usefulness of each HAT (post-processing) and the public
    domain; the records off the domain go to the owner's report only."""
    combined.privacy["contribution_bounding"] = cfg.contribution_bounding
    combined.privacy["contribution_bounding_chosen"] = cfg.chosen.get("contribution_bounding")
    combined.privacy["borrow_strength_chosen"] = cfg.chosen.get("borrow_strength")
    combined.privacy["estimand"] = estimand(cfg)
    combined.speed = combined.speed.with_columns(useful_expr(cfg.target_width))
    combined.privacy["usefulness"] = usefulness(combined.speed, cfg.target_width)
    if domain is not None and grid is not None:
        combined.privacy["domain"] = describe_domain(domain, grid)
        combined.owner_report["records_off_public_domain"] = off_domain


ESTIMAND = "mean of vehicle-day mean speeds"
"""What ``mean_speed`` estimates, by name (privacy.json, the map's header and legend, the docs): not the mean of all
readings, nor an average bus speed."""


def estimand(cfg: HatReleaseConfig) -> dict[str, str]:
    """privacy.json's ``estimand``: what a HAT's ``mean_speed`` estimates under this release's bounding."""
    each = "each vehicle-day's mean speed in the HAT (the mean of its readings there, clipped to [0, U]) is one value"
    if cfg.speed_estimator != "report":
        how = f"estimated by the user-level estimator {cfg.speed_estimator} over the HAT's vehicle-days"
    elif cfg.contribution_bounding == "l2":
        how = (
            "averaged over the HAT's vehicle-days with weight 1/sqrt(m), m the HATs that vehicle-day visits in the "
            "public domain (contribution_bounding l2): a vehicle-day seen in few HATs weighs more"
        )
    elif cfg.max_hats_per_vehicle_day == "observed":
        how = "averaged over the HAT's vehicle-days, every one kept"
    else:
        how = (
            "averaged over the HAT's vehicle-days, each vehicle-day keeping at most "
            f"{cfg.max_hats_per_vehicle_day} HATs (truncation to K)"
        )
    name = ESTIMAND if cfg.contribution_bounding != "l2" else f"weighted {ESTIMAND}"
    return {
        "name": name,
        "definition": f"{each}, {how}; the readings of a vehicle-day are not weighted by their number",
    }


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
    grid: pl.DataFrame | None = None,
) -> HatRelease:
    """One level: select, drop the HATs ``covered`` by a finer level's released HATs, calibrate, measure, account.

    Dropping covered HATs reads only the finer levels' released keys (a DP output), so it is post-processing;
    the queries are then calibrated on the HATs left (adaptive composition: their scales depend only on earlier
    DP outputs).
    """
    per_hat = per_hat_aggregates(contributions, cfg.speed_limit)
    selection = select_hats(per_hat, cfg, plan, k, noise, slots, grid)
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
        cfg,
        plan,
        released,
        scales,
        noise,
        contributions,
        slots,
        k_eff,
        selection,
    )
    level = Level(cfg, plan, selection, scales, measured, released)
    result = account(level, slots, k, k_eff, truncated, not_dp)
    result.speed = with_count_interval(result.speed, measured, cfg)
    result.keys = released.select("cell", "slot")
    result.privacy["hats_passing_selection"] = passed
    result.privacy["hats_covered_by_finer_level"] = passed - released.height if covered is not None else 0
    if cfg.neighbouring == "presence-public" and cfg.speed_estimator in PAPER_ESTIMATORS:
        result.privacy["public_by_assumption"] = (
            f"estimator {cfg.speed_estimator} reads each vehicle-day's record count: under presence-public the "
            "record counts are treated as public too (only speed values are protected)"
        )
    return result
