"""User-level private mean estimators (Gupta et al., *Mean Estimation with User-Level Privacy for
Spatio-Temporal IoT Datasets*): BASELINE, ARRAY-AVERAGING, LEVY, QUANTILE, and CLIPPED-MEAN
(our counts-private alternative, DP under add/remove-one-unit).

:func:`release` releases one mean with a :class:`urbandp.Session` (the store's budget, the guards, the record);
one mean per HAT goes through the fleet (``ud.fleet.release(..., speed_estimator="clipped-mean")``):

```pycon
>>> import polars as pl
>>> import urbandp as ud
>>> df = pl.DataFrame({"vehicle_id": [1, 1, 2, 2, 3, 3, 4, 4] * 3,
...                    "speed": [30.0, 40, 50, 20, 35, 45, 25, 55] * 3})
>>> rel = ud.estimators.release(df, unit_column="vehicle_id", value_column="speed", upper=65, epsilon=1,
...                             day="2015-03-18")
>>> rel.privacy.estimator, rel.privacy.epsilon, rel.privacy.interval
('CLIPPED-MEAN', 1.0, [0.0, 65.0])

```

The estimators' classes (:class:`ArrayAveraging`, :class:`Baseline`, :class:`ClippedMean`, :class:`Levy`,
:class:`Quantile`) are building blocks: ``estimate(values, epsilon=..., noise=...)`` draws from the noise source
it is given (:class:`OpenDPNoise`: OpenDP's samplers) and records what it spent (``MeanEstimate.steps``), but
reserves no budget and runs no guard. Passing the noise of a Session's charge by hand would draw without
reserving: do not.

Guarantees: docs/estimators.md. :func:`release` and its types are exported lazily (they import polars); every
other module here is internal.
"""

from typing import TYPE_CHECKING

from urbandp._lazy import lazy_names as _lazy_names
from urbandp._privacy.noise import OpenDPNoise
from urbandp.estimators._bounds import choose_m_ub, eq1_argmax, paper_median
from urbandp.estimators._core import (
    ADD_REMOVE,
    ESTIMATORS,
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
from urbandp.estimators._grouping import GroupingPlan, bestfit, wraparound

if TYPE_CHECKING:
    from urbandp.estimators._api import (
        EstimatorRelease,
        EstimatorReleaseSpec,
        release,
        release_spec,
    )
    from urbandp.estimators._hat_means import build_estimator
    from urbandp.estimators._report import EstimatorPrivacyReport

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
    "OpenDPNoise",
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

_HOME = {
    "build_estimator": "urbandp.estimators._hat_means",
    "EstimatorRelease": "urbandp.estimators._api",
    "EstimatorReleaseSpec": "urbandp.estimators._api",
    "release": "urbandp.estimators._api",
    "release_spec": "urbandp.estimators._api",
    "EstimatorPrivacyReport": "urbandp.estimators._report",
}


__getattr__, __dir__ = _lazy_names(__name__, _HOME, __all__)
