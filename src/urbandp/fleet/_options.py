"""Typed configuration of a HAT release (ITMS report sections II-IV), loadable from TOML; CLI flags override.

Neighbouring relations (docs/design.md rule 2, made explicit here and in privacy.json):

``replace-one`` (the ITMS report): two datasets are neighbours if one vehicle-day's *records* in a HAT differ; which
vehicles are present in which HAT on which day is public, so N (vehicle-days per HAT) is public and Query 1's
sensitivity is (U - L) / N. ``add-remove`` (default): a whole vehicle-day may be present or absent, so N itself is
protected; Query 1 releases a noisy sum (sensitivity U - L) divided by a noisy count, and HAT selection must be DP.
"""

from __future__ import annotations

import datetime as dt
import math
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import PrivateAttr, ValidationInfo, field_validator

from urbandp._arguments import check_date, check_name, check_numbers, check_path, shown
from urbandp._privacy import guards
from urbandp._release_options import ReleaseOptions, option
from urbandp.errors import InputError, InvalidParameterError

if TYPE_CHECKING:
    from urbandp._grid.slots import SlotSpec

Selection = Literal["dp", "public-threshold"]
Neighbouring = Literal["add-remove", "presence-public"]
Mechanism = Literal["gaussian", "laplace"]
# The report's name for the presence-public relation (III E); accepted as an alias.
NEIGHBOURING_ALIASES = {"replace-one": "presence-public"}
SpeedEstimator = Literal["report", "baseline", "array-averaging", "levy", "quantile", "clipped-mean"]
ClipBound = Literal["public", "dp-quantile"]
Coarsen = Literal["none", "parent1", "parent2", "slot2", "auto"]
CoarsenRule = Literal["exclusive", "fill"]
ContributionBounding = Literal["auto", "truncate", "l2"]
BorrowStrength = Literal["auto", "none", "parent"]


MAX_DOMAIN_CELLS = 2_000_000
"""Most H3 cells a public extent may hold (every one is a HAT perturbed in every slot): res 9 over 1,000 km^2 is
about 9,500, res 15 over a city is billions."""


def estimated_domain_cells(bbox: tuple[float, float, float, float], resolution: int) -> float:
    """About how many H3 cells of ``resolution`` a box holds: its area over H3's mean cell area (no enumeration)."""
    import h3

    from urbandp._geodesy import WGS84

    a, b, c, d = bbox
    area_m2, _ = WGS84.polygon_area_perimeter([b, d, d, b], [a, a, c, c])  # the box on the ellipsoid
    return abs(area_m2) / 1e6 / float(h3.average_hexagon_area(resolution, unit="km^2"))


MAX_HATS_PER_VEHICLE_DAY = 1_000_000
"""Largest public K: far above the HATs one vehicle can visit in a day (1,440 one-minute slots, a few cells each),
and well inside the unsigned 32-bit integers OpenDP's truncation and sensitivity maps take."""

DOMAIN_SOURCES = ("domain_bbox", "domain_gtfs", "domain_geojson", "domain_cells")
"""The public domains a release takes (at most one): an extent, or the HATs of a GTFS feed, routes, or cells."""

MIN_PER_DAY_DEFAULT = {"dp": 0.0, "public-threshold": 10.0}
"""Default floor of the selection threshold, vehicles per day per HAT, by selection (the CLI help reads it). DP
selection needs none: its threshold comes from the noise (and the target delta, or the expected number of empty
HATs over a public extent); a floor of 3 x D capped the month at about 450 HATs."""

Query = Literal["speed", "speeding"]


def _option(default: Any, *, help: str, cli_type: Any, **bounds: Any) -> Any:
    """An option of the release spec (:func:`urbandp._release_options.option`), set in a ``--config`` file's
    ``[release]`` table; a flag left out is None, so the file's value or the field's default applies."""
    return option(default, help=help, cli_type=cli_type, cli_default=None, table="release", **bounds)


