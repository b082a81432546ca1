"""Guardrails of a fleet release: the guards every entry point passes, and the useless-release warnings.

* The release guards, called by :func:`urbandp.fleet.pipeline.release_fleet` on its session:
  :func:`refuse_before_reading` (meaningless loss, a budget dataset that cannot be charged),
  :func:`reserve_planned` (the reservation, where the session runs the delta and loss guards) and
  :func:`state_loss` (privacy.json states the loss reserved) and :func:`label_after_accounting` (the meaningless-
  loss guard on the stated loss, the NOT DP label). Each calls :mod:`urbandp.privacy.guards`.
* The useless-release warnings: say before writing when a release will be useless, and what would change
  that. They read only the released (DP) tables, privacy.json's public parameters and OpenDP's maps
  (post-processing), so they can go into privacy.json.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

from urbandp.errors import InvalidParameterError
from urbandp.fleet.account import HatRelease
from urbandp.fleet.config import HatReleaseConfig
from urbandp.fleet.plan import plan_release
from urbandp.fleet.selection import calibrate_selection
from urbandp.privacy import guards
from urbandp.privacy.loss import Loss
from urbandp.privacy.noise import gaussian_rho, laplace_epsilon
from urbandp.privacy.session import ReleaseCharge, days_between

if TYPE_CHECKING:
    from urbandp.fleet.plan import PlannedCharge

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
    if not cfg.public_domain:
        out.append((math.inf, "--domain-bbox (a public extent): no delta, usually a lower threshold"))
    out.sort(key=lambda item: item[0])
    generic = [
        f"--resolution {max(cfg.resolution - 1, 0)} or --slot-minutes {cfg.slot_minutes * 2}: more vehicle-days per HAT",
    ]
    return ([text for _, text in out] + generic)[:3]


def release_warnings(release: HatRelease, cfg: HatReleaseConfig) -> list[str]:
    """Warnings about a useless release: nothing released, or every interval wider than U/2."""
    p = release.privacy
    days = int(cast(int, p["days"]))
    h = int(cast(int, p["hats_released"]))
    sel = cast(dict[str, Any], p["selection"])
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


# -- the release guards of the library path -------------------------------------------------------------
# Called by :func:`urbandp.fleet.pipeline.release_fleet` on its :class:`~urbandp.privacy.session.ReleaseCharge`, whatever
# opened it (the CLI, a notebook, a scheduler, the Spark engine): each calls a guard of urbandp.privacy.guards, never
# a copy of one. The delta limit is in the spec (HatReleaseConfig) and in ReleaseCharge.reserve.


def refuse_before_reading(session: ReleaseCharge, cfg: HatReleaseConfig) -> list[str]:
    """Before any record is read: the meaningless-loss guard on the smallest loss the parameters imply, and with a
    budget dataset the two reasons a release cannot be charged (docs/privacy-core.md, "What is refused").

    With ``epsilon_per_day`` the loss per vehicle-day is that figure; with ``noise_scale`` its smallest possible
    value is one HAT's speeding count (sensitivity 1/D per vehicle-day), which already decides a scale of 1e-300.
    Returns the NOT DP reasons (non-empty only with ``allow_meaningless_epsilon``), also kept by the session.
    """
    allow = session.allow_meaningless_epsilon
    if cfg.epsilon_per_day is not None:
        reasons = guards.meaningless_reasons(
            Loss.pure(cfg.epsilon_per_day), None, per="vehicle-day", allow=allow
        )
    else:
        assert cfg.noise_scale is not None  # the spec holds exactly one of the two
        days = _public_day_count(cfg)
        if cfg.resolved_mechanism == "gaussian":
            loss = Loss.zcdp(gaussian_rho(1.0 / days, cfg.noise_scale))
            reasons = guards.meaningless_reasons(loss, cfg.delta, per="vehicle-day (at least)", allow=allow)
        else:
            loss = Loss.pure(laplace_epsilon(1.0 / days, cfg.noise_scale))
            reasons = guards.meaningless_reasons(loss, None, per="vehicle-day (at least)", allow=allow)
    session.refuse_not_dp(reasons)
    _refuse_unchargeable(session, cfg)
    return reasons


def _public_day_count(cfg: HatReleaseConfig) -> int:
    """D when the window is public (--start/--end or --dates), else 1 (the smallest loss is then the largest)."""
    first, last = cfg.start, cfg.end
    if cfg.dates:
        first, last = first or min(cfg.dates), last or max(cfg.dates)
    if first is None or last is None:
        return 1
    days = cfg.public_days(first, last)
    return len(days) if days is not None else (last - first).days + 1


def _refuse_unchargeable(session: ReleaseCharge, cfg: HatReleaseConfig) -> None:
    """With a budget dataset the charge must be known before any noise (from epsilon_per_day or budget_per_day),
    and the release must be DP: a release labelled NOT DP is refused, never booked as DP spend."""
    if session.dataset is None:
        return
    if cfg.epsilon_per_day is None and cfg.budget_per_day is None:
        raise InvalidParameterError(
            "dataset with noise_scale needs budget_per_day: the charge is reserved before any noise is drawn",
            parameters=("dataset", "noise_scale", "budget_per_day"),
        )
    why = []
    if (cfg.start is None or cfg.end is None) and not cfg.dates:
        why.append("its date window would be read from the data (give --start and --end, or --dates)")
    if not cfg.differentially_private:
        why.append(
            "K read from the data (--max-hats-per-vehicle-day observed)"
            if cfg.max_hats_per_vehicle_day == "observed"
            else "its selection or estimator is not DP under add/remove neighbours"
        )
    session.refuse_not_dp(why)


def reserve_planned(session: ReleaseCharge, charge: PlannedCharge) -> None:
    """Reserve the release's one loss (:func:`urbandp.fleet.plan.planned_loss`: per vehicle-day and over the
    window) on each public day of the window, before any noise: the session runs the delta and meaningless-loss
    guards on it (:meth:`ReleaseCharge.reserve`) and the store books and caps exactly what privacy.json will state.

    With a noise scale and ``budget_per_day`` (no planned loss) the budget per day is reserved, and over the window
    its group bound (D^2 rho, D epsilon) with the planned window delta beside it."""
    params = {
        "epsilon_per_day": charge.epsilon_per_day,
        "conversion_delta": charge.conversion_delta,
        "window_derived_from_data": charge.derived_window,
    }
    session.conversion_delta = charge.conversion_delta
    days = list(charge.days) or days_between(charge.first_day, charge.last_day)
    mechanism = f"fleet-hat-{charge.mechanism}"
    if charge.loss is not None:
        session.reserve(
            charge.loss.per_day,
            days,
            mechanism,
            params,
            window=charge.loss.window,
            gaussian=charge.loss.gaussian,
        )
        return
    if charge.epsilon_per_day is None:  # --noise-scale without --budget-per-day: the loss is stated after
        loss = Loss()
    elif charge.rho_per_day is not None:
        loss = Loss.zcdp(charge.rho_per_day)
    else:
        loss = Loss.pure(charge.epsilon_per_day)
    window = loss.group(len(days))
    if loss.rho > 0:  # Loss.approx adds the conversion delta once; the selections' window delta beside it
        extra = charge.delta_per_window - (charge.conversion_delta or 0.0)
    else:
        extra = charge.delta_per_window
    session.reserve(loss, days, mechanism, params, window=window + Loss(delta=max(0.0, extra)))


STATED_KEYS = ("cumulative_epsilon_per_day", "delta_per_day", "epsilon_per_window", "delta_per_window")
"""privacy.json's headline figures of a fleet release, read from the release's one loss (:func:`state_loss`)."""


def state_loss(session: ReleaseCharge, privacy: dict[str, Any], charge: PlannedCharge | None) -> None:
    """privacy.json states the loss the session reserved (the plan's :class:`~urbandp.privacy.loss.ReleaseLoss`,
    booked as is in the store): per vehicle-day and over the window, with rho and its conversion, under ``loss``.

    The accounting's own sums from OpenDP's maps (the ledger, per step) must not exceed it: the noise was
    calibrated to the plan, so they equal it, or fall below where a step drew less (no HAT released). A sum above
    it is a bug, refused (after noise, so the run stays charged). Without a planned loss (a noise scale) the
    accounting's sums are stated."""
    stated = session.release_loss
    if charge is None or charge.loss is None or stated is None:
        return
    eps_day, delta_day = session.approx_per_day()
    eps_window, delta_window, _ = stated.approx(stated.window)
    assert eps_window is not None and delta_window is not None  # reserve refused a loss that cannot be stated
    figures = dict(zip(STATED_KEYS, (eps_day, delta_day, eps_window, delta_window), strict=True))
    # the accounting converts by the zCDP bound: compare it with the reserved loss converted the same way
    bound = [
        *stated.per_day.approx(stated.conversion_delta)[:2],
        *stated.window.approx(stated.conversion_delta)[:2],
    ]
    realised = {k: privacy.get(k) for k in STATED_KEYS}
    for (key, value), most in zip(realised.items(), bound, strict=True):
        if isinstance(value, (int, float)) and most is not None and value > most * (1 + 1e-9) + 1e-300:
            raise RuntimeError(f"the release spent {key} {value!r}, above the {most!r} it reserved")
    spent_less = any(
        isinstance(value, (int, float)) and most is not None and value < most * (1 - 1e-9)
        for value, most in zip(realised.values(), bound, strict=True)
    )
    privacy.update(figures)
    privacy["loss"] = stated.to_json()
    if "rho_per_window" in privacy:
        privacy["rho_per_window"] = stated.window.rho
    if spent_less:
        privacy["loss_note"] = (
            "the stated loss is the one reserved before any noise (the plan's budget); the steps' costs in "
            "epsilon_per_day and the ledger sum to less, since a step drew less noise than planned (no HAT "
            "released)"
        )


def label_after_accounting(session: ReleaseCharge, privacy: dict[str, Any]) -> None:
    """The meaningless-loss guard on the loss the release states (with a noise scale it is known only after
    accounting; a refusal here comes after noise, so a charged run stays charged), then the NOT DP label for every
    reason the session holds."""
    eps = privacy.get("cumulative_epsilon_per_day")
    if isinstance(eps, (int, float)) and not math.isnan(eps):
        reasons = guards.meaningless_reasons(
            Loss.pure(float(eps)), None, per="vehicle-day", allow=session.allow_meaningless_epsilon
        )
        session.not_dp_reasons += [r for r in reasons if r not in session.not_dp_reasons]
    labelled = list(privacy["not_dp_reasons"])
    extra = [r for r in session.not_dp_reasons if r not in labelled]
    if extra:
        privacy["not_dp_reasons"] = [*labelled, *extra]
        privacy["differentially_private"] = False
        privacy["dp_label"] = "NOT differentially private"
