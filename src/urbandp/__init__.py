"""urbandp: differentially private release of urban mobility and sensor data.

The public API is what ``urbandp`` and its wings list in ``__all__``: the release functions of
:mod:`urbandp.fleet`, :mod:`urbandp.counts`, :mod:`urbandp.survey` and :mod:`urbandp.sensing`,
:mod:`urbandp.estimators`' mean estimators, :mod:`urbandp.audit`'s attacks on published tables,
:mod:`urbandp.budget`'s budget store, :class:`Session`, the errors and the result types. Every other module is
``_``-prefixed: internal, free to change. A budget declared once, two releases, the second refused before any
noise is drawn:

```pycon
>>> import tempfile, pathlib
>>> import polars as pl
>>> import urbandp as ud
>>> store = str(pathlib.Path(tempfile.mkdtemp()) / "budget.sqlite")
>>> caps = ud.budget.declare(store, "survey-2024", unit="respondent", epsilon_total=1.5)
>>> df = pl.DataFrame({"fuel": ["gas", "diesel", "gas", "electric"] * 5})
>>> with ud.Session(store=store, dataset="survey-2024") as s:
...     rel = ud.survey.randomize(df, column="fuel", categories="gas,diesel,electric", epsilon=1,
...                               survey_date="2024-05-01", session=s)
...     ud.survey.randomize(df, column="fuel", categories="gas,diesel,electric", epsilon=1,
...                         survey_date="2024-05-01", session=s)
Traceback (most recent call last):
...
urbandp.errors.BudgetExceededError: total privacy budget of 'survey-2024' exceeded: asked epsilon=1 over 1 day, left 0.5 of 1.5
>>> rel
SurveyRelease(DP, randomized: 20 rows, 0 warning(s))

```

``rel.table`` is the published table (Polars; ``.to_pandas()``), ``rel.privacy`` the typed privacy report
(``rel.privacy.to_json()`` is privacy.json), ``rel.write("out/rel")`` writes the release folder. Names are
imported on first use, so that ``import urbandp`` (and the command line) stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from urbandp._version import __version__

if TYPE_CHECKING:
    from urbandp import audit, budget, counts, estimators, fleet, mpc, sensing, survey
    from urbandp._privacy.report import PrivacyReport
    from urbandp._session import Session
    from urbandp.errors import (
        Advice,
        BudgetExceededError,
        InputDataError,
        InputError,
        InvalidParameterError,
        UrbandpError,
    )
    from urbandp.results import OwnerWarning, Release, ReleaseWarning

_HOME = {
    "Advice": "urbandp.errors",
    "Session": "urbandp._session",
    "BudgetExceededError": "urbandp.errors",
    "InputDataError": "urbandp.errors",
    "InputError": "urbandp.errors",
    "InvalidParameterError": "urbandp.errors",
    "UrbandpError": "urbandp.errors",
    "PrivacyReport": "urbandp._privacy.report",
    "Release": "urbandp.results",
    "ReleaseWarning": "urbandp.results",
    "OwnerWarning": "urbandp.results",
}
_WINGS = ("fleet", "counts", "survey", "sensing", "estimators", "audit", "budget", "mpc")

__all__ = [
    "Advice",
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
    "mpc",
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
