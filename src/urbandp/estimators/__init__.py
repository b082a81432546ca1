"""User-level private mean estimators (Gupta et al., *Mean Estimation with User-Level Privacy for
Spatio-Temporal IoT Datasets*): BASELINE, ARRAY-AVERAGING, LEVY, QUANTILE, and CLIPPED-MEAN
(our counts-private alternative, DP under add/remove-one-unit).

>>> from urbandp.estimators import ArrayAveraging
>>> from urbandp.privacy.noise import OpenDPNoise
>>> est = ArrayAveraging(upper=65.0, grouping="bestfit", m_ub="median")
>>> result = est.estimate(values_per_unit, epsilon=1.0, noise=OpenDPNoise())  # doctest: +SKIP

Guarantee of the paper's four: Def. II.1 (replace one unit's values; units and counts fixed and public);
CLIPPED-MEAN: add/remove-one-unit. See
:mod:`urbandp.estimators.core` and docs/estimators.md. The Monte Carlo simulation lives in
:mod:`urbandp.experiments` and is never imported from here.
"""

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

__all__ = [
    "ADD_REMOVE",
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
    "choose_m_ub",
    "eq1_argmax",
    "paper_median",
    "wraparound",
]
