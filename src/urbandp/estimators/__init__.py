"""User-level private mean estimators (Gupta et al., *Mean Estimation with User-Level Privacy for
Spatio-Temporal IoT Datasets*): BASELINE, ARRAY-AVERAGING, LEVY, QUANTILE, and CLIPPED-MEAN
(our counts-private alternative, DP under add/remove-one-unit).

>>> from urbandp.estimators import ArrayAveraging
>>> from urbandp.privacy.noise import OpenDPNoise
>>> est = ArrayAveraging(upper=65.0, grouping="bestfit", m_ub="median")
>>> result = est.estimate(values_per_unit, epsilon=1.0, noise=OpenDPNoise())  # doctest: +SKIP

These are building blocks: ``estimate(values, epsilon=..., noise=...)`` draws from the noise source it is given
and records what it spent (``MeanEstimate.steps``), but reserves no budget and runs no guard. A release, with a
:class:`urbandp.Session` (the store's budget, the guards, the record), goes through the fleet wing::

    import urbandp as ud
    with ud.Session(store="budget.sqlite", dataset="austin") as s:
        rel = ud.fleet.release(df, ..., speed_estimator="clipped-mean", session=s)  # doctest: +SKIP

Passing ``noise=charge.noise`` of a Session's charge by hand would draw without reserving: do not.
:func:`estimate_hat_means` (one mean per HAT, what the release calls) is exported lazily (it imports polars).

Guarantee of the paper's four: Def. II.1 (replace one unit's values; units and counts fixed and public);
CLIPPED-MEAN: add/remove-one-unit. See
:mod:`urbandp.estimators.core` and docs/estimators.md. The Monte Carlo simulation lives in
:mod:`urbandp.experiments` and is never imported from here.
"""

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from urbandp.estimators.hat import ESTIMATORS, build_estimator, estimate_hat_means

__all__ = [
    "ADD_REMOVE",
    "ESTIMATORS",
    "NEIGHBOURING",
    "ArrayAveraging",
    "Baseline",
    "ClippedMean",
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
    "estimate_hat_means",
    "paper_median",
    "wraparound",
]

_LAZY = {"ESTIMATORS", "build_estimator", "estimate_hat_means"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module("urbandp.estimators.hat"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(globals()))
