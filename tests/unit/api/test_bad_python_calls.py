"""A generated set of bad Python calls over the public API: each ends as the project's error naming the parameter
(in the message and in ``err.parameters``), or is accepted because it is a reasonable spelling of a valid value
(a list where a tuple is documented, a ``date`` where text is, NumPy numbers). Never a raw traceback
(TypeError, AttributeError, OverflowError, a Polars or pyproj error), never a string taken as a switch.

The calls are generated from each function's declared parameters (:func:`inspect.signature`; for
``ud.fleet.release``, its declared options): every number gets a string, NaN, ``10**400`` and a bool;
every integer a fraction; every switch ``"no"`` and ``1``; every name a number. Hand-written cases add
what a notebook passes: a Series for a frame, bad boxes, dates, time zones with a +05:30 offset, unknown keywords.
Run this file as a script to print the tally (clean errors / accepted / tracebacks / strings taken as switches).
"""

from __future__ import annotations

import datetime as dt
import inspect
import math
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest

import urbandp as ud
from urbandp.errors import InputError, UrbandpError

# --- small inputs, each accepted by its function's base call ----------------------------------------------------

FLEET = pl.DataFrame(
    {
        "vehicle_id": ["a", "b"],
        "timestamp": ["2021-11-15 10:00:00", "2021-11-15 10:00:05"],
        "speed": [20.0, 21.0],
        "latitude": [21.17, 21.17],
        "longitude": [72.83, 72.83],
    }
)
EVENTS = pl.DataFrame(
    {
        "mode": ["bus"] * 3,
        "timestamp": ["2016-08-08 10:05:00"] * 3,
        "tap": ["on"] * 3,
        "location": ["2000", "2001", "2000"],
    }
)
DOMAIN = {"days": ["2016-08-08"], "bin_minutes": 60, "places": {"bus": ["2000", "2001"]}}
VEHICLES = pl.DataFrame({"household": ["1", "2", "3"], "fuel": ["gas"] * 3, "model": ["A", "B", "C"]})
TRIPS = pl.DataFrame({"from": ["1", "2"], "to": ["2", "1"]})
HOMES = pl.DataFrame({"lat": [44.95, 44.96], "lon": [-93.25, -93.26]})
TRAJECTORY = pl.DataFrame(
    {"trip": ["1"] * 4, "seq": [0, 1, 2, 3], "lat": [44.950, 44.951, 44.952, 44.953], "lon": [-93.25] * 4}
)
MEANS = pl.DataFrame({"u": ["a", "a", "b", "c"], "v": [1.0, 2.0, 3.0, 4.0]})
PAIRS = pl.DataFrame({"a": [1, 2, 3, 4, 5], "b": [2, 2, 5, 3, 6]})
TABLE = pl.DataFrame(
    {
        "mode": ["bus"] * 2,
        "day": ["1"] * 2,
        "tap": ["on", "off"],
        "location": ["A", "B"],
        "count": [40.0, 41.0],
    }
)
MARGINAL = pl.DataFrame({"mode": ["bus"], "day": ["1"], "tap": ["on"], "count": [40.0]})
BOX = (22.45, 88.30, 22.65, 88.47)
DAY = {"start": "2024-01-15", "end": "2024-01-15"}
RECT = (22.50, 88.32, 22.56, 88.37)


@dataclass(frozen=True)
class Inputs:
    """Files a call may need, made once per module under pytest's temporary folder."""

    tmp: Path
    readings: Path
    store: Path


def _inputs(tmp: Path) -> Inputs:
    from urbandp.sensing._synth import synth_readings

    readings = tmp / "readings.csv"
    synth_readings(300, hours=24).write_csv(readings)
    store = tmp / "budget.sqlite"
    ud.budget.declare(store, "d", unit="vehicle-day", epsilon_total=1000)
    return Inputs(tmp, readings, store)


# --- the functions, their base calls ----------------------------------------------------------------------------

Call = Callable[[Inputs, dict[str, Any]], object]


