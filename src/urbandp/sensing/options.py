"""The options of the sensing releases, each declared once: the command line and the Python API
(:mod:`urbandp.sensing.api`) both build these frozen dataclasses, validated in ``__post_init__`` (Tumult-style),
so a value the command line refuses is refused from Python with the same one-line message.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from urbandp.errors import InvalidParameterError
from urbandp.sensing.pm_map_mechanism import DEFAULT_MAX_READINGS, SMOOTHERS, UNITS

MAX_PRECISION = 15

MIN_SENSITIVITY = 1e-6
"""Smallest ``sensitivity``: far above the 2^-40 lattice the bounded Laplace is drawn on (bounded_laplace.py)."""

DEFAULT_VEHICLE_COLUMN = "vehicle"

MAX_CELL_WINDOWS = 5_000_000

Box = tuple[float, float, float, float]


def check_grid_options(cell_metres: float, window_minutes: int, kernel: str | None = None) -> None:
    """The grid and window options every sensing command shares (kernel: the GP's, where there is one)."""
    from urbandp.sensing.kernels import KERNELS

    if not cell_metres > 0:
        raise InvalidParameterError(f"cell_metres must be > 0, got {cell_metres}", parameters="cell_metres")
    if window_minutes <= 0:
        raise InvalidParameterError(
            f"window_minutes must be > 0, got {window_minutes}", parameters="window_minutes"
        )
    if kernel is not None and kernel not in KERNELS:
        raise InvalidParameterError(
            f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}", parameters="kernel"
        )


def check_box(box: Box | None, parameter: str = "bbox") -> None:
    """A public box lat_min, lon_min, lat_max, lon_max with min < max (``parameter``: its keyword, ``bbox``)."""
    if box is not None and not (len(box) == 4 and box[0] < box[2] and box[1] < box[3]):
        raise InvalidParameterError(
            f"{parameter} must be lat_min,lon_min,lat_max,lon_max with min < max", parameters=parameter
        )


@dataclass(frozen=True, kw_only=True)
class DpMapOptions:
    """The options of `sensing dp-map` / :func:`urbandp.sensing.dp_map` (validated in ``__post_init__``)."""

    input_path: Path
    out: Path | None = None
    epsilon: float = 1.0
    bbox: Box | None = None
    bbox_from_data_not_private: bool = False
    cell_metres: float = 500.0
    window_minutes: int = 60
    kernel: str = "matern32"
    sensitivity: float = 1.0
    upper: float | None = None
    calibration: str = "holohan"
    utility_epsilons: tuple[float, ...] = (0.5, 1.0, 10.0)
    min_readings: int = 3
    budget: float | None = None
    precision: int = 4
    value_column: str | None = None
    dataset: str | None = None
    budget_store: str | None = None
    start: str | None = None
    end: str | None = None
    delta: float = 1e-6
    allow_meaningless_epsilon: bool = False

    def __post_init__(self) -> None:
        check_grid_options(self.cell_metres, self.window_minutes, self.kernel)
        check_box(self.bbox)
        self._check_numbers()
        if self.bbox is None and not self.bbox_from_data_not_private:
            raise InvalidParameterError(
                "give a public bbox (or bbox_from_data_not_private, which is not DP)",
                parameters=("bbox", "bbox_from_data_not_private"),
            )
        if self.min_readings < 2:
            raise InvalidParameterError(
                f"min_readings must be >= 2, got {self.min_readings}", parameters="min_readings"
            )
        if not 0 <= self.precision <= MAX_PRECISION:
            raise InvalidParameterError(
                f"precision must be between 0 and {MAX_PRECISION}, got {self.precision}",
                parameters="precision",
            )
        if self.dataset is not None and self.calibration == "paper":
            raise InvalidParameterError(
                "dataset: the paper's calibration is not DP and cannot be charged to a budget",
                parameters="dataset",
            )
        if self.dataset is not None and (self.start is None or self.bbox is None):
            raise InvalidParameterError(  # a release labelled NOT DP is never booked as DP spend (issue 20)
                "dataset: without start/end and a public bbox the release is NOT differentially private "
                "(its window or box is read from the readings); it cannot be charged to a budget as DP spend",
                parameters=("dataset", "start", "end", "bbox"),
            )
        if (self.start is None) != (self.end is None):
            raise InvalidParameterError(
                "give both start and end (a public time window), or neither", parameters=("start", "end")
            )

    def _check_numbers(self) -> None:
        from urbandp.sensing.bounded_laplace import CALIBRATIONS

        for name, v in (("epsilon", self.epsilon), ("sensitivity", self.sensitivity)):
            if not (v > 0 and math.isfinite(v)):
                raise InvalidParameterError(
                    f"{name} must be a positive finite number, got {v}", parameters=name
                )
        if self.sensitivity < MIN_SENSITIVITY:
            raise InvalidParameterError(
                f"sensitivity must be at least {MIN_SENSITIVITY:g} (noise is drawn on a 2^-40 lattice, so a "
                f"smaller one is rounded away), got {self.sensitivity:g}",
                parameters="sensitivity",
            )
        if self.upper is not None and not (math.isfinite(self.upper) and self.upper >= self.sensitivity):
            raise InvalidParameterError(
                f"upper must be finite and >= sensitivity, got {self.upper}",
                parameters=("upper", "sensitivity"),
            )
        if self.budget is not None and not (self.budget > 0 and math.isfinite(self.budget)):
            raise InvalidParameterError(
                f"budget must be a positive finite number, got {self.budget}", parameters="budget"
            )
        if self.calibration not in CALIBRATIONS:
            raise InvalidParameterError(
                f"calibration must be one of {', '.join(CALIBRATIONS)}, got {self.calibration!r}",
                parameters="calibration",
            )
        if any(not (e > 0 and math.isfinite(e)) for e in self.utility_epsilons):
            raise InvalidParameterError(
                "utility_epsilons must all be positive finite numbers", parameters="utility_epsilons"
            )


