"""User-level private mean estimators (Gupta et al., *Mean Estimation with User-Level Privacy for
Spatio-Temporal IoT Datasets*): BASELINE, ARRAY-AVERAGING, LEVY, QUANTILE, and CLIPPED-MEAN
(our counts-private alternative, DP under add/remove-one-unit).

>>> from urbandp.estimators import ArrayAveraging
>>> from urbandp.privacy.noise import OpenDPNoise
>>> est = ArrayAveraging(upper=65.0, grouping="bestfit", m_ub="median")
>>> result = est.estimate(values_per_unit, epsilon=1.0, noise=OpenDPNoise())  # doctest: +SKIP

These are building blocks: ``estimate(values, epsilon=..., noise=...)`` draws from the noise source it is given
and records what it spent (``MeanEstimate.steps``), but reserves no budget and runs no guard. A release, with a
:class:`urbandp.Session` (the store's budget, the guards, the record) goes through :func:`release` (one mean)
or the fleet wing (one mean per HAT)::

    import urbandp as ud
    with ud.Session(store="budget.sqlite", dataset="austin") as s:
        rel = ud.estimators.release(df, unit_column="vehicle_id", value_column="speed", upper=65, epsilon=1,
                                    day="2015-03-18", session=s)  # doctest: +SKIP
        rel = ud.fleet.release(df, ..., speed_estimator="clipped-mean", session=s)  # doctest: +SKIP

Passing ``noise=charge.noise`` of a Session's charge by hand would draw without reserving: do not.
:func:`release` and its types are exported lazily (they import polars). One mean per HAT
(``urbandp.estimators.hat``) is not exported: it draws a table of means with no guard, and the fleet runs it
inside its charge (``ud.fleet.release(..., speed_estimator=...)``).

Guarantee of the paper's four: Def. II.1 (replace one unit's values; units and counts fixed and public);
CLIPPED-MEAN: add/remove-one-unit. See
:mod:`urbandp.estimators.core` and docs/estimators.md. The Monte Carlo simulation lives in
:mod:`urbandp.experiments` and is never imported from here.
"""

from typing import TYPE_CHECKING

from urbandp.estimators.bounds import choose_m_ub, eq1_argmax, paper_median
from urbandp.estimators.core import (
    ADD_REMOVE,
    NEIGHBOURING,
    ArrayAveraging,
    Baseline,
    ClippedMean,
    Levy,
    MeanEstimate,
    PrivacyCost,
    PrivacyStep,
    Quantile,
)
from urbandp.estimators.grouping import GroupingPlan, bestfit, wraparound
from urbandp.lazy import lazy_names

if TYPE_CHECKING:
    from urbandp.estimators.api import (
        EstimatorRelease,
        EstimatorReleaseSpec,
        release,
        release_spec,
    )
    from urbandp.estimators.hat import ESTIMATORS, build_estimator
    from urbandp.estimators.report import EstimatorPrivacyReport

__all__ = [
    "ADD_REMOVE",
    "ESTIMATORS",
    "NEIGHBOURING",
    "ArrayAveraging",
    "Baseline",
    "ClippedMean",
    "EstimatorPrivacyReport",
    "EstimatorRelease",
    "EstimatorReleaseSpec",
    "GroupingPlan",
    "Levy",
    "MeanEstimate",
    "PrivacyCost",
    "PrivacyStep",
    "Quantile",
    "bestfit",
    "build_estimator",
    "choose_m_ub",
    "eq1_argmax",
    "paper_median",
    "release",
    "release_spec",
    "wraparound",
]

_LAZY = {
    "ESTIMATORS": "hat",
    "build_estimator": "hat",
    "EstimatorRelease": "api",
    "EstimatorReleaseSpec": "api",
    "release": "api",
    "release_spec": "api",
    "EstimatorPrivacyReport": "report",
}


__getattr__, __dir__ = lazy_names(
    __name__, {name: f"urbandp.estimators.{module}" for name, module in _LAZY.items()}, __all__
)
