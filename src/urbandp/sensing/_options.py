"""The options of `sensing dp-map`, `pm-map`, `query` and `interpolate`, each a field made with
:func:`urbandp._release_options.option` (the commands' flags, through :class:`urbandp._cli_spec.OptionsOf`, and the
API's signatures are built from them; the checks between options are in ``model_post_init``). The fields that are
not options (interpolate's ``input_path`` and ``out``, dp-map's ``dataset``, which its checks read) are where the
run reads and writes, and the Session it runs in books its loss.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from urbandp._release_options import ReleaseOptions, option
from urbandp.errors import InvalidParameterError
from urbandp.sensing._bounded_laplace import CALIBRATIONS, check_meaningful
from urbandp.sensing._grid import GRID_FORMATS, check_on_globe
from urbandp.sensing._kernels import KERNELS
from urbandp.sensing._pm_map_mechanism import DEFAULT_CLIP, DEFAULT_MAX_READINGS, SMOOTHERS, UNITS
from urbandp.sensing._queries import MAX_STEEPNESS, MIN_STEEPNESS, QUERY_TYPES, STEEPNESS_WHY

MAX_PRECISION = 15

MIN_SENSITIVITY = 1e-6
"""Smallest ``sensitivity``: far above the 2^-40 lattice the bounded Laplace is drawn on (bounded_laplace.py)."""

DEFAULT_VEHICLE_COLUMN = "vehicle"

MAX_CELL_WINDOWS = 5_000_000
"""Most (window, cell) pairs a release noises; the public window alone may hold at most this many windows (each
window holds at least one cell), checked from start, end and window_minutes before any window is listed."""

NAMED_WINDOWS = {"hour": 60, "day": 1440, "week": 7 * 1440}
WHOLE_WINDOW = ("whole", "season")
DEFAULT_WINDOW_MINUTES = 60

Box = tuple[float, float, float, float]

VALUE_COLUMN_HELP = "Name of the value column (default: the first of value, pm, pm25, pm2_5, pm2.5)."
CELL_METRES_HELP = "Grid cell side z in metres."
WINDOW_MINUTES_HELP = "Window length in minutes."
KERNEL_HELP = "matern32 | matern52 | rbf."
PRECISION_HELP = "Decimal places of released values."


def check_box(box: Box | None) -> None:
    """A public box lat_min, lon_min, lat_max, lon_max with min < max, on the globe
    (:func:`urbandp.sensing._grid.check_on_globe`)."""
    if box is None:
        return
    if not (box[0] < box[2] and box[1] < box[3]):
        raise InvalidParameterError(
            "bbox must be lat_min,lon_min,lat_max,lon_max with min < max", parameters="bbox"
        )
    check_on_globe(box)


def check_window_count(start: str | None, end: str | None, window_minutes: int) -> None:
    """The public window ``[start, end)`` cut into ``window_minutes`` windows holds at most
    :data:`MAX_CELL_WINDOWS` of them: counted from the two instants, before any window is listed (a span of
    millennia would otherwise take gigabytes before the cell count is checked)."""
    if start is None or end is None:
        return
    s, e = parse_window(start, end)
    minutes = int((e - s) / np.timedelta64(1, "m"))
    windows = -(-minutes // int(window_minutes)) + 1  # the first may start before start
    if windows > MAX_CELL_WINDOWS:
        raise InvalidParameterError(
            f"start {start} to end {end} holds about {windows:,} windows of window_minutes {window_minutes}, "
            f"more than {MAX_CELL_WINDOWS:,}; use a shorter start/end or a longer window_minutes",
            parameters=("start", "end", "window_minutes"),
        )


def sharpness(help: str) -> Any:
    """A query's public sharpness option (sigmoid steepness k, LogSumExp rho), default 1: between
    :data:`~urbandp.sensing._queries.MIN_STEEPNESS` and :data:`~urbandp.sensing._queries.MAX_STEEPNESS`."""
    return option(1.0, help=help, ge=MIN_STEEPNESS, le=MAX_STEEPNESS, why=STEEPNESS_WHY)


class DpMapOptions(ReleaseOptions):
    """The options of `sensing dp-map` / :func:`urbandp.sensing.dp_map`."""

    epsilon: float = option(
        1.0, help="Epsilon per cell (the paper's epsilon); the map costs cells x it.", gt=0
    )
    bbox: Box | None = option(
        None,
        help="Public box lat_min,lon_min,lat_max,lon_max (default: none; required unless the flag below).",
        cli_type=str | None,
    )
    bbox_from_data_not_private: bool = option(
        False, help="Take the box from the readings (NOT DP).", negatable=True
    )
    cell_metres: float = option(500.0, help=CELL_METRES_HELP, gt=0)
    window_minutes: int = option(60, help=WINDOW_MINUTES_HELP, ge=1)
    kernel: str = option("matern32", help=KERNEL_HELP, choices=KERNELS)
    sensitivity: float = option(
        1.0,
        help="Cap on the kernel variance = per-cell sensitivity (VI-A).",
        ge=MIN_SENSITIVITY,
        why="noise is drawn on a 2^-40 lattice, so a smaller one is rounded away",
    )
    upper: float | None = option(
        None,
        help="Upper bound of the released domain, at least the sensitivity (default: the sensitivity).",
    )
    calibration: str = option(
        "holohan", help="holohan (DP, default) | paper (NOT DP, for comparison).", choices=CALIBRATIONS
    )
    utility_epsilons: tuple[float, ...] = option(
        (0.5, 1.0, 10.0),
        help="Epsilons for the Fig. 6 RMSE CDF ('' = off).",
        cli_type=str,
        cli_default="0.5,1,10",
    )
    min_readings: int = option(3, help="Windows with fewer readings get the prior variance.", ge=2)
    budget: float | None = option(
        None,
        help="Refuse to spend more than this epsilon in total (default: no cap).",
        gt=0,
    )
    precision: int = option(4, help=PRECISION_HELP, ge=0, le=MAX_PRECISION)
    value_column: str | None = option(None, help=VALUE_COLUMN_HELP)
    dataset: str | None = None
    start: str | None = option(
        None,
        help="Public start of the time window, ISO date or date-time (default: the first reading, not DP).",
    )
    end: str | None = option(
        None,
        help="Public end of the window, exclusive; a date includes that day (default: the last reading, not DP).",
    )
    delta: float = option(
        1e-6,
        help="Delta of the optimal composition of a window's cells (Kairouz, Oh, Viswanath): the map is "
        "(epsilon, delta)-DP with epsilon far below cells x epsilon; 0 gives the basic sum at delta 0.",
    )

    def model_post_init(self, context: Any, /) -> None:
        check_box(self.bbox)
        if self.upper is not None and not self.upper >= self.sensitivity:
            raise InvalidParameterError(
                f"upper must be finite and >= sensitivity, got {self.upper}",
                parameters=("upper", "sensitivity"),
            )
        if any(not (e > 0 and math.isfinite(e)) for e in self.utility_epsilons):
            raise InvalidParameterError(
                "utility_epsilons must all be positive finite numbers", parameters="utility_epsilons"
            )
        if self.bbox is None and not self.bbox_from_data_not_private:
            raise InvalidParameterError(
                "give a public bbox (or bbox_from_data_not_private, which is not DP)",
                parameters=("bbox", "bbox_from_data_not_private"),
            )
        if self.dataset is not None and self.calibration == "paper":
            raise InvalidParameterError(
                "dataset: the paper's calibration is not DP and cannot be charged to a budget",
                parameters="dataset",
            )
        if self.dataset is not None and (self.start is None or self.bbox is None):
            raise InvalidParameterError(  # a release labelled NOT DP is never booked as DP spend
                "dataset: without start/end and a public bbox the release is NOT differentially private "
                "(its window or box is read from the readings); it cannot be charged to a budget as DP spend",
                parameters=("dataset", "start", "end", "bbox"),
            )
        if (self.start is None) != (self.end is None):
            raise InvalidParameterError(
                "give both start and end (a public time window), or neither", parameters=("start", "end")
            )
        check_window_count(self.start, self.end, self.window_minutes)
        self._check_epsilons()

    def _check_epsilons(self) -> None:
        """The delta limit and the bounded Laplace's floor on epsilon, for the map and the utility curve."""
        from urbandp._privacy.guards import check_delta

        check_delta(self.delta, "delta")
        hi = self.sensitivity if self.upper is None else self.upper
        # the same floor for the utility curve (its closed form breaks below it)
        for e in (self.epsilon, *self.utility_epsilons):
            try:
                check_meaningful(e, self.sensitivity, 0.0, hi)
            except ValueError as err:
                if e == self.epsilon:  # err names epsilon and its value: "epsilon 0.001 needs ..."
                    raise InvalidParameterError(str(err), parameters="epsilon") from None
                raise InvalidParameterError(
                    f"utility_epsilons: {err}", parameters="utility_epsilons"
                ) from None


