"""Guardrails: say before writing when a release will be useless, and what would change that (issue 8).

Everything here reads only the released (DP) tables, privacy.json's public parameters and OpenDP's maps
(post-processing), so the warnings can go into privacy.json.
"""

from __future__ import annotations

import math
from typing import Any

from urbandp.fleet.account import HatRelease
from urbandp.fleet.config import HatReleaseConfig
from urbandp.fleet.plan import plan_release
from urbandp.fleet.selection import calibrate_selection

EXIT_USELESS = 3


def _threshold(cfg: HatReleaseConfig, days: int, domain_size: int | None) -> float | None:
    if cfg.selection != "dp" or cfg.max_hats_per_vehicle_day == "observed":
        return None
    plan = plan_release(cfg, days)
    cal = calibrate_selection(
        gaussian=plan.gaussian,
        k=int(cfg.max_hats_per_vehicle_day),
        days=days,
        budget=plan.selection_budget,
        delta=plan.threshold_delta,
        min_per_day=cfg.min_per_day,
        domain_size=domain_size,
    )
    return cal.threshold


def options_that_help(cfg: HatReleaseConfig, days: int, domain_size: int | None) -> list[str]:
    """The three changes that lower the selection threshold most (public computation from OpenDP's maps)."""
    base = _threshold(cfg, days, domain_size)
    out: list[tuple[float, str]] = []
    if base is None:
        if cfg.selection == "public-threshold":
            out.append((0.0, f"--min-vehicles-per-day below {cfg.min_per_day:g} (threshold x D)"))
        out.append((1.0, f"--resolution {max(cfg.resolution - 1, 0)} (cells about 7x larger)"))
        out.append((2.0, f"--slot-minutes {cfg.slot_minutes * 2} (slots twice as long)"))
        return [text for _, text in out[:3]]
    k = int(cfg.max_hats_per_vehicle_day)
    candidates: list[tuple[str, dict[str, object]]] = [
        (f"--max-hats-per-vehicle-day {max(1, k // 4)}", {"max_hats_per_vehicle_day": max(1, k // 4)}),
        (
            f"--min-vehicles-per-day {cfg.min_per_day / 4:g}",
            {"min_vehicles_per_day": cfg.min_per_day / 4},
        ),
    ]
    if cfg.epsilon_per_day is not None:
        candidates.append(
            (f"--epsilon-per-day {cfg.epsilon_per_day * 2:g}", {"epsilon_per_day": cfg.epsilon_per_day * 2})
        )
        candidates.append(("--selection-fraction 0.3", {"selection_fraction": 0.3}))
    for text, change in candidates:
        alt = cfg.model_copy(update=change)
        t = _threshold(alt, days, domain_size)
        if t is not None and t < base:
            out.append((t, f"{text}: threshold {t:,.0f} vehicle-days"))
    if cfg.domain_bbox is None:
        out.append((math.inf, "--domain-bbox (a public extent): no delta, usually a lower threshold"))
    out.sort(key=lambda item: item[0])
    generic = [
        f"--resolution {max(cfg.resolution - 1, 0)} or --slot-minutes {cfg.slot_minutes * 2}: more vehicle-days per HAT",
    ]
    return ([text for _, text in out] + generic)[:3]


def release_warnings(release: HatRelease, cfg: HatReleaseConfig) -> list[str]:
    """Warnings about a useless release: nothing released, or every interval wider than U/2."""
    p = release.privacy
    days = int(p["days"])  # type: ignore[call-overload]
    h = int(p["hats_released"])  # type: ignore[call-overload]
    sel: dict[str, Any] = p["selection"]  # type: ignore[assignment]
    threshold = sel.get("threshold_vehicle_days")
    domain_size = sel.get("domain_hats")
    problem = None
    if h == 0:
        problem = "the release holds no HAT"
    else:
        width = release.speed["ci95_high"] - release.speed["ci95_low"]
        if width.null_count() < len(width) and bool((width.fill_null(math.inf) > cfg.speed_max / 2).all()):
            problem = f"every released HAT's 95% interval is wider than U/2 = {cfg.speed_max / 2:g} km/h"
    if problem is None:
        return []
    largest = sel.get("max_noisy_count")
    parts = [problem]
    if threshold is not None:
        parts.append(f"selection threshold {threshold:,.0f} vehicle-days over the {days}-day window")
    if largest is not None:
        parts.append(f"largest noisy count {largest:,.1f}")
    else:
        parts.append(
            "no noisy count passed it, so the busiest HAT holds fewer vehicle-days than the threshold"
        )
    parts.append("options that change it most: " + "; ".join(options_that_help(cfg, days, domain_size)))
    return [". ".join(parts)]