class HatReleaseConfig(ReleaseOptions):
    """All parameters of ``urbandp fleet release`` (frozen; validated on construction, each refusal one line
    naming the option). Each option is declared once, as a field: its type, default, bounds, ``--help`` text, flag
    and TOML key; ``urbandp fleet release``'s flags, :func:`urbandp.fleet.release`'s signature and its keyword
    types are built from the fields."""

    _chosen: dict[str, str] = PrivateAttr(default_factory=dict)

    resolution: int = _option(7, help="H3 resolution (default: {default}).", cli_type=int | None, ge=0, le=15)
    slot_minutes: int = _option(
        60, help="Time-slot length in minutes (default: {default}).", cli_type=int | None
    )
    hours: tuple[int, int] = _option(
        (9, 21), help="Daily hour window START-END (default: {default[0]}-{default[1]}).", cli_type=str | None
    )
    start: dt.date | None = _option(
        None, help="First day YYYY-MM-DD (public window; default: first day in data).", cli_type=str | None
    )
    end: dt.date | None = _option(
        None, help="Last day YYYY-MM-DD (public window; default: last day in data).", cli_type=str | None
    )
    dates: tuple[dt.date, ...] | None = _option(
        None,
        help="Public day set: comma-separated YYYY-MM-DD days to release; D is their number, the window spans them "
        "(default: every day of --start..--end).",
        cli_type=str | None,
    )
    weekdays: str | None = _option(
        None,
        help="Public day set: these weekdays within --start..--end, e.g. mon-fri or sat,sun (default: all).",
        cli_type=str | None,
    )
    holidays: tuple[dt.date, ...] = _option(
        (),
        help="Days left out of the public day set: comma-separated dates or a file of dates (default: none).",
        cli_type=str | None,
    )
    speed_max: float = _option(
        65.0,
        help="U: speeds clipped to [0, U] km/h for Query 1 (default: {default}).",
        cli_type=float | None,
        ge=1,
        le=500,
        why="the noise is calibrated to U, and a U near 0 underflows it",
    )
    speed_limit: float = _option(
        35.0, help="Query 2 threshold in km/h (default: {default}).", cli_type=float | None, gt=0, le=500
    )
    noise_scale: float | None = _option(
        None,
        help="Laplace scale B for both queries (default: none; give this or --epsilon-per-day).",
        cli_type=float | None,
        gt=0,
    )
    epsilon_per_day: float | None = _option(
        None,
        help="Cumulative epsilon per vehicle-day; the noise is calibrated from it (default: none; give this or "
        "--noise-scale).",
        cli_type=float | None,
        gt=0,
    )
    budget_per_day: float | None = _option(
        None,
        help="Refuse the release if epsilon per day would exceed this (default: no cap).",
        cli_type=float | None,
        gt=0,
    )
    selection: Selection = _option(
        "dp", help="HAT selection: dp or public-threshold (not DP) (default: {default}).", cli_type=str | None
    )
    domain_bbox: tuple[float, float, float, float] | None = _option(
        None,
        help="Public extent min_lat,min_lon,max_lat,max_lon: pure-DP selection (default: no extent; approximate-DP "
        "selection).",
        cli_type=str | None,
    )
    domain_gtfs: Path | None = _option(
        None,
        help="Public domain from the agency's GTFS feed (zip or folder): the cells its shapes pass through x the slots "
        "with scheduled service on the public days; every domain HAT released with noise (default: none).",
        cli_type=Path | None,
    )
    domain_geojson: Path | None = _option(
        None,
        help="Public domain from a GeoJSON of routes or corridors: the cells they pass through x every slot; every "
        "domain HAT released with noise (default: none).",
        cli_type=Path | None,
    )
    domain_cells: Path | None = _option(
        None,
        help="Public domain from a file of H3 cells (one per line or an h3_cell column) x every slot (default: none).",
        cli_type=Path | None,
    )
    domain_ring: int = _option(
        0,
        help="Widen a GTFS or GeoJSON domain by this many rings of neighbouring cells (default: {default}).",
        cli_type=int | None,
        ge=0,
        le=3,
    )
    contribution_bounding: ContributionBounding = _option(
        "auto",
        help="auto (l2 where the release allows it, else truncate), truncate (K HATs per vehicle-day) or l2 (every "
        "domain HAT, weights 1/sqrt(m); Gaussian over a public domain) (default: {default}).",
        cli_type=str | None,
    )
    borrow_strength: BorrowStrength = _option(
        "auto",
        help="auto (parent where the release allows it, else none), none, or parent: also publish robust empirical "
        "Bayes means and intervals pooled with the other HATs of the H3 parent (post-processing, no privacy "
        "cost; 95% coverage on average over HATs) (default: {default}).",
        cli_type=str | None,
    )
    target_width: float = _option(
        10.0,
        help="Usefulness target: a mean is useful when its 95% interval is at most this wide, km/h (default: "
        "{default}).",
        cli_type=float | None,
        gt=0,
    )
    selection_epsilon: float = _option(
        1.0,
        help="Epsilon per day for DP selection when B is given (default: {default}).",
        cli_type=float | None,
        gt=0,
    )
    delta: float = _option(
        1e-6,
        help="Target delta per vehicle-day of DP selection (default: {default}).",
        cli_type=float | None,
        gt=0,
    )
    min_vehicles_per_day: float | None = _option(
        None,
        help="Floor of the selection threshold: vehicles per day per HAT, 0 allowed; the DP threshold may be higher "
        f"(default: {MIN_PER_DAY_DEFAULT['dp']:g} for DP selection, {MIN_PER_DAY_DEFAULT['public-threshold']:g} "
        "for public-threshold).",
        cli_type=float | None,
        ge=0,
    )
    max_hats_per_vehicle_day: int | Literal["observed"] = _option(
        96,
        help="K, public bound enforced by truncation, or 'observed' as in the report, not DP (default: {default}).",
        cli_type=str | None,
    )
    speed_share: float | None = _option(
        None,
        help="With --queries speed,speeding: share of the two queries' budget for Query 1 (default: the report's "
        "shared B under presence-public; under add-remove speeding gets a third of the budget).",
        cli_type=float | None,
        gt=0,
        lt=1,
    )
    queries: tuple[Query, ...] = _option(
        ("speed",),
        help="What to release: speed, or speed,speeding to add Query 2 (vehicles over --speed-limit per day) "
        "(default: {default}).",
        cli_type=str | None,
    )
    selection_fraction: float = _option(
        0.1,
        help="Share of the budget for DP selection under presence-public or a user-level estimator (default: "
        "{default}; under add-remove the split is computed).",
        cli_type=float | None,
        gt=0,
        lt=1,
    )
    neighbouring: Neighbouring = _option(
        "add-remove",
        help="add-remove (presence protected) or presence-public (the report's replace-one: DP for speeds, presence "
        "public) (default: {default}).",
        cli_type=str | None,
    )
    mechanism: Mechanism | None = _option(
        None,
        help="Noise: gaussian (zCDP, default with --epsilon-per-day) or laplace (pure DP; default with --noise-scale).",
        cli_type=str | None,
    )
    speed_estimator: SpeedEstimator = _option(
        "report",
        help="Query 1 estimator: report, baseline, array-averaging, levy, quantile, clipped-mean (default: {default}).",
        cli_type=str | None,
    )
    precision: int = _option(
        2, help="Decimal places of released values (default: {default}).", cli_type=int | None, ge=0, le=10
    )
    clip_bound: ClipBound = _option(
        "public",
        help="Clip bound of HAT mean speeds: public (--speed-max U) or dp-quantile (a DP quantile U' <= U) (default: "
        "{default}).",
        cli_type=str | None,
    )
    clip_quantile: float = _option(
        0.9,
        help="Quantile of the vehicle-days' largest HAT mean speed for dp-quantile (default: {default}).",
        cli_type=float | None,
        gt=0,
        lt=1,
    )
    clip_share: float = _option(
        0.05,
        help="Share of the budget for the dp-quantile bound (default: {default}).",
        cli_type=float | None,
        gt=0,
        lt=0.5,
    )
    coarsen: Coarsen = _option(
        "none",
        help="Where the finest HAT does not pass, release a coarser one: none, parent1, parent2, slot2, auto (default: "
        "{default}).",
        cli_type=str | None,
    )
    coarsen_share: float = _option(
        0.3,
        help="Share of the budget for the coarser level(s) (default: {default}).",
        cli_type=float | None,
        gt=0,
        lt=1,
    )
    coarsen_rule: CoarsenRule = _option(
        "fill",
        help="fill (a coarser HAT stands for the part no finer level released) or exclusive (only where no finer HAT "
        "inside it was released) (default: {default}).",
        cli_type=str | None,
    )

    def __init__(self, **values: Any) -> None:
        """The report's name of a relation (``replace-one``) read as this one's."""
        relation = values.get("neighbouring")
        if isinstance(relation, str):
            values["neighbouring"] = NEIGHBOURING_ALIASES.get(relation, relation)
        super().__init__(**values)

    @field_validator("start", "end", mode="before")
    @classmethod
    def _day(cls, value: object, info: ValidationInfo) -> object:
        return read_day(value, str(info.field_name))

    @field_validator("hours", mode="before")
    @classmethod
    def _hours(cls, value: object) -> tuple[int, int]:
        return read_hours(value)

    @field_validator("domain_bbox", mode="before")
    @classmethod
    def _bbox(cls, value: object) -> tuple[float, ...] | None:
        """A public extent as text ``min_lat,min_lon,max_lat,max_lon`` or four numbers (checked with the spec)."""
        if value is None:
            return None
        if not isinstance(value, str):
            return check_numbers(value, "domain_bbox", length=4)
        try:
            a, b, c, d = (float(x) for x in value.split(","))
        except ValueError:
            raise InvalidParameterError(
                "domain_bbox must look like min_lat,min_lon,max_lat,max_lon (e.g. 30.2,-97.8,30.4,-97.6), got "
                f"'{value}'",
                parameters="domain_bbox",
            ) from None
        return a, b, c, d

    @field_validator("domain_gtfs", "domain_geojson", "domain_cells", mode="before")
    @classmethod
    def _path(cls, value: object, info: ValidationInfo) -> Path | None:
        path = check_path(value, str(info.field_name), optional=True)
        return None if path is None else Path(path)

    @field_validator("weekdays", mode="before")
    @classmethod
    def _name(cls, value: object, info: ValidationInfo) -> object:
        return check_name(value, str(info.field_name), optional=True)

    @field_validator("max_hats_per_vehicle_day", mode="before")
    @classmethod
    def _hats_bound(cls, value: object) -> object:
        """K: a whole number, as a number or text, or ``observed``."""
        if not isinstance(value, str) or value == "observed":
            return value
        try:
            return int(value)
        except ValueError:
            raise InvalidParameterError(
                "max_hats_per_vehicle_day must be a whole number or 'observed'",
                parameters="max_hats_per_vehicle_day",
            ) from None

    @field_validator("queries", mode="before")
    @classmethod
    def _queries_text(cls, value: object) -> object:
        """``speed`` or ``speed,speeding``, as text or a sequence of words."""
        words = tuple(q.strip() for q in value.split(",") if q.strip()) if isinstance(value, str) else value
        if not isinstance(words, (list, tuple)):
            return value
        words = tuple(dict.fromkeys(words))
        if "speed" not in words or not set(words) <= set(typing.get_args(Query)):
            raise InvalidParameterError(
                f"queries must be speed or speed,speeding, got {shown(value)}", parameters="queries"
            )
        return words

    @field_validator("slot_minutes")
    @classmethod
    def _slot_divides_a_day(cls, value: int) -> int:
        if value <= 0 or 1440 % value:
            raise InvalidParameterError(
                f"slot_minutes must divide a day (e.g. 15, 30, 60, 120 minutes), got {value}",
                parameters="slot_minutes",
            )
        return value

    @field_validator("delta")
    @classmethod
    def _delta_limit(cls, value: float) -> float:
        # the one delta limit of every wing (_privacy/guards.py): every fleet delta (the selection's threshold, the
        # zCDP conversion, per day and per window) derives from this one, so the spec refuses it for every entry
        # point (CLI, TOML, Python, plan) before any record is read
        guards.check_delta(value, "delta (--delta)")
        return value

    def public_days(self, start: dt.date, end: dt.date) -> tuple[dt.date, ...] | None:
        """The public day set inside ``start..end`` (None: every calendar day, the contiguous window)."""
        if self.dates is None and self.weekdays is None and not self.holidays:
            return None
        if self.dates is not None:
            days = sorted(set(self.dates))
        else:
            wanted = parse_weekdays(self.weekdays) if self.weekdays else set(range(7))
            days = [d for d in window_days(start, end, None) if d.weekday() in wanted]
        skip = set(self.holidays)
        return tuple(d for d in days if d not in skip and start <= d <= end)

    @property
    def slot_spec(self) -> SlotSpec:
        """The release's time slots: ``slot_minutes`` long, within ``hours``."""
        from urbandp._grid.slots import SlotSpec

        return SlotSpec(self.slot_minutes, *self.hours)

    @property
    def route_domain(self) -> bool:
        """True with a GTFS, GeoJSON or cell-list domain: every domain HAT is released (no threshold)."""
        return any(getattr(self, name) is not None for name in DOMAIN_SOURCES[1:])

    @property
    def public_domain(self) -> bool:
        """True with any public domain (an extent or a route domain): no delta for selection."""
        return self.domain_bbox is not None or self.route_domain

    @property
    def min_per_day(self) -> float:
        """The threshold per day actually used (see ``min_vehicles_per_day``)."""
        if self.min_vehicles_per_day is not None:
            return self.min_vehicles_per_day
        return MIN_PER_DAY_DEFAULT["public-threshold" if self.selection == "public-threshold" else "dp"]

    @property
    def resolved_mechanism(self) -> Mechanism:
        """gaussian unless asked otherwise; laplace for --noise-scale B (the report's) and the paper estimators."""
        if self.mechanism is not None:
            return self.mechanism
        if self.noise_scale is not None or self.speed_estimator != "report":
            return "laplace"
        return "gaussian"

    def model_post_init(self, context: Any, /) -> None:
        """The checks between options (the report's and this release's conditions), each one line naming them."""
        if (self.noise_scale is None) == (self.epsilon_per_day is None):
            raise InvalidParameterError(
                "give exactly one of noise_scale or epsilon_per_day",
                parameters=("noise_scale", "epsilon_per_day"),
            )
        if self.start is not None and self.end is not None and self.start > self.end:
            # refused here, before the guards count the window's days (none: a division by zero, exit 70)
            raise InvalidParameterError(
                f"start {self.start} is after end {self.end}", parameters=("start", "end")
            )
        if self.speed_estimator != "report" and self.epsilon_per_day is None:
            raise InvalidParameterError(
                "speed_estimator other than 'report' needs epsilon_per_day (it is calibrated by epsilon)",
                parameters=("speed_estimator", "epsilon_per_day"),
            )
        if self.speed_estimator != "report" and self.mechanism == "gaussian":
            raise InvalidParameterError(
                "speed_estimator other than 'report' is calibrated for Laplace; use mechanism laplace",
                parameters=("speed_estimator", "mechanism"),
            )
        if self.speed_estimator == "clipped-mean" and self.neighbouring == "presence-public":
            raise InvalidParameterError(
                "clipped-mean is calibrated for add-remove; under presence-public it would spend 4/3 to 1.5 times "
                "its epsilon (the centred sum moves by U*m_UB and the counts by distance 2): use add-remove"
            )
        for name, on in (("clip_bound", self.clip_bound != "public"), ("coarsen", self.coarsen != "none")):
            if on and (self.epsilon_per_day is None or self.speed_estimator != "report"):
                raise InvalidParameterError(
                    f"{name} splits an epsilon budget between release steps: it needs epsilon_per_day and the "
                    "report speed estimator",
                    parameters="epsilon_per_day",
                )
        if self.coarsen != "none" and self.resolution < COARSEN_LEVELS[self.coarsen][-1][0]:
            raise InvalidParameterError(
                f"coarsen {self.coarsen} needs a resolution of at least {COARSEN_LEVELS[self.coarsen][-1][0]}"
            )
        given = [name for name in DOMAIN_SOURCES if getattr(self, name) is not None]
        if len(given) > 1:
            raise InvalidParameterError(f"give one public domain, not {' and '.join(given)}")
        if self.route_domain and self.coarsen != "none":
            raise InvalidParameterError(
                "coarsen with a route domain (domain_gtfs, domain_geojson, domain_cells) is not supported: every "
                "domain HAT is already released; use a coarser resolution or longer slots instead"
            )
        self._resolve_auto()
        if self.domain_ring and not (self.domain_gtfs or self.domain_geojson):
            raise InvalidParameterError(
                "domain_ring widens a GTFS or GeoJSON domain: give domain_gtfs or domain_geojson"
            )
        if self.domain_bbox is not None:
            a, b, c, d = self.domain_bbox
            if not all(math.isfinite(x) for x in self.domain_bbox) or not (
                -90 <= a < c <= 90 and -180 <= b < d <= 180
            ):
                raise InvalidParameterError(
                    "domain_bbox must be finite min_lat,min_lon,max_lat,max_lon with min < max",
                    parameters="domain_bbox",
                )
            cells = estimated_domain_cells(self.domain_bbox, self.resolution)
            if cells > MAX_DOMAIN_CELLS:
                raise InvalidParameterError(
                    f"domain_bbox holds about {cells:,.0f} H3 cells at resolution {self.resolution} (at most "
                    f"{MAX_DOMAIN_CELLS:,}, each perturbed in every slot of every day): use a coarser resolution "
                    "or a smaller box"
                )
        if self.dates is not None:
            if not self.dates:
                raise InvalidParameterError("dates holds no day")
            if self.weekdays is not None:
                raise InvalidParameterError("give dates or weekdays, not both")
            outside = [
                d for d in self.dates if (self.start and d < self.start) or (self.end and d > self.end)
            ]
            if outside:
                raise InvalidParameterError(f"dates {outside[0]} lies outside start..end")
        elif (self.weekdays is not None or self.holidays) and (self.start is None or self.end is None):
            raise InvalidParameterError("weekdays and holidays select days within start..end: give both")
        if self.weekdays is not None:
            try:
                parse_weekdays(self.weekdays)
            except ValueError as err:
                raise InvalidParameterError(str(err), parameters="weekdays") from None
        k = self.max_hats_per_vehicle_day
        if isinstance(k, int) and not 1 <= k <= MAX_HATS_PER_VEHICLE_DAY:
            raise InvalidParameterError(
                f"max_hats_per_vehicle_day must be between 1 and {MAX_HATS_PER_VEHICLE_DAY:,} or 'observed', "
                f"got {k}",
                parameters="max_hats_per_vehicle_day",
            )

    def _resolve_auto(self) -> None:
        """Resolve ``auto`` of ``contribution_bounding`` and ``borrow_strength`` to the concrete choice (from the
        public parameters only), and check an explicit ``l2`` or ``parent``. Every reader of the spec (the release,
        the planner, privacy.json) sees the concrete value; :attr:`chosen` says how it was chosen."""
        chosen: dict[str, str] = {}
        missing = l2_missing(self)
        if self.contribution_bounding == "auto":
            value = "truncate" if missing else "l2"
            chosen["contribution_bounding"] = (
                f"auto: truncate (l2 needs {', '.join(missing)})"
                if missing
                else "auto: l2 (a public domain and Gaussian noise allow it)"
            )
            object.__setattr__(self, "contribution_bounding", value)  # frozen: set once, while validating
        else:
            chosen["contribution_bounding"] = f"given: {self.contribution_bounding}"
            if self.contribution_bounding == "l2" and missing:  # an explicit l2 the release does not allow
                text = ", ".join(missing)
                named = ("epsilon_per_day",) if "epsilon_per_day" in text else ()
                raise InvalidParameterError("contribution_bounding l2 needs " + text, parameters=named)
        pool_missing = borrow_missing(self)
        if self.borrow_strength == "auto":
            chosen["borrow_strength"] = (
                f"auto: none (parent needs {', '.join(pool_missing)})"
                if pool_missing
                else "auto: parent (add-remove and the report estimator allow it)"
            )
            object.__setattr__(self, "borrow_strength", "none" if pool_missing else "parent")
        else:
            chosen["borrow_strength"] = f"given: {self.borrow_strength}"
            if self.borrow_strength != "none" and pool_missing:  # an explicit parent it does not allow
                raise InvalidParameterError("borrow_strength needs " + ", ".join(pool_missing))
        self._chosen = chosen

    @property
    def chosen(self) -> dict[str, str]:
        """How ``contribution_bounding`` and ``borrow_strength`` were chosen: ``given: l2`` or ``auto: l2 (...)``
        (privacy.json states it beside the value)."""
        return dict(self._chosen)

    @property
    def not_dp_reasons(self) -> list[str]:
        """Each data-dependent choice the release leaves unpaid (docs/design.md rule 3), as privacy.json says it."""
        reasons, add_remove = [], self.neighbouring == "add-remove"
        if self.max_hats_per_vehicle_day == "observed":
            reasons.append("K (max HATs per vehicle-day) read from the data (report III E)")
        if add_remove and self.selection == "public-threshold":
            reasons.append("public-threshold selection reads true vehicle counts (report III C)")
        if add_remove and self.speed_estimator in PAPER_ESTIMATORS:
            reasons.append(
                f"estimator {self.speed_estimator} assumes unit counts are public (presence-public); use clipped-mean"
            )
        return reasons

    @property
    def differentially_private(self) -> bool:
        """False when a data-dependent choice is left unpaid (:attr:`not_dp_reasons`)."""
        return not self.not_dp_reasons


