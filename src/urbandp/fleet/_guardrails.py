"""Guardrails of a fleet release: the guards every entry point passes, and the useless-release warnings.

* The release guards, called by :func:`urbandp.fleet._pipeline.release_fleet` on its
  :class:`~urbandp._privacy.session.ReleaseCharge`, whatever opened it (the CLI, a notebook, a scheduler, the Spark
  engine): :func:`refuse_before_reading` (meaningless loss, a budget dataset that cannot be charged),
  :func:`reserve_planned` (the reservation, where the session runs the delta and loss guards) and
  :func:`state_loss` (privacy.json states the loss reserved) and :func:`label_after_accounting` (the meaningless-
  loss guard on the stated loss, the NOT DP label). Each calls a guard of :mod:`urbandp._privacy.guards`, never a
  copy of one; the delta limit is in the spec (HatReleaseConfig) and in ReleaseCharge.reserve.
* The useless-release warnings: say before writing when a release will be useless, and what would change
  that. They read only the released (DP) tables, privacy.json's public parameters and OpenDP's maps
  (post-processing), so they can go into privacy.json.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import polars as pl

from urbandp._privacy import guards
from urbandp._privacy.loss import Loss
from urbandp._privacy.mechanisms import mechanism
from urbandp._privacy.session import ReleaseCharge, days_between
from urbandp.errors import InvalidParameterError
from urbandp.fleet._account import HatRelease
from urbandp.fleet._options import HatReleaseConfig

if TYPE_CHECKING:
    from urbandp.fleet._domain import PublicDomain
    from urbandp.fleet._plan import PlannedCharge
    from urbandp.fleet._predict import FleetProfile

EXIT_USELESS = 3


def _threshold(cfg: HatReleaseConfig, days: int, domain_size: int | None) -> float | None:
    """The selection threshold the release of ``cfg`` uses: the release's own calibration
    (:func:`~urbandp.fleet._plan.calibrate_level_selection`: K = 1 under L2 weights, the domain's size, the levels'
    share of the expected false positives); None without DP selection or with K read from the data."""
    from urbandp.fleet._plan import calibrate_level_selection, plan_release

    if cfg.selection != "dp" or cfg.max_hats_per_vehicle_day == "observed" or cfg.epsilon_per_day is None:
        return None
    plan = plan_release(cfg, days)
    return calibrate_level_selection(cfg, plan, cast(int, plan.k), domain_size).threshold


ADVICE_RUNS = 4
"""Simulated releases per alternative when the advice predicts useful HATs."""


def alternatives(cfg: HatReleaseConfig) -> list[tuple[str, dict[str, object]]]:
    """Changes of the parameters that matter under ``cfg`` (as ``name=value`` and the config update): epsilon
    doubled; under truncation K quartered; the threshold's floor quartered with DP selection; the selection's share
    only where it has one (presence-public or a user-level estimator); L2 weights where truncation is used and
    allowed (Gaussian noise over a public domain)."""
    out: list[tuple[str, dict[str, object]]] = []
    if cfg.epsilon_per_day is not None:
        out.append(
            (f"epsilon_per_day={cfg.epsilon_per_day * 2:g}", {"epsilon_per_day": cfg.epsilon_per_day * 2})
        )
    truncating = cfg.contribution_bounding == "truncate" and cfg.max_hats_per_vehicle_day != "observed"
    if truncating:
        k = int(cfg.max_hats_per_vehicle_day)
        out.append(
            (f"max_hats_per_vehicle_day={max(1, k // 4)}", {"max_hats_per_vehicle_day": max(1, k // 4)})
        )
    if cfg.selection == "dp":
        out.append(
            (f"min_vehicles_per_day={cfg.min_per_day / 4:g}", {"min_vehicles_per_day": cfg.min_per_day / 4})
        )
    if cfg.selection == "dp" and not (cfg.neighbouring == "add-remove" and cfg.speed_estimator == "report"):
        out.append(("selection_fraction=0.3", {"selection_fraction": 0.3}))
    if truncating and cfg.public_domain and cfg.resolved_mechanism == "gaussian":
        text = "contribution_bounding=l2" + (
            "" if tuple(cfg.queries) == ("speed",) else " with queries=speed"
        )
        out.append((text, {"contribution_bounding": "l2", "queries": ("speed",)}))
    return out


def options_that_help(
    cfg: HatReleaseConfig, days: int, domain_size: int | None, release: HatRelease | None = None
) -> list[str]:
    """The three changes that help most, each with the threshold the release would use under it and, with the
    ``release`` (its noisy counts as the fleet, post-processing), the useful HATs the planner predicts for it
    (:func:`urbandp.fleet._predict.simulate` on that release's spec). Parameters are named as in the library
    (``epsilon_per_day=8``); the command line shows them as flags (:func:`as_flags`)."""
    base = _threshold(cfg, days, domain_size)
    if base is None:
        generic = []
        if cfg.selection == "public-threshold":
            generic.append(f"min_vehicles_per_day below {cfg.min_per_day:g} (threshold x D)")
        generic.append(f"resolution={max(cfg.resolution - 1, 0)} (cells about 7x larger)")
        generic.append(f"slot_minutes={cfg.slot_minutes * 2} (slots twice as long)")
        return generic
    from urbandp.fleet._predict import simulate

    scored: list[tuple[tuple[int, float], str]] = []
    profile = _released_profile(release, cfg) if release is not None else None
    domain = _release_domain(cfg, release) if profile is not None and release is not None else None
    for text, change in alternatives(cfg):
        try:  # the spec with the change, validated: a change the spec refuses is no advice
            alt = HatReleaseConfig(**{**cfg.model_dump(), **change})
        except (ValueError, InvalidParameterError):
            continue
        t = _threshold(alt, days, domain_size)
        if t is None:
            continue
        # the released counts stand for the fleet where the bounding stays as it was (not for a new K or L2)
        same_bounding = not ({"contribution_bounding", "max_hats_per_vehicle_day"} & set(change))
        useful = None
        if profile is not None and domain is not None and same_bounding:  # the planner, pooled where it pools
            got = simulate(alt, days, profile, domain, ADVICE_RUNS)
            useful = float(
                np.mean(got.counts["useful_pooled" if "useful_pooled" in got.counts else "useful"])
            )
        if useful is None and t >= base:
            continue
        unit = "weighted vehicle-days" if alt.contribution_bounding == "l2" else "vehicle-days"
        said = f"{text}: threshold {t:,.1f} {unit}" + (
            "" if useful is None else f", about {useful:.0f} useful HATs"
        )
        scored.append(((0, -useful) if useful is not None else (1, t), said))
    if not cfg.public_domain:
        scored.append(
            (
                (2, 0.0),
                "a public extent (domain_bbox=MIN_LAT,MIN_LON,MAX_LAT,MAX_LON): no delta, usually a lower threshold",
            )
        )
    scored.sort(key=lambda item: item[0])
    generic = [
        f"resolution={max(cfg.resolution - 1, 0)} or slot_minutes={cfg.slot_minutes * 2}: more vehicle-days per HAT"
    ]
    return ([text for _, text in scored] + generic)[:3]


def _released_profile(release: HatRelease, cfg: HatReleaseConfig) -> FleetProfile | None:
    """The released HATs' noisy counts as a fleet profile (post-processing of DP outputs): a HAT's count per day
    is its noisy count / D, vehicle-days of one HAT each, so the weights of the same bounding give back the noisy
    count. None without a public domain or noisy counts."""
    from urbandp.fleet._predict import FleetProfile

    speed = release.speed
    if not cfg.public_domain or "noisy_vehicle_days" not in speed.columns or speed.height == 0:
        return None
    import polars_h3 as plh3

    days = int(cast(int, release.privacy["days"]))
    spec = cfg.slot_spec
    index = {spec.label(s): s for s in spec.slots}
    hats = speed.select(
        plh3.str_to_int("h3_cell").alias("cell"),
        pl.col("slot").replace_strict(index, return_dtype=pl.Int16).alias("slot"),
        (pl.col("noisy_vehicle_days").fill_null(0.0).cast(pl.Float64) / days).alias("per_day"),
    )
    return FleetProfile("release", lambda _rng: (hats, np.array([1.0])), "the release's noisy counts")


def _release_domain(cfg: HatReleaseConfig, release: HatRelease) -> PublicDomain | None:
    """The release's public domain, read once for every alternative (none changes it); None where it cannot be
    read without the window's days (a schedule, and a window taken from the data)."""
    import datetime as dt

    from urbandp.fleet._domain import load_public_domain
    from urbandp.fleet._options import public_window, window_days

    first, last, day_set = public_window(cfg)
    window = release.privacy.get("window")
    if (first is None or last is None) and isinstance(window, dict):
        first, last = dt.date.fromisoformat(window["start"]), dt.date.fromisoformat(window["end"])
    if cfg.domain_gtfs is not None and (first is None or last is None):
        return None
    public = window_days(first, last, day_set) if first is not None and last is not None else None
    return load_public_domain(cfg, public)


_NAMED_VALUE = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)*)=([^\s:;]+)")


