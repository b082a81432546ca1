"""Travel-survey privacy toolkit (report: "Differential privacy in travel data", MPI 2021).

Public API (:mod:`urbandp.survey.api`): :func:`randomize`, :func:`estimate`, :func:`perturb_points`,
:func:`perturb_trajectories`, :func:`od_randomize`, :func:`od_estimate`, each returning a :class:`SurveyRelease`
(``estimate``, ``od_estimate``: a table).
The names are imported on first use (PEP 562), so that ``urbandp survey --help`` stays fast.

Modules: :mod:`randomized_response` (binary / k-ary RR, the report's sub-category replacement, de-biasing),
:mod:`categorical` (declared lists, aliases, quarantine), :mod:`locations` (per-axis and planar Laplace),
:mod:`escape` (simulation of block escape, not a release), :mod:`trips` (OD randomized response, section 6.3),
:mod:`ssd` (trajectory perturbation), :mod:`sampling` (exact column-wide random sources), :mod:`synth`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from urbandp.survey.api import (
        SurveyRelease,
        estimate,
        od_estimate,
        od_randomize,
        perturb_points,
        perturb_trajectories,
        randomize,
    )
    from urbandp.survey.report import SurveyPrivacyReport

__all__ = [
    "SurveyPrivacyReport",
    "SurveyRelease",
    "estimate",
    "od_estimate",
    "od_randomize",
    "perturb_points",
    "perturb_trajectories",
    "randomize",
]


def __getattr__(name: str) -> Any:
    if name == "SurveyPrivacyReport":
        return importlib.import_module("urbandp.survey.report").SurveyPrivacyReport
    if name in __all__:
        return getattr(importlib.import_module("urbandp.survey.api"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
