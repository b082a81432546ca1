"""Sensor fleets: GP interpolation, DP variance maps, DP PM2.5 maps, aggregate queries with error propagation.

The public API (issue 31; :mod:`urbandp.sensing.api`): :func:`dp_map`, :func:`pm_map` and :func:`query` are
releases (a charge of :class:`urbandp.Session`, the guards before any noise); :func:`interpolate` is NOT a
release, the data owner's tool. Names are imported on first use (PEP 562), so that ``urbandp sensing --help``
stays fast.

Three public functions share their names with submodules (:mod:`urbandp.sensing.dp_map`, ``pm_map`` and
``interpolate`` hold the mechanisms): importing a submodule binds it as an attribute of this package, which would
hide the function. The package's module class therefore answers these three names with the API functions (a data
descriptor wins over the module's own attributes); the submodules stay importable by their full names
(``from urbandp.sensing.pm_map import plan_pm_map``).
"""

from __future__ import annotations

import importlib
import sys
import types
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


_SHADOWED = ("dp_map", "pm_map", "interpolate")


def _api_function(name: str) -> property:
    def get(module: types.ModuleType) -> Any:
        return getattr(importlib.import_module("urbandp.sensing.api"), name)

    def bind_submodule(module: types.ModuleType, value: Any) -> None:
        module.__dict__[name] = value  # the import system binds the submodule; the function still answers

    return property(get, bind_submodule)


class _SensingPackage(types.ModuleType):
    """The package, with ``dp_map``, ``pm_map`` and ``interpolate`` answered by the API functions."""


for _name in _SHADOWED:
    setattr(_SensingPackage, _name, _api_function(_name))
sys.modules[__name__].__class__ = _SensingPackage
