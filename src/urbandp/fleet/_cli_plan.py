"""``urbandp plan``: what a release will give before any budget is spent (it takes ``release``'s options)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from urbandp._cli_options import AllowMeaninglessEpsilon, Overwrite
from urbandp._cli_spec import OptionsOf, typed_command
from urbandp.errors import InputError
from urbandp.fleet._cli import RecordsArguments, check_dataset
from urbandp.fleet._options_flags import RunOptions
from urbandp.fleet._options_input import configure

if TYPE_CHECKING:
    from urbandp._privacy.session import ReleaseCharge
    from urbandp.fleet._domain import PublicDomain
    from urbandp.fleet._options import HatReleaseConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class PlanArguments(RecordsArguments):
    """``urbandp fleet plan``: release's records and options (not the map's, nor the engine: the planner reads no
    record but in-process, for its histogram), where a paid histogram is charged, and the plan's own options."""

    charge: Annotated[RunOptions, OptionsOf(only=("dataset", "budget_store"))]
    allow_meaningless_epsilon: AllowMeaninglessEpsilon = False
    overwrite: Overwrite = False
    target_error: Annotated[
        float | None,
        typer.Option(
            "--target-error",
            help="Target sd of a released mean in km/h (default: none; no search for settings).",
        ),
    ] = None
    histogram_epsilon: Annotated[
        float | None,
        typer.Option(
            "--histogram-epsilon",
            help="Spend this epsilon on a DP histogram of vehicle-days per HAT (with --contribution-bounding l2 "
            "or --domain-geojson a fifth of it on one of HATs per vehicle-day) (default: off, spends nothing).",
        ),
    ] = None
    fleet_size: Annotated[
        float | None,
        typer.Option(
            "--fleet-size",
            help="Public number of vehicles a day, for the prediction over a --domain-geojson route domain "
            "(default: none).",
        ),
    ] = None


@typed_command(PlanArguments)
def plan(a: PlanArguments) -> None:
    """Plan a release before spending budget: expected noise per HAT, selection, what reaches a target error.

    Takes the options of `urbandp release`. Spends nothing and reads only public parameters unless
    --histogram-epsilon is given (then a DP histogram of vehicle-days per HAT, charged and reported). Predicts the
    shown and useful HATs, with an interval, by running the release itself on fleets drawn from the schedule
    (--domain-gtfs), the histogram, or a --domain-geojson route domain with --fleet-size.

    Example: urbandp plan fleet.parquet --out out/plan --epsilon-per-day 10 --start 2021-11-15 --end 2021-12-15
    --domain-bbox 21.09,72.75,21.25,72.91 --target-error 2
    """
    from urbandp.fleet._options_input import named_by

    cfg, options, columns, file_keys = configure({**a.options, "config": a.config})
    # an error about a value read from the config file names its key there, as release's do
    with named_by(file_keys):
        _plan(a, cfg, options, columns)