def _fleet(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.fleet.release(FLEET, **{"start": "2021-11-15", "end": "2021-11-15", "epsilon_per_day": 4, **kw})


def _counts(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.counts.release(EVENTS, **{"domain": DOMAIN, "epsilon": 1.0, **kw})


def _randomize(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.survey.randomize(VEHICLES, **{"column": "model", "categories": "A,B,C", "epsilon": 1.0, **kw})


def _estimate(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.survey.estimate(VEHICLES, **{"column": "model", "categories": "A,B,C", "epsilon": 1.0, **kw})


def _points(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.survey.perturb_points(HOMES, **{"lat": "lat", "lon": "lon", "epsilon_per_metre": 0.01, **kw})


def _od(i: Inputs, kw: dict[str, Any]) -> object:
    options = {"origin": "from", "dest": "to", "blocks": 3, "epsilon": 1.0, **kw}
    return ud.survey.od_randomize(TRIPS, **options)


def _ssd(i: Inputs, kw: dict[str, Any]) -> object:
    options = {"lat": "lat", "lon": "lon", "trip": "trip", "epsilon": 1.0, "max_step_metres": 500.0, **kw}
    return ud.survey.perturb_trajectories(TRAJECTORY, **options)


def _dp_map(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.sensing.dp_map(i.readings, **{"bbox": BOX, **DAY, "epsilon": 1.0, "cell_metres": 5000.0, **kw})


def _pm_map(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.sensing.pm_map(i.readings, **{"bbox": BOX, **DAY, "epsilon": 2.0, "cell_metres": 5000.0, **kw})


def _query(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.sensing.query(i.tmp / "no-grid.csv", **{"rect": RECT, **kw})


def _mean(i: Inputs, kw: dict[str, Any]) -> object:
    options = {"unit_column": "u", "value_column": "v", "epsilon": 1.0, "upper": 10.0, **kw}
    return ud.estimators.release(MEANS, **options)


def _noise_scale(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.audit.noise_scale(PAIRS, **kw)


def _zero_skipping(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.audit.zero_skipping(TABLE, **{"method": "unknown", **kw})


def _differencing(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.audit.differencing(TABLE, MARGINAL, **{"scale": 1.0, **kw})


def _pairs(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.audit.pairs(TABLE, **{"route": "bus:A>B", **kw})


def _declare(i: Inputs, kw: dict[str, Any]) -> object:
    store, dataset = kw.pop("store", i.tmp / "declared.sqlite"), kw.pop("dataset", "x")
    return ud.budget.declare(store, dataset, **{"unit": "vehicle-day", "epsilon_total": 10.0, **kw})


def _remaining(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.budget.remaining(**{"store": i.store, "dataset": "d", **kw})


def _history(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.budget.history(**{"store": i.store, "dataset": "d", **kw})


def _session(i: Inputs, kw: dict[str, Any]) -> object:
    return ud.Session(**kw)


def _mpc_query(i: Inputs, kw: dict[str, Any]) -> object:
    from urbandp.mpc._client import Client

    client = Client.__new__(Client)  # not connected: the checks come before the client talks to a server
    return client.query(**{"function": "average", "rect": RECT, "cells": [1], **kw})


def _function_of(name: str) -> Callable[..., Any]:
    wing, _, attr = name.rpartition(".")
    if name == "Session":
        return ud.Session
    if name == "mpc.query":
        from urbandp.mpc._client import Client

        return Client.query
    return getattr(getattr(ud, wing), attr)


FUNCTIONS: dict[str, Call] = {
    "fleet.release": _fleet,
    "counts.release": _counts,
    "survey.randomize": _randomize,
    "survey.estimate": _estimate,
    "survey.perturb_points": _points,
    "survey.od_randomize": _od,
    "survey.perturb_trajectories": _ssd,
    "sensing.dp_map": _dp_map,
    "sensing.pm_map": _pm_map,
    "sensing.query": _query,
    "estimators.release": _mean,
    "audit.noise_scale": _noise_scale,
    "audit.zero_skipping": _zero_skipping,
    "audit.differencing": _differencing,
    "audit.pairs": _pairs,
    "budget.declare": _declare,
    "budget.remaining": _remaining,
    "budget.history": _history,
    "Session": _session,
    "mpc.query": _mpc_query,
}
"""Every function the set calls, by its public name, with a base call that is accepted as it is."""

# parameters that take an object, not a plain value, or that the hand-written cases cover
NOT_GENERATED = {
    "data",
    "session",
    "out",
    "config",
    "progress",
    "step",
    "map_inputs",
    "command_line",
    "noise",
}
NOT_GENERATED |= {
    "domain",
    "column",
    "columns",
    "route",
    "vector",
    "cells",
    "rect",
    "bbox",
    "select",
    "store",
}
TAKES_NUMBERS = {"max_hats_per_vehicle_day", "m_ub"}  # declared as text, taking an integer too
NOT_GENERATED |= {"pairs", "table", "joint", "marginal", "privacy", "self", "dataset", "utility_epsilons"}


# --- what a case is, and what it ends as ------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One call: ``function`` with ``keywords`` over its base call; refused naming ``parameter``, or accepted
    (``parameter`` None). ``switch``: the value is a string given for a switch (True/False only)."""

    function: str
    keywords: dict[str, Any]
    parameter: str | None
    label: str
    switch: bool = False

    @property
    def id(self) -> str:
        return f"{self.function}:{self.label}"


def _kind(annotation: str) -> str | None:
    """The kind of a parameter from its annotation's text: switch, integer, number or text (None: not generated)."""
    words = {w.strip() for w in annotation.replace("|", ",").split(",")}
    words.discard("None")
    if words == {"bool"}:
        return "switch"
    if words == {"int"}:
        return "integer"
    if words <= {"int", "float"} and words:
        return "number"
    if words == {"str"}:
        return "text"
    return None


def _fleet_parameters() -> Iterator[tuple[str, str]]:
    """``ud.fleet.release``'s options (declared apart from its signature) and its own keywords."""
    from urbandp.fleet._options_flags import OPTION_NAMES, release_options

    for option in release_options():
        if option.name in OPTION_NAMES:
            text = getattr(option.cli_type, "__name__", None) or str(option.cli_type)
            yield option.name, text.replace("pathlib.Path", "Path")
    for name, p in inspect.signature(ud.fleet.release).parameters.items():
        if p.kind is p.KEYWORD_ONLY:
            yield name, str(p.annotation)


def _parameters(function: str) -> Iterator[tuple[str, str]]:
    if function == "fleet.release":
        yield from _fleet_parameters()
        return
    for name, p in inspect.signature(_function_of(function)).parameters.items():
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
            # a signature built from a model holds types (bool), one written out holds their text ('bool')
            yield name, p.annotation if isinstance(p.annotation, str) else _type_text(p.annotation)


def _type_text(annotation: object) -> str:
    """``bool`` -> ``'bool'``, ``float | None`` -> ``'float | None'``, as a written annotation reads."""
    return getattr(annotation, "__name__", None) or str(annotation).replace("pathlib.", "")


NUMBERS: list[tuple[str, object]] = [
    ("text", "4"),
    ("nan", math.nan),
    ("10**400", 10**400),
    ("bool", True),
]


def _generated() -> Iterator[Case]:
    for function in FUNCTIONS:
        for name, annotation in _parameters(function):
            kind = _kind(annotation)
            if name in NOT_GENERATED or kind is None or (kind == "text" and name in TAKES_NUMBERS):
                continue
            if kind == "switch":
                yield Case(function, {name: "no"}, name, f"{name}='no'", switch=True)
                yield Case(function, {name: 1}, name, f"{name}=1")
            elif kind in ("number", "integer"):
                for label, value in NUMBERS:
                    yield Case(function, {name: value}, name, f"{name}={label}")
                if kind == "integer":
                    yield Case(function, {name: 2.5}, name, f"{name}=2.5")
            elif kind == "text":
                yield Case(function, {name: 3}, name, f"{name}=3")


def _hand_written() -> Iterator[Case]:
    """What a notebook passes: tables of the wrong shape, boxes, dates, zones, sequences, unknown keywords."""
    bad = Case

    def ok(function: str, keywords: dict[str, Any], label: str) -> Case:
        return Case(function, keywords, None, label)

    # unknown keywords, one per function
    for function in FUNCTIONS:
        yield bad(function, {"epsilonn": 1.0}, "epsilonn", "unknown keyword")
    # numbers a notebook holds: NumPy scalars
    yield ok(
        "fleet.release", {"epsilon_per_day": np.float64(4.0), "resolution": np.int64(7)}, "numpy numbers"
    )
    yield ok("counts.release", {"epsilon": np.float32(1.0), "max_events": np.int64(1)}, "numpy numbers")
    yield ok("survey.randomize", {"epsilon": np.float64(1.0)}, "numpy epsilon")
    yield ok("estimators.release", {"epsilon": np.float64(1.0), "upper": np.int64(10)}, "numpy numbers")
    yield ok("audit.zero_skipping", {"threshold": np.int64(18)}, "numpy threshold")
    yield ok("budget.declare", {"epsilon_total": np.float64(5)}, "numpy cap")
    # dates where text is documented, lists where tuples are
    day = dt.date(2021, 11, 15)
    yield ok("fleet.release", {"start": day, "end": day}, "dates as date")
    yield ok(
        "fleet.release",
        {"start": dt.datetime(2021, 11, 15), "end": "2021-11-15"},
        "start as midnight datetime",
    )
    yield bad(
        "fleet.release", {"start": dt.datetime(2021, 11, 15, 10, 30)}, "start", "start as a datetime at 10:30"
    )
    yield bad("fleet.release", {"start": "2021-13-45"}, "start", "start not a date")
    yield bad("fleet.release", {"start": 20211115}, "start", "start as a number")
    yield ok("fleet.release", {"hours": [6, 22]}, "hours as a list")
    yield ok("fleet.release", {"hours": (6, 22)}, "hours as a tuple")
    yield bad("fleet.release", {"hours": (6, 22, 23)}, "hours", "hours of three")
    yield bad("fleet.release", {"hours": ("six", 22)}, "hours", "hours of a word")
    yield bad("fleet.release", {"hours": 6}, "hours", "hours as one number")
    yield ok("fleet.release", {"domain_bbox": [21.0, 72.7, 21.3, 73.0]}, "domain_bbox as a list")
    yield bad("fleet.release", {"domain_bbox": (21.0, 72.7, 21.3)}, "domain_bbox", "domain_bbox of three")
    yield bad(
        "fleet.release", {"domain_bbox": (21.0, 72.7, 21.3, math.inf)}, "domain_bbox", "domain_bbox inf"
    )
    yield bad(
        "fleet.release", {"domain_bbox": (21.0, 72.7, "x", 73.0)}, "domain_bbox", "domain_bbox of a word"
    )
    yield bad("fleet.release", {"domain_bbox": 21.0}, "domain_bbox", "domain_bbox as a number")
    yield ok("fleet.release", {"queries": ["speed"]}, "queries as a list")
    yield bad("fleet.release", {"queries": [3]}, "queries", "queries of a number")
    yield bad("fleet.release", {"dates": 5}, "dates", "dates as a number")
    yield ok("fleet.release", {"dates": [day]}, "dates as a list of date")
    yield bad("fleet.release", {"dates_file": 5}, "dates_file", "dates_file as a number")
    yield bad("fleet.release", {"domain_gtfs": ["a.zip"]}, "domain_gtfs", "domain_gtfs as a list")
    yield bad("fleet.release", {"speed_unit_since": 5}, "speed_unit_since", "speed_unit_since as a number")
    yield bad("fleet.release", {"columns": ["speed"]}, "columns", "columns as a list")
    yield bad("fleet.release", {"engine": 3}, "engine", "engine as a number")
    yield bad("fleet.release", {"engine": "pandas"}, "engine", "engine unknown")
    yield bad("fleet.release", {"session": "s"}, "session", "session as text")
    yield bad("fleet.release", {"map_inputs": ["x"]}, "map_inputs", "map_inputs as a list")
    yield bad("fleet.release", {"step": "print"}, "step", "step as text")
    yield bad("fleet.release", {"config": 5}, "config", "config as a number")
    yield bad("fleet.release", {"out": 5}, "out", "out as a number")
    # a Series or a bare value where a frame is documented
    yield bad("fleet.release", {"data": FLEET["speed"]}, "data", "a polars Series")
    yield bad("fleet.release", {"data": FLEET.to_pandas()["speed"]}, "data", "a pandas Series")
    yield bad("fleet.release", {"data": 5}, "data", "a number for data")
    yield bad("counts.release", {"data": EVENTS["location"]}, "data", "a Series")
    yield bad("survey.randomize", {"data": VEHICLES["model"]}, "data", "a Series")
    yield bad("estimators.release", {"data": MEANS["v"]}, "data", "a Series")
    yield bad("estimators.release", {"data": 5}, "data", "a number for data")
    yield bad("audit.noise_scale", {"pairs": PAIRS["a"]}, "pairs", "a Series")
    yield bad("audit.zero_skipping", {"table": TABLE["count"]}, "table", "a Series")
    yield bad("audit.differencing", {"marginal": 5}, "marginal", "a number for marginal")
    yield bad("sensing.dp_map", {"data": 5}, "data", "a number for data")
    # time zones: a pandas column of datetimes with a +05:30 offset is read, not refused
    zoned = FLEET.to_pandas()
    zoned["timestamp"] = pd.to_datetime(["2021-11-15 15:30:00+05:30", "2021-11-15 15:30:05+05:30"])
    # instants without the release's zone: the project's rule is to ask for it (hour slots are local hours)
    yield bad("fleet.release", {"data": zoned}, "timezone", "pandas +05:30 timestamps")
    yield ok("fleet.release", {"data": zoned, "timezone": "Asia/Kolkata"}, "pandas +05:30 with its zone")
    yield bad("fleet.release", {"timezone": "Mars/Olympus"}, "timezone", "timezone unknown")
    # the fleet: text for numbers, strings for switches (the issue's own cases)
    yield bad("fleet.release", {"epsilon_per_day": "4"}, "epsilon_per_day", "epsilon_per_day as text")
    yield bad("fleet.release", {"epsilon": 4}, "epsilon", "epsilon (not an option)")
    yield bad(
        "fleet.release", {"max_hats_per_vehicle_day": 2.5}, "max_hats_per_vehicle_day", "K as a fraction"
    )
    yield ok("fleet.release", {"max_hats_per_vehicle_day": np.int64(4)}, "K as a numpy integer")
    yield bad("fleet.release", {"resolution": -1}, "resolution", "negative resolution")
    yield bad("fleet.release", {"epsilon_per_day": -4}, "epsilon_per_day", "negative epsilon_per_day")
    # counts
    yield bad("counts.release", {"domain": 5}, "domain", "domain as a number")
    yield bad("counts.release", {"domain": ["a.json"]}, "domain", "domain as a list")
    yield bad("counts.release", {"column": 5}, "column", "column as a number")
    yield bad("counts.release", {"epsilon": -1.0}, "epsilon", "negative epsilon")
    yield bad("counts.release", {"session": "s"}, "session", "session as text")
    yield ok("counts.release", {"column": {"location": "location"}}, "column as a dict")
    # survey
    yield ok("survey.randomize", {"categories": ["A", "B", "C"]}, "categories as a list")
    yield bad("survey.randomize", {"column": ["model"]}, "column", "column as a list")
    yield ok("survey.randomize", {"survey_date": dt.date(2024, 1, 15)}, "survey_date as a date")
    yield bad("survey.randomize", {"survey_date": "yesterday"}, "survey_date", "survey_date not a date")
    yield bad("survey.randomize", {"session": "s"}, "session", "session as text")
    yield ok("survey.perturb_points", {"bbox": [44, -94, 46, -92]}, "bbox as a list")
    yield bad("survey.perturb_points", {"bbox": (44.0, -94.0, 46.0)}, "bbox", "bbox of three")
    yield bad("survey.perturb_points", {"bbox": (44.0, -94.0, 46.0, math.inf)}, "bbox", "bbox inf")
    yield bad("survey.perturb_points", {"lat": 3}, "lat", "lat as a number")
    # sensing
    yield ok("sensing.pm_map", {"bbox": list(BOX)}, "bbox as a list")
    yield ok("sensing.pm_map", {"start": dt.date(2024, 1, 15), "end": dt.date(2024, 1, 15)}, "dates as date")
    yield bad("sensing.pm_map", {"start": 20240115}, "start", "start as a number")
    yield bad("sensing.dp_map", {"bbox": (22.45, 88.30, 22.65, math.inf)}, "bbox", "bbox inf")
    yield bad("sensing.dp_map", {"bbox": (22.45, 88.30, 22.65)}, "bbox", "bbox of three")
    yield bad("sensing.dp_map", {"bbox": "nowhere"}, "bbox", "bbox a word")
    yield bad("sensing.dp_map", {"utility_epsilons": "1,2"}, "utility_epsilons", "utility_epsilons as text")
    yield bad(
        "sensing.dp_map", {"utility_epsilons": [1.0, "x"]}, "utility_epsilons", "utility_epsilons of a word"
    )
    yield bad("sensing.dp_map", {"session": "s"}, "session", "session as text")
    yield bad("sensing.query", {"rect": (22.5, 88.3)}, "rect", "rect of two")
    yield bad("sensing.query", {"select": "x"}, "select", "select a word")
    # estimators
    yield ok("estimators.release", {"day": dt.date(2024, 1, 15)}, "day as a date")
    yield ok("estimators.release", {"day": "2024-01-15"}, "day as text")
    yield bad(
        "estimators.release", {"day": dt.datetime(2024, 1, 15, 10, 30)}, "day", "day as a datetime at 10:30"
    )
    yield bad("estimators.release", {"day": 20240115}, "day", "day as a number")
    yield bad("estimators.release", {"estimator": "median"}, "estimator", "estimator unknown")
    yield bad("estimators.release", {"session": "s"}, "session", "session as text")
    yield bad("estimators.release", {"out": 5}, "out", "out as a number")
    yield bad("estimators.release", {"upper": -1.0}, "upper", "negative upper")
    yield bad("estimators.release", {"unit_column": "nope"}, "unit_column", "unit_column not a column")
    yield ok(
        "estimators.release", {"estimator": "quantile", "n_candidates": np.int64(8)}, "numpy n_candidates"
    )
    # the auditor
    yield ok("audit.zero_skipping", {"group_sizes": [1, 5]}, "group_sizes as a list")
    yield bad("audit.zero_skipping", {"group_sizes": [1.5]}, "group_sizes", "group_sizes of a fraction")
    yield bad("audit.zero_skipping", {"group_sizes": ["x"]}, "group_sizes", "group_sizes of a word")
    yield bad("audit.zero_skipping", {"group_sizes": 5}, "group_sizes", "group_sizes as a number")
    yield bad("audit.zero_skipping", {"privacy": 5}, "privacy", "privacy as a number")
    yield bad("audit.zero_skipping", {"report": 5}, "report", "report as a number")
    yield bad("audit.pairs", {"route": 5}, "route", "route as a number")
    yield bad("audit.pairs", {"route": [5]}, "route", "route of a number")
    yield ok("audit.pairs", {"route": ["bus:A>B"]}, "route as a list")
    yield bad("audit.pairs", {"out": 5}, "out", "out as a number")
    yield bad("audit.noise_scale", {"model": 3}, "model", "model as a number")
    # the budget
    yield bad("budget.declare", {"store": ["a"]}, "store", "store as a list")
    yield bad("budget.declare", {"dataset": 123}, "dataset", "dataset as a number")
    yield bad("budget.declare", {"unit": "bus"}, "unit", "unit unknown")
    yield bad("budget.declare", {"delta_total": 2.0}, "delta_total", "delta_total above 1")
    yield bad("budget.remaining", {"store": 123}, "store", "store as a number")
    yield bad("budget.remaining", {"dataset": "nope"}, "dataset", "dataset not declared")
    yield bad("budget.history", {"dataset": ["d"]}, "dataset", "dataset as a list")
    # the session
    yield bad("Session", {"noise": "random"}, "noise", "noise as text")
    yield bad("Session", {"store": ["a"]}, "store", "store as a list")
    yield bad("Session", {"store": 123}, "store", "store as a number")
    yield bad("Session", {"dataset": 123}, "dataset", "dataset as a number")
    yield bad("Session", {"dataset": " "}, "dataset", "dataset blank")
    yield bad("Session", {"operator": 5}, "operator", "operator as a number")
    yield ok("Session", {"allow_meaningless_epsilon": np.bool_(True)}, "numpy bool")
    yield ok("Session", {"store": Path("b.sqlite"), "dataset": "d"}, "store as a Path")
    # mpc
    yield bad("mpc.query", {"function": "median"}, "function", "function unknown")
    yield bad("mpc.query", {"rect": (1.0, 2.0)}, "rect", "rect of two")
    yield bad("mpc.query", {"rect": (22.5, 88.32, 22.56, math.nan)}, "rect", "rect nan")
    yield bad("mpc.query", {"cells": "1,2"}, "cells", "cells as text")
    yield bad("mpc.query", {"cells": [1.5]}, "cells", "cells of a fraction")


def all_cases() -> list[Case]:
    seen: dict[str, Case] = {}
    for case in [*_generated(), *_hand_written()]:
        seen.setdefault(case.id, case)
    return list(seen.values())


# --- running a case ---------------------------------------------------------------------------------------------


def outcome(case: Case, inputs: Inputs) -> tuple[str, str]:
    """How the call ended: ``clean`` (the project's error naming the parameter), ``unnamed`` (the project's error
    not naming it), ``accepted``, ``string-as-switch`` (a string accepted for a switch) or ``traceback``
    (any other exception); with the error's text."""
    keywords = dict(case.keywords)
    call = FUNCTIONS[case.function]
    if "data" in keywords or (
        case.function.startswith("audit") and set(keywords) & {"pairs", "table", "marginal"}
    ):
        call = _with_data(case.function, keywords)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(inputs, keywords)
    except UrbandpError as err:
        named = case.parameter is not None and case.parameter in str(err)
        listed = not isinstance(err, InputError) or case.parameter in err.parameters
        return ("clean" if named and listed else "unnamed"), f"{type(err).__name__}: {err}"
    except Exception as err:
        return "traceback", f"{type(err).__name__}: {err}"
    return ("string-as-switch" if case.switch else "accepted"), ""


def _with_data(function: str, keywords: dict[str, Any]) -> Call:
    """The base call with its table (``data``, ``pairs``, ``table``, ``joint``, ``marginal``) replaced."""
    data = keywords.pop("data", None)
    if function == "fleet.release":
        return lambda i, kw: ud.fleet.release(
            data, **{"start": "2021-11-15", "end": "2021-11-15", "epsilon_per_day": 4, **kw}
        )
    if function == "counts.release":
        return lambda i, kw: ud.counts.release(data, **{"domain": DOMAIN, "epsilon": 1.0, **kw})
    if function == "survey.randomize":
        return lambda i, kw: ud.survey.randomize(
            data, **{"column": "model", "categories": "A,B,C", "epsilon": 1.0, **kw}
        )
    if function == "estimators.release":
        return lambda i, kw: ud.estimators.release(
            data, **{"unit_column": "u", "value_column": "v", "epsilon": 1.0, "upper": 10.0, **kw}
        )
    if function == "sensing.dp_map":
        return lambda i, kw: ud.sensing.dp_map(data, **{"bbox": BOX, **DAY, "epsilon": 1.0, **kw})
    if function == "audit.noise_scale":
        return lambda i, kw: ud.audit.noise_scale(kw.pop("pairs"), **kw)
    if function == "audit.zero_skipping":
        return lambda i, kw: ud.audit.zero_skipping(kw.pop("table"), **{"method": "unknown", **kw})
    if function == "audit.differencing":
        return lambda i, kw: ud.audit.differencing(TABLE, kw.pop("marginal"), **{"scale": 1.0, **kw})
    raise AssertionError(function)


def _params() -> list[Any]:
    return [pytest.param(case, id=case.id) for case in all_cases()]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    return _inputs(tmp_path_factory.mktemp("bad-calls"))


def test_the_set_is_large_and_generated() -> None:
    cases = all_cases()
    assert len(cases) >= 160
    assert len([c for c in cases if c.switch]) >= 10
    assert {c.function for c in cases} == set(FUNCTIONS)


@pytest.mark.parametrize("case", _params())
def test_a_bad_call_is_refused_naming_its_parameter_or_accepted(case: Case, inputs: Inputs) -> None:
    ended, text = outcome(case, inputs)
    assert ended == ("accepted" if case.parameter is None else "clean"), text


def _tally(
    tmp: Path,
) -> None:  # pragma: no cover - run by hand: python tests/unit/api/test_bad_python_calls.py
    inputs = _inputs(tmp)
    counts: Counter[str] = Counter()
    for case in all_cases():
        ended, text = outcome(case, inputs)
        expected = "accepted" if case.parameter is None else "clean"
        counts[ended] += 1
        if ended != expected:
            counts["wrong"] += 1
            print(f"{ended:16} {case.id}  {text[:160]}")
    print(dict(counts), "of", len(all_cases()))


if __name__ == "__main__":  # pragma: no cover
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        _tally(Path(folder))
    sys.exit(0)
