"""Travel-survey privacy toolkit (report: "Differential privacy in travel data", MPI 2021).

The releases :func:`randomize` (randomized response on one column), :func:`perturb_points` (per-axis or planar
Laplace on locations), :func:`perturb_trajectories` and :func:`od_randomize` (origin-destination trips, section
6.3) each return a :class:`SurveyRelease`; :func:`estimate` and :func:`od_estimate` de-bias a randomized table
(post-processing: no budget).

```pycon
>>> import polars as pl
>>> import urbandp as ud
>>> df = pl.DataFrame({"fuel": ["gas", "diesel", "gas", "electric"] * 5})
>>> rel = ud.survey.randomize(df, column="fuel", categories="gas,diesel,electric", epsilon=1)
>>> rel
SurveyRelease(DP, randomized: 20 rows, 0 warning(s))
>>> round(rel.privacy.epsilon, 9)
1.0
>>> sorted(set(rel.table["fuel"]) - {"gas", "diesel", "electric"})
[]

```

The names are imported on first use (PEP 562), so that ``urbandp survey --help`` stays fast. Every other module
here is internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from urbandp._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from urbandp.survey._api import (
        estimate,
        od_estimate,
        od_randomize,
        perturb_points,
        perturb_trajectories,
        randomize,
    )
    from urbandp.survey._report import SurveyPrivacyReport
    from urbandp.survey._result import SurveyRelease

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


# Each public name's module: the list above is the only one (the modules themselves are internal).
_HOME = {name: "urbandp.survey._api" for name in __all__}
_HOME["SurveyPrivacyReport"] = "urbandp.survey._report"
_HOME["SurveyRelease"] = "urbandp.survey._result"


__getattr__, __dir__ = _lazy_names(__name__, _HOME, __all__)
