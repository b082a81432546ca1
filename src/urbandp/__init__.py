"""urbandp: differentially private release of urban mobility and sensor data.

The public Python API::

    import urbandp as ud
    ud.budget.declare("budget.sqlite", "austin", unit="vehicle-day", epsilon_total=40)
    with ud.Session(store="budget.sqlite", dataset="austin") as s:
        rel = ud.fleet.release(df, start="2017-04-18", end="2017-04-18", epsilon_per_day=4, session=s)
    rel.table, rel.privacy.to_json(), rel.write("out/rel")

Wings: :mod:`urbandp.fleet` (fleet GPS -> DP speeds per hexagon and time slot), :mod:`urbandp.counts` (count
tables), :mod:`urbandp.survey` (travel surveys), :mod:`urbandp.sensing` (sensor fleets), :mod:`urbandp.estimators`
(user-level mean estimators), :mod:`urbandp.audit` (attacks on published tables). Names are imported on first use,
so that ``import urbandp`` (and the command line) stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from urbandp._version import __version__

if TYPE_CHECKING:
    from urbandp import audit, budget, counts, estimators, fleet, sensing, survey
    from urbandp.errors import (
        BudgetExceededError,
        InputDataError,
        InputError,
        InvalidParameterError,
        UrbandpError,
    )
    from urbandp.privacy.report import PrivacyReport
    from urbandp.results import OwnerWarning, Release, ReleaseWarning
    from urbandp.session import Session

_HOME = {
    "Session": "urbandp.session",
    "BudgetExceededError": "urbandp.errors",
    "InputDataError": "urbandp.errors",
    "InputError": "urbandp.errors",
    "InvalidParameterError": "urbandp.errors",
    "UrbandpError": "urbandp.errors",
    "PrivacyReport": "urbandp.privacy.report",
    "Release": "urbandp.results",
    "ReleaseWarning": "urbandp.results",
    "OwnerWarning": "urbandp.results",
}
_WINGS = ("fleet", "counts", "survey", "sensing", "estimators", "audit", "budget")

__all__ = [
    "BudgetExceededError",
    "InputDataError",
    "InputError",
    "InvalidParameterError",
    "OwnerWarning",
    "PrivacyReport",
    "Release",
    "ReleaseWarning",
    "Session",
    "UrbandpError",
    "__version__",
    "audit",
    "budget",
    "counts",
    "estimators",
    "fleet",
    "sensing",
    "survey",
]


def __getattr__(name: str) -> Any:
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name]), name)
    elif name in _WINGS:
        value = importlib.import_module(f"urbandp.{name}")
    else:
        raise AttributeError(f"module 'urbandp' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