@dataclass(frozen=True, kw_only=True)
class PmMapOptions:
    """The options of `sensing pm-map` / :func:`urbandp.sensing.pm_map` (validated in ``__post_init__``)."""

    input_path: Path
    out: Path | None = None
    bbox: Box
    start: str
    end: str
    epsilon: float = 1.0
    clip: float = 250.0
    cell_metres: float = 1000.0
    window_minutes: int = 60
    smoother: str = "gp"
    value_column: str | None = None
    dataset: str | None = None
    budget_store: str | None = None
    allow_meaningless_epsilon: bool = False
    precision: int = 3
    unit: str | None = None  # None: vehicle-window when the input has a vehicle column, else reading
    vehicle_column: str | None = None  # None: a column named "vehicle", if the input has one
    max_readings_per_vehicle_window: int = DEFAULT_MAX_READINGS

    def __post_init__(self) -> None:
        check_box(self.bbox)
        if self.unit is not None and self.unit not in UNITS:
            raise InvalidParameterError(
                f"unit must be one of {', '.join(UNITS)}, got {self.unit!r}", parameters="unit"
            )
        m = self.max_readings_per_vehicle_window
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise InvalidParameterError(
                f"max_readings_per_vehicle_window must be an integer >= 1, got {m!r}",
                parameters="max_readings_per_vehicle_window",
            )
        if self.smoother not in SMOOTHERS:
            raise InvalidParameterError(
                f"smoother must be one of {', '.join(SMOOTHERS)}, got {self.smoother!r}",
                parameters="smoother",
            )
        if not (self.cell_metres > 0 and np.isfinite(self.cell_metres)):
            raise InvalidParameterError(
                f"cell_metres must be a positive number, got {self.cell_metres}", parameters="cell_metres"
            )
        if self.window_minutes <= 0:
            raise InvalidParameterError(
                f"window_minutes must be positive, got {self.window_minutes}", parameters="window_minutes"
            )
        if not 0 <= self.precision <= MAX_PRECISION:
            raise InvalidParameterError(
                f"precision must be between 0 and {MAX_PRECISION}, got {self.precision}",
                parameters="precision",
            )


QUERY_ERROR = "need epsilon > 0, alpha >= 1, rho != 0 and steepness > 0"
QUERY_PARAMETERS = ("epsilon", "alpha", "rho", "steepness")