def l2_missing(cfg: HatReleaseConfig) -> list[str]:
    """What L2-normalised contributions need that ``cfg`` lacks (empty: allowed). They are calibrated for Gaussian
    noise on counts and centred sums over a public domain, under add/remove, one level, Query 1 only."""
    needs = [
        (cfg.public_domain, "a public domain (domain_bbox, domain_gtfs, domain_geojson or domain_cells)"),
        (cfg.resolved_mechanism == "gaussian", "Gaussian noise (epsilon_per_day, mechanism gaussian)"),
        (cfg.neighbouring == "add-remove", "add-remove neighbouring"),
        (cfg.selection == "dp", "DP selection"),
        (cfg.speed_estimator == "report", "the report speed estimator"),
        (cfg.coarsen == "none", "no coarsen"),
        (cfg.clip_bound == "public", "the public clip bound"),
        (tuple(cfg.queries) == ("speed",), "queries = speed only (speeding counts are not weighted)"),
        (cfg.max_hats_per_vehicle_day != "observed", "a public K or none (not observed)"),
    ]
    return [what for ok, what in needs if not ok]


def borrow_missing(cfg: HatReleaseConfig) -> list[str]:
    """What pooling needs that ``cfg`` lacks (empty: allowed). Pooling reads the noisy mean ``U/2 + S~/N~`` and
    the noise of both: add/remove, the report estimator, one level."""
    needs = [
        (cfg.neighbouring == "add-remove", "add-remove neighbouring"),
        (cfg.speed_estimator == "report", "the report speed estimator"),
        (cfg.coarsen == "none", "no coarsen"),
        ("speed" in cfg.queries, "the speed query"),
    ]
    return [what for ok, what in needs if not ok]


WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def parse_weekdays(text: str) -> set[int]:
    """``mon-fri``, ``sat,sun`` or ``mon-wed,fri`` to weekday numbers (Monday 0)."""
    out: set[int] = set()
    for part in str(text).lower().replace(" ", "").split(","):
        ends = part.split("-")
        if not part or len(ends) > 2 or any(e[:3] not in WEEKDAYS for e in ends):
            raise ValueError(f"weekdays must look like mon-fri or sat,sun, got '{text}'")
        a, b = WEEKDAYS.index(ends[0][:3]), WEEKDAYS.index(ends[-1][:3])
        out.update(range(a, b + 1) if a <= b else [*range(a, 7), *range(0, b + 1)])
    return out


# Coarser levels released where the finest HAT did not pass: (H3 levels up, slots merged) per level, finest first.
COARSEN_LEVELS: dict[str, tuple[tuple[int, int], ...]] = {
    "none": (),
    "parent1": ((1, 1),),
    "parent2": ((2, 1),),
    "slot2": ((0, 2),),
    "auto": ((1, 1), (2, 1)),
}

# The user-level mean estimators of the paper assume the units present and their record counts are public.
PAPER_ESTIMATORS = ("baseline", "array-averaging", "levy", "quantile")


def read_day(value: object, name: str) -> dt.date | None:
    """A day as a date (a datetime at midnight too) or ``YYYY-MM-DD`` text, as ``start`` and ``end`` take it."""
    return check_date(value, name, optional=True)