def _plan(a: PlanArguments, cfg: HatReleaseConfig, options: Any, columns: dict[str, str]) -> None:
    """The plan of :func:`plan`'s arguments ``a`` (read into ``cfg``, the records' options and their columns):
    written to ``a.out``/plan.json and printed."""
    from rich.console import Console

    from urbandp._outputs import atomic_output_dir, dumps_strict, write_json
    from urbandp._privacy.session import ReleaseCharge
    from urbandp._records.readers import expand_inputs
    from urbandp._records.timezones import with_feed_zone
    from urbandp.fleet._domain import load_public_domain
    from urbandp.fleet._options import public_window, window_days
    from urbandp.fleet._plan_forecast import check_target_error, make_plan

    options = with_feed_zone(options, cfg.domain_gtfs)  # the release's time zone, as the release reads it
    check_target_error(a.target_error)
    if a.fleet_size is not None and not (math.isfinite(a.fleet_size) and a.fleet_size > 0):
        raise InputError("--fleet-size must be a finite number of vehicles a day above 0")
    first, last, day_set = public_window(cfg)
    if first is None or last is None:
        raise InputError(
            "plan needs the public window: give --start and --end, or --dates (D sets the noise)"
        )
    expand_inputs(a.inputs)  # read only with --histogram-epsilon, but a wrong path is said now
    public_days = window_days(first, last, day_set)
    days = len(public_days)
    domain = load_public_domain(cfg, public_days)
    # The plan itself reads only public parameters and never charges; only its optional DP histogram of the true
    # data spends budget, so only that is charged (with --dataset), reserved before its noise.
    check_dataset(a.charge.dataset)
    charged = a.charge.dataset if a.histogram_epsilon is not None else None
    with ReleaseCharge(charged, a.charge.budget_store, unit="vehicle-day", out=a.out) as session:
        histogram, m_histogram, pilot, spent = _paid_inputs(
            a, cfg, (columns, options), session, domain, (first, last, day_set), public_days
        )
        result = make_plan(
            cfg,
            days,
            target_error=a.target_error,
            histogram=histogram,
            histogram_epsilon=spent,
            domain=domain,
            m_histogram=m_histogram,
            fleet_size=a.fleet_size,
            pilot=pilot,
        )
        result["command_line"] = " ".join(["urbandp", *sys.argv[1:]])
        result["generated"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        with atomic_output_dir(a.out) as d:
            write_json(d.release / "plan.json", result)
        session.set_output(a.out)
        # plain stdout, never Rich: Rich wraps long lines at 80 columns when piped, which broke the JSON
        session.later(lambda: print(dumps_strict(result), flush=True))
        session.later(lambda: Console(stderr=True).print(f"wrote {a.out / 'plan.json'}"))


def _paid_inputs(
    a: PlanArguments,
    cfg: HatReleaseConfig,
    reading: tuple[dict[str, str], Any],
    session: ReleaseCharge,
    domain: PublicDomain | None,
    window: tuple[dt.date, dt.date, tuple[dt.date, ...] | None],
    public_days: tuple[dt.date, ...],
) -> tuple[Any, Any, Any, float]:
    """What ``--histogram-epsilon`` buys, charged to ``session`` before its noise: without a public domain the
    Laplace histogram of vehicle-days per HAT, with one a pilot of the release's own noisy counts and a histogram
    of HATs per vehicle-day. Returns (histogram, HATs-per-vehicle-day histogram, pilot, epsilon spent): nothing
    bought, 0 spent, without ``--histogram-epsilon``."""
    from urbandp._contributions import ContributionSpec, get_backend
    from urbandp._privacy.loss import Loss
    from urbandp.fleet._pipeline import load_records, quarantine_on_failure
    from urbandp.fleet._plan_forecast import cfg_k, dp_histogram, paid_pilot, per_hat_counts, pilot_loss
    from urbandp.fleet._predict import M_HISTOGRAM_SHARE

    if a.histogram_epsilon is None:
        return None, None, None, 0.0
    columns, options = reading
    first, last, day_set = window
    days = len(public_days)
    eps_h = float(a.histogram_epsilon)
    if not (math.isfinite(eps_h) and eps_h > 0):
        raise InputError("--histogram-epsilon must be a finite number above 0")

    spec = ContributionSpec(cfg.resolution, cfg.slot_spec, first, last, cfg.speed_max, days=day_set)
    loaded = load_records(a.inputs, columns, options, window=spec)
    with quarantine_on_failure(a.out):
        loaded.require_valid()
    contributions = get_backend("polars").contributions(loaded.clean_lazy, spec)
    k = cfg_k(cfg)
    if domain is None:  # no public domain: the Laplace histogram of vehicle-days per HAT (L1 2K)
        session.reserve(
            Loss.pure(eps_h),
            list(public_days),
            "fleet-plan-histogram-laplace",
            {"epsilon": eps_h, "k": k},
        )
        histogram, spent = dp_histogram(
            per_hat_counts(contributions, k, cfg.slot_minutes), k, eps_h, session.noise
        )
        return histogram, None, None, spent
    # a pilot of the release's own noisy counts and a histogram of HATs per vehicle-day (zCDP)
    loss = pilot_loss(cfg, eps_h)
    session.conversion_delta = cfg.delta
    session.reserve(
        loss, list(public_days), "fleet-plan-pilot-gaussian",
        {"epsilon": eps_h, "rho": loss.rho, "hats_per_vehicle_day_share": M_HISTOGRAM_SHARE},
        window=loss.group(days), gaussian=True,
    )  # fmt: skip
    paid = paid_pilot(contributions, cfg, days, domain, loss.rho, session.noise)
    return None, paid.m_histogram, paid.pilot, eps_h