@dataclass(frozen=True, kw_only=True)
class QueryOptions:
    """The options of `sensing query` / :func:`urbandp.sensing.query` (validated in ``__post_init__``)."""

    rect: Box
    type: str = "average"
    window: str | None = None
    select: Box | None = None
    cells: Path | None = None
    alpha: int = 5
    rho: float = 1.0
    theta: float | None = None
    theta2: float | None = None
    steepness: float = 1.0
    epsilon: float = 1.0
    sigma2_min: float | None = None
    sigma2_max: float | None = None

    def __post_init__(self) -> None:
        from urbandp.sensing.queries import QUERY_TYPES

        if self.type not in QUERY_TYPES:
            raise InvalidParameterError(
                f"type must be one of {', '.join(QUERY_TYPES)}, got {self.type!r}", parameters="type"
            )
        lo, hi = self.sigma2_min, self.sigma2_max
        if lo is None or hi is None or not (0 <= lo < hi and math.isfinite(hi)):
            raise InvalidParameterError(
                "give public bounds sigma2_min and sigma2_max with 0 <= min < max",
                parameters=("sigma2_min", "sigma2_max"),
            )
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)) or self.alpha < 1:
            raise InvalidParameterError(QUERY_ERROR, parameters=QUERY_PARAMETERS)
        if self.rho == 0 or not self.steepness > 0:
            raise InvalidParameterError(QUERY_ERROR, parameters=QUERY_PARAMETERS)
        if self.type in ("count", "range") and self.theta is None:
            raise InvalidParameterError(f"type {self.type} needs theta", parameters=("type", "theta"))
        if self.type == "range" and (self.theta2 is None or not self.theta < self.theta2):  # type: ignore[operator]
            raise InvalidParameterError(
                "type range needs theta2 > theta", parameters=("type", "theta2", "theta")
            )
        if len(self.rect) != 4 or (self.select is not None and len(self.select) != 4):
            raise InvalidParameterError(
                "rect and select need 4 numbers lat1,lon1,lat2,lon2", parameters=("rect", "select")
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
    try:
        return tuple(float(e) for e in text.split(","))
    except ValueError:
        raise InvalidParameterError(
            f"utility_epsilons must be comma-separated numbers, got {text!r}", parameters="utility_epsilons"
        ) from None


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


def resolve_unit(o: PmMapOptions, columns: list[str]) -> tuple[str, str | None]:
    """(unit, vehicle column to read) from the options and the file's header (its schema, public): the
    vehicle-window unit is the default whenever a vehicle column exists."""
    lower = {c.strip().lower(): c for c in columns}
    if o.vehicle_column is not None and o.vehicle_column.strip().lower() not in lower:
        raise InvalidParameterError(
            f"vehicle_column {o.vehicle_column!r}: no such column in {o.input_path} (found {', '.join(columns)})",
            parameters="vehicle_column",
        )
    name = o.vehicle_column or (DEFAULT_VEHICLE_COLUMN if DEFAULT_VEHICLE_COLUMN in lower else None)
    unit = o.unit or ("vehicle-window" if name is not None else "reading")
    if unit == "vehicle-window" and name is None:
        raise InvalidParameterError(
            f"unit vehicle-window needs vehicle ids: {o.input_path} has no {DEFAULT_VEHICLE_COLUMN!r} column; "
            "name one with vehicle_column, or use unit reading",
            parameters=("unit", "vehicle_column"),
        )
    return unit, name


GRID_ERROR = "need exact_max >= 2, inducing >= 2, min_readings >= 2, cv_folds 0 or >= 2"
GRID_PARAMETERS = ("exact_max", "inducing", "min_readings", "cv_folds")


@dataclass(frozen=True, kw_only=True)
class InterpolateOptions:
    """The options of `sensing interpolate` / :func:`urbandp.sensing.interpolate` (not a release: owner only)."""

    input_path: Path
    out: Path
    cell_metres: float = 500.0
    window_minutes: int = 60
    kernel: str = "matern32"
    exact_max: int = 2000
    inducing: int = 500
    min_readings: int = 3
    cv: bool = False
    cv_folds: int = 0
    cv_max_windows: int = 0
    cv_refit: bool = False
    grid_format: str = "parquet"
    plot: bool = False
    bbox: Box | None = None
    value_column: str | None = None

    def __post_init__(self) -> None:
        from urbandp.sensing.grid import GRID_FORMATS

        check_grid_options(self.cell_metres, self.window_minutes, self.kernel)
        if self.exact_max < 2 or self.inducing < 2 or self.min_readings < 2:
            raise InvalidParameterError(GRID_ERROR, parameters=GRID_PARAMETERS)
        if self.cv_folds < 0 or self.cv_folds == 1:
            raise InvalidParameterError(GRID_ERROR, parameters=GRID_PARAMETERS)
        if self.grid_format not in GRID_FORMATS:
            raise InvalidParameterError(
                f"grid_format must be one of {', '.join(GRID_FORMATS)}, got {self.grid_format!r}",
                parameters="grid_format",
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


def parse_box(text: str | None, parameter: str = "bbox") -> Box | None:
    """A box given as text ``lat_min,lon_min,lat_max,lon_max`` (checked: min < max)."""
    box = parse_numbers(text, 4, parameter)
    if box is None:
        return None
    result = (box[0], box[1], box[2], box[3])
    check_box(result, parameter)
    return result