def read_hours(value: object) -> tuple[int, int]:
    """The daily hour window as ``"6-22"`` or two integers, within a day."""
    from urbandp._grid.slots import parse_hours  # polars: not imported by the command line's start

    a, b = (
        parse_hours(value)
        if isinstance(value, str)
        else check_numbers(value, "hours", length=2, integer=True)
    )
    if not (0 <= a < b <= 24):
        raise InvalidParameterError(
            f"hours must satisfy 0 <= start < end <= 24, got {a}-{b}", parameters="hours"
        )
    return int(a), int(b)


def public_window(cfg: HatReleaseConfig) -> tuple[dt.date | None, dt.date | None, tuple[dt.date, ...] | None]:
    """(start, end, day set) known before reading: a --dates list spans its first to last day."""
    start, end = cfg.start, cfg.end
    if cfg.dates:
        start, end = start or min(cfg.dates), end or max(cfg.dates)
    days = cfg.public_days(start, end) if start is not None and end is not None else None
    if days is not None and not days:
        raise InputError(
            "the public day set is empty (every day of the window is a holiday or another weekday)",
            parameters=("dates", "weekdays", "holidays"),
        )
    return start, end, days


def window_days(start: dt.date, end: dt.date, day_set: tuple[dt.date, ...] | None) -> tuple[dt.date, ...]:
    """The public days of a release: the day set, or every calendar day of ``start..end``."""
    from urbandp._privacy.session import days_between

    return day_set if day_set is not None else tuple(days_between(start, end))
