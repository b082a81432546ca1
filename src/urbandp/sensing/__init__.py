"""Sensor fleets: GP interpolation, DP variance maps, DP PM2.5 maps, aggregate queries with error propagation.

The public API (:mod:`urbandp.sensing.api`): :func:`dp_map`, :func:`pm_map` and :func:`query` are
releases (a charge of :class:`urbandp.Session`, the guards before any noise); :func:`interpolate` is NOT a
release, the data owner's tool. Names are imported on first use (PEP 562), so that ``urbandp sensing --help``
stays fast.

The mechanisms live in :mod:`urbandp.sensing.dp_map_mechanism`, :mod:`urbandp.sensing.pm_map_mechanism` and
:mod:`urbandp.sensing.interpolation` (named apart from the functions, so that importing one never hides a function).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from urbandp.sensing.api import dp_map, interpolate, pm_map, query
    from urbandp.sensing.dp_map_release import DpMapResult
    from urbandp.sensing.interpolate_tool import Interpolation
    from urbandp.sensing.pm_map_release import PmMapResult
    from urbandp.sensing.query_release import QueryAnswer
    from urbandp.sensing.report import DpMapPrivacyReport, PmMapPrivacyReport, QueryPrivacyReport

__all__ = [
    "DpMapPrivacyReport",
    "DpMapResult",
    "Interpolation",
    "PmMapPrivacyReport",
    "PmMapResult",
    "QueryAnswer",
    "QueryPrivacyReport",
    "dp_map",
    "interpolate",
    "pm_map",
    "query",
]

_HOME = {
    "dp_map": "urbandp.sensing.api",
    "pm_map": "urbandp.sensing.api",
    "query": "urbandp.sensing.api",
    "interpolate": "urbandp.sensing.api",
    "DpMapResult": "urbandp.sensing.dp_map_release",
    "PmMapResult": "urbandp.sensing.pm_map_release",
    "QueryAnswer": "urbandp.sensing.query_release",
    "Interpolation": "urbandp.sensing.interpolate_tool",
    "DpMapPrivacyReport": "urbandp.sensing.report",
    "PmMapPrivacyReport": "urbandp.sensing.report",
    "QueryPrivacyReport": "urbandp.sensing.report",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