class PmMapOptions(ReleaseOptions):
    """The options of `sensing pm-map` / :func:`urbandp.sensing.pm_map`."""

    bbox: Box = option(help="Public box lat_min,lon_min,lat_max,lon_max (the grid).", cli_type=str)
    start: str = option(help="Public start of the time window, ISO date or date-time.")
    end: str = option(help="Public end of the window, exclusive; a date includes that day.")
    epsilon: float = option(
        1.0,
        help="Epsilon per privacy unit (per vehicle-window, or per reading; see --unit).",
        gt=0,
    )
    clip: float = option(250.0, help="Public upper bound of a reading; values are clipped to [0, it].", gt=0)
    cell_metres: float = option(1000.0, help="Grid cell side in metres.", gt=0)
    window_minutes: int = option(DEFAULT_WINDOW_MINUTES, help=WINDOW_MINUTES_HELP, ge=1)
    window: str | None = option(
        None,
        help="Window length by name: whole (alias season: one window from --start to --end), day, week, hour, "
        "or N minutes; windows begin at --start (default: --window-minutes).",
    )
    smoother: str = option("gp", help="gp | idw | none: how the noisy cells become a map.", choices=SMOOTHERS)
    value_column: str | None = option(None, help=VALUE_COLUMN_HELP)
    precision: int = option(3, help=PRECISION_HELP, ge=0, le=MAX_PRECISION)
    unit: str | None = option(  # None: vehicle-window when the input has a vehicle column, else reading
        None,
        help="vehicle-window | reading (default: vehicle-window when the input has a vehicle column, else reading).",
        choices=UNITS,
    )
    vehicle_column: str | None = option(  # None: a column named "vehicle", if the input has one
        None, help="Column of vehicle ids (default: a column named 'vehicle', if the input has one)."
    )
    max_readings_per_vehicle_window: int = option(
        DEFAULT_MAX_READINGS,
        help="Public bound M: a vehicle-window keeps at most M readings (a pseudo-random subset keyed on each "
        "reading's own time and vehicle); the noise grows with M; a reading costs 2 epsilon / M.",
        ge=1,
    )

    def model_post_init(self, context: Any, /) -> None:
        check_box(self.bbox)
        if self.window is not None:
            minutes = window_length(self.window, self.start, self.end)
            if self.window_minutes not in (DEFAULT_WINDOW_MINUTES, minutes):
                raise InvalidParameterError(
                    f"give window or window_minutes, not both ({self.window!r} and {self.window_minutes})",
                    parameters=("window", "window_minutes"),
                )
            object.__setattr__(self, "window_minutes", minutes)  # one length from here on
        check_window_count(self.start, self.end, self.window_minutes)