def as_flags(text: str) -> str:
    """A library message for the command line: each ``name=value`` of a release option becomes ``--name value``
    (``epsilon_per_day=8`` -> ``--epsilon-per-day 8``), other text unchanged."""
    from urbandp.errors import flag_of

    fields = set(HatReleaseConfig.model_fields)

    def swap(match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        return f"{flag_of(name)} {value}" if name in fields else match.group(0)

    return _NAMED_VALUE.sub(swap, text)


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
    parts.append(
        "options that change it most: " + "; ".join(options_that_help(cfg, days, domain_size, release))
    )
    return [". ".join(parts)]


# -- the release guards of the library path (the module's docstring) ------------------------------------------------


def refuse_before_reading(session: ReleaseCharge, cfg: HatReleaseConfig) -> None:
    """Before any record is read: the meaningless-loss guard on the smallest loss the parameters imply, and with a
    budget dataset the two reasons a release cannot be charged (docs/privacy-core.md, "What is refused").

    With ``epsilon_per_day`` the loss per vehicle-day is that figure; with ``noise_scale`` its smallest possible
    value is one HAT's speeding count (sensitivity 1/D per vehicle-day), which already decides a scale of 1e-300.
    The NOT DP reasons (only with ``allow_meaningless_epsilon``) are kept by the session.
    """
    allow = session.allow_meaningless_epsilon
    if cfg.epsilon_per_day is not None:
        reasons = guards.meaningless_reasons(
            Loss.pure(cfg.epsilon_per_day), None, per="vehicle-day", allow=allow
        )
    else:
        assert cfg.noise_scale is not None  # the spec holds exactly one of the two
        noise = mechanism(cfg.resolved_mechanism, cfg.noise_scale)
        delta = cfg.delta if noise.law == "gaussian" else None  # zCDP is stated at the release's delta
        loss = noise.loss(1.0 / _public_day_count(cfg))
        reasons = guards.meaningless_reasons(loss, delta, per="vehicle-day (at least)", allow=allow)
    session.refuse_not_dp(reasons)
    _refuse_unchargeable(session, cfg)


def _public_day_count(cfg: HatReleaseConfig) -> int:
    """D when the window is public (start/end or dates), else 1 (the smallest loss is then the largest); an empty
    public day set is refused (:func:`urbandp.fleet._options.public_window`)."""
    from urbandp.fleet._options import public_window, window_days

    first, last, day_set = public_window(cfg)
    return 1 if first is None or last is None else len(window_days(first, last, day_set))


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
    """Reserve the release's one loss (:func:`urbandp.fleet._plan.planned_loss`: per vehicle-day and over the
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
    # Loss.approx adds rho's conversion delta once; the selections' window delta beside it
    conversion = (charge.conversion_delta or 0.0) if loss.rho > 0 else 0.0
    extra = Loss(delta=max(0.0, charge.delta_per_window - conversion))
    session.reserve(loss, days, mechanism, params, window=loss.group(len(days)) + extra)


STATED_KEYS = ("cumulative_epsilon_per_day", "delta_per_day", "epsilon_per_window", "delta_per_window")
"""privacy.json's headline figures of a fleet release, read from the release's one loss (:func:`state_loss`)."""


def state_loss(session: ReleaseCharge, privacy: dict[str, Any], charge: PlannedCharge) -> None:
    """privacy.json states the loss the session reserved (the plan's :class:`~urbandp._privacy.loss.ReleaseLoss`,
    booked as is in the store): per vehicle-day and over the window, with rho and its conversion, under ``loss``.

    The accounting's own sums from OpenDP's maps (the ledger, per step) must not exceed it: the noise was
    calibrated to the plan, so they equal it, or fall below where a step drew less (no HAT released). A sum above
    it is a bug, refused (after noise, so the run stays charged). Without a planned loss (a noise scale) the
    accounting's sums are stated."""
    stated = session.release_loss
    if charge.loss is None or stated is None:
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