def window_length(window: str, start: str, end: str) -> int:
    """Minutes of a window named ``window``: ``whole`` (or ``season``) is the public ``[start, end)`` in one
    window; ``hour``, ``day``, ``week``; or a whole number of minutes. Windows are counted from ``start``."""
    name = window.strip().lower()
    if name in WHOLE_WINDOW:
        s, e = parse_window(start, end)
        return int((e - s) // np.timedelta64(1, "m"))
    if name in NAMED_WINDOWS:
        return NAMED_WINDOWS[name]
    try:
        minutes = int(name)
    except ValueError:
        minutes = 0
    if minutes < 1:
        raise InvalidParameterError(
            "window must be whole, season, hour, day, week or a whole number of minutes >= 1, "
            f"got {window!r}",
            parameters="window",
        )
    return minutes


class QueryOptions(ReleaseOptions):
    """The options of `sensing query` / :func:`urbandp.sensing.query`."""

    rect: Box = option(help="Obfuscation rectangle lat1,lon1,lat2,lon2 (diagonal vertices).", cli_type=str)
    type: str = option(
        "average", help="average|min|max|min-exact|max-exact|count|range.", choices=QUERY_TYPES
    )
    window: str | None = option(None, help="Window start as in the grid file (default: the first).")
    select: Box | None = option(
        None, help="Cells of interest lat1,lon1,lat2,lon2 (default: all of --rect).", cli_type=str | None
    )
    cells: Path | None = option(
        None,
        help="File of cells of interest, one cell_id per line as for mpc query (default: every cell of --rect).",
    )
    alpha: int = option(5, help="Server threshold: answer only over >= alpha cells.", ge=1)
    rho: float = option(1.0, help="LogSumExp sharpness |rho| for min/max.")
    theta: float | None = option(
        None,
        help="Threshold for count and lower bound for range (default: none; required for count and range).",
    )
    theta2: float | None = option(None, help="Upper bound for range (default: none; required for range).")
    steepness: float = sharpness("Sigmoid steepness k (paper: 1).")
    epsilon: float = option(1.0, help="Epsilon for the noisy squared error (VII-D).", gt=0)
    sigma2_min: float = option(
        0.0,
        help="Public lower bound of cell variances (0 holds for any grid; as mpc serve).",
        ge=0,
    )
    sigma2_max: float | None = option(
        None, help="Public upper bound of cell variances (default: none; required)."
    )

    def model_post_init(self, context: Any, /) -> None:
        lo, hi = self.sigma2_min, self.sigma2_max
        if hi is None or not lo < hi:
            raise InvalidParameterError(
                "give public bounds sigma2_min and sigma2_max with 0 <= min < max",
                parameters=("sigma2_min", "sigma2_max"),
            )
        if not MIN_STEEPNESS <= abs(self.rho) <= MAX_STEEPNESS:
            raise InvalidParameterError(
                f"rho must be a finite number with {MIN_STEEPNESS:g} <= |rho| <= {MAX_STEEPNESS:g} (the "
                f"LogSumExp divides by it: a smaller one overflows the answer), got {self.rho!r}",
                parameters="rho",
            )
        if self.type in ("count", "range") and self.theta is None:
            raise InvalidParameterError(f"type {self.type} needs theta", parameters=("type", "theta"))
        if self.type == "range" and (self.theta2 is None or not self.theta < self.theta2):  # type: ignore[operator]
            raise InvalidParameterError(
                "type range needs theta2 > theta", parameters=("type", "theta2", "theta")
            )
        if self.cells is not None and self.select is not None:
            raise InvalidParameterError(
                "give at most one of select and cells", parameters=("select", "cells")
            )


def parse_utility_epsilons(text: str) -> tuple[float, ...]:
    """``"0.5,1,10"`` -> (0.5, 1.0, 10.0); ``""`` -> () (utility curve off); an empty item (``"1,,2"``) is
    refused, not skipped."""
    if not text.strip():
        return ()
    return _comma_separated(text, "utility_epsilons", "comma-separated numbers", float)


def parse_window(start: str, end: str) -> tuple[np.datetime64, np.datetime64]:
    """Public ``[start, end)``: ISO dates or date-times; a date-only ``end`` includes that whole day."""

    def one(text: str, parameter: str) -> tuple[np.datetime64, bool]:
        t = text.strip()
        try:
            if len(t) == 10:
                return np.datetime64(dt.date.fromisoformat(t), "m"), True
            return np.datetime64(dt.datetime.fromisoformat(t).replace(tzinfo=None), "m"), False
        except ValueError:
            raise InvalidParameterError(
                f"{parameter} must be an ISO date or date-time like 2023-04-25, got {text!r}",
                parameters=parameter,
            ) from None

    s, _ = one(start, "start")
    e, date_only = one(end, "end")
    if date_only:
        e = e + np.timedelta64(1, "D")
    if not e > s:
        raise InvalidParameterError(
            f"end ({end}) must not be before start ({start})", parameters=("start", "end")
        )
    return s, e


def resolve_unit(o: PmMapOptions, path: Path, columns: list[str]) -> tuple[str, str | None]:
    """(unit, vehicle column to read) from the options and the header of the readings at ``path`` (its schema,
    public): the vehicle-window unit is the default whenever a vehicle column exists."""
    lower = {c.strip().lower(): c for c in columns}
    if o.vehicle_column is not None and o.vehicle_column.strip().lower() not in lower:
        raise InvalidParameterError(
            f"vehicle_column {o.vehicle_column!r}: no such column in {path} (found {', '.join(columns)})",
            parameters="vehicle_column",
        )
    name = o.vehicle_column or (DEFAULT_VEHICLE_COLUMN if DEFAULT_VEHICLE_COLUMN in lower else None)
    unit = o.unit or ("vehicle-window" if name is not None else "reading")
    if unit == "vehicle-window" and name is None:
        raise InvalidParameterError(
            f"unit vehicle-window needs vehicle ids: {path} has no {DEFAULT_VEHICLE_COLUMN!r} column; "
            "name one with vehicle_column, or use unit reading",
            parameters=("unit", "vehicle_column"),
        )
    return unit, name


class InterpolateOptions(ReleaseOptions):
    """The options of `sensing interpolate` / :func:`urbandp.sensing.interpolate` (not a release: owner only)."""

    input_path: Path
    out: Path
    cell_metres: float = option(500.0, help=CELL_METRES_HELP, gt=0)
    window_minutes: int = option(60, help=WINDOW_MINUTES_HELP, ge=1)
    kernel: str = option("matern32", help=KERNEL_HELP, choices=KERNELS)
    exact_max: int = option(2000, help="Exact GP up to this many readings per window; SGPR beyond.", ge=2)
    inducing: int = option(500, help="Inducing points of the sparse GP.", ge=2)
    min_readings: int = option(3, help="Skip windows with fewer readings.", ge=2)
    cv: bool = option(False, help="Cross-validate against IDW (5 folds unless --cv-folds is given).")
    cv_folds: int = option(
        0, help="K-fold cross-validation against IDW (0 = off unless --cv, which means 5).", ge=0
    )
    cv_max_windows: int = option(0, help="Cross-validate at most this many windows (0 = all).", ge=0)
    cv_refit: bool = option(
        False, help="Re-optimise hyper-parameters in every fold (default: reuse the window's fit)."
    )
    grid_format: str = option("parquet", help="parquet | csv (file DIR/grid.<format>).", choices=GRID_FORMATS)
    plot: bool = option(False, help="Also write map_mu_sigma2.png (matplotlib adds ~1 s).", negatable=True)
    bbox: Box | None = option(
        None,
        help="Public box lat_min,lon_min,lat_max,lon_max (default: the readings' extent, not DP).",
        cli_type=str | None,
    )
    value_column: str | None = option(None, help=VALUE_COLUMN_HELP)

    def model_post_init(self, context: Any, /) -> None:
        if self.cv_folds == 1:
            raise InvalidParameterError(
                "cv_folds must be 0 (off) or at least 2, got 1", parameters="cv_folds"
            )
        check_box(self.bbox)

    @property
    def folds(self) -> int:
        """Cross-validation folds: ``cv_folds``, or 5 with ``cv``, else 0 (off)."""
        return self.cv_folds or (5 if self.cv else 0)


def parse_numbers(text: str | None, n: int, parameter: str) -> tuple[float, ...] | None:
    """``"1,2,3,4"`` -> (1.0, 2.0, 3.0, 4.0) for a parameter (``rect``) given as ``n`` comma-separated numbers."""
    if text is None:
        return None
    try:
        vals = tuple(float(t) for t in text.split(","))
    except ValueError:
        vals = ()
    if len(vals) != n:
        raise InvalidParameterError(
            f"{parameter} needs {n} comma-separated numbers, got {text!r}", parameters=parameter
        )
    return vals


def as_box(parameter: str) -> Callable[[str | None], tuple[float, ...] | None]:
    """``--bbox``/``--rect``/``--select`` text as four numbers (the options check them: ``bbox`` min < max)."""
    return functools.partial(parse_numbers, n=4, parameter=parameter)


class PlanOptions(ReleaseOptions):
    """The public figures of `sensing plan` / :func:`urbandp.sensing._planner.plan_sensing` (no release: it reads
    no data and spends no budget); the candidate cell sides in metres and windows in days."""

    bbox: Box = option(help="Public box lat_min,lon_min,lat_max,lon_max (the grid).", cli_type=str)
    readings_per_day: float = option(
        help="Readings the fleet takes per day in the box (public knowledge or a paid count).", gt=0
    )
    share_visited: float = option(
        help="Share of the box's cells the fleet's routes visit, in (0, 1].", gt=0, le=1
    )
    epsilon: float = option(1.0, help="Epsilon per reading of the planned pm-map.", gt=0)
    spread_between: float = option(
        10.0, help="Spread (sd, ug/m3) of PM2.5 between places: the signal a map should show.", gt=0
    )
    spread_within: float = option(
        25.0, help="Spread (sd, ug/m3) of readings within one cell and window.", gt=0
    )
    level: float = option(50.0, help="Typical PM2.5 (ug/m3).")
    clip: float = option(DEFAULT_CLIP, help="Public upper bound of a reading, as pm-map --clip.", gt=0)
    cell_metres: tuple[float, ...] = option(
        (250.0, 500.0, 1000.0, 2000.0),
        help="Candidate cell sides in metres.",
        cli_type=str,
        cli_default="250,500,1000,2000",
    )
    windows: tuple[float, ...] = option(
        (1 / 24, 1.0, 7.0, 30.0, 90.0),
        help="Candidate windows: hour, day, week or days.",
        cli_type=str,
        cli_default="hour,day,week,30,90",
    )

    def model_post_init(self, context: Any, /) -> None:
        if not 0 <= self.level <= self.clip:
            raise InvalidParameterError(
                f"level must be in [0, clip], got {self.level}", parameters=("level", "clip")
            )
        check_box(self.bbox)
        for name, values in (("cell_metres", self.cell_metres), ("windows", self.windows)):
            if not values or not all(math.isfinite(v) and v > 0 for v in values):
                shown = ",".join(f"{v:g}" for v in values)
                raise InvalidParameterError(f"{name} must be numbers > 0, got {shown!r}", parameters=name)


def parse_cell_sizes(text: str) -> tuple[float, ...]:
    """``250,500,1000`` -> cell sides in metres (:class:`PlanOptions` checks them)."""
    return _comma_separated(text, "cell_metres", "positive numbers, comma-separated", float)


def parse_windows(text: str) -> tuple[float, ...]:
    """``hour,day,week,30`` -> window lengths in days (a number is days; :class:`PlanOptions` checks them)."""
    named = {name: minutes / 1440 for name, minutes in NAMED_WINDOWS.items()}
    return _comma_separated(
        text,
        "windows",
        "hour, day, week or numbers of days > 0",
        lambda t: named.get(t.strip().lower()) or float(t),
    )


def _comma_separated(text: str, parameter: str, what: str, read: Callable[[str], float]) -> tuple[float, ...]:
    """Each comma-separated item of ``text`` read by ``read``; an item it cannot read (``"1,,2"`` included) is
    refused in one line naming ``parameter``: ``{parameter} must be {what}, got '{text}'``."""
    try:
        return tuple(read(t) for t in text.split(","))
    except ValueError:
        raise InvalidParameterError(
            f"{parameter} must be {what}, got {text!r}", parameters=parameter
        ) from None
