"""The typed privacy report of a user-level mean release (:func:`urbandp.estimators.release`): its privacy.json."""

from __future__ import annotations

from pydantic import Field

from urbandp._privacy.report import PrivacyReport


class EstimatorPrivacyReport(PrivacyReport):
    """privacy.json of ``ud.estimators.release``: one user-level mean (Gupta et al., sections III-B to III-E, or
    CLIPPED-MEAN).

    ``epsilon`` is what the release reserves per privacy unit (on ``day``); ``epsilon_spent`` the sum of the
    epsilons that OpenDP's maps give for the calibrated steps (sequential composition, never above ``epsilon``).
    ``n_units``/``n_samples``/``n_arrays`` appear only for the paper's estimators, whose guarantee (Def. II.1)
    treats the units and their counts as public; under CLIPPED-MEAN they are private and stay with the owner.
    """

    estimator: str = Field(description="the estimator as the paper names it (e.g. LEVY, FIXEDQUANTILE)")
    estimator_option: str = Field(description="the estimator keyword given (clipped-mean, baseline, ...)")
    dp_under: str = Field(description="the neighbouring relation under which the estimator is epsilon-DP")
    counts_public: bool = Field(
        description="true when the guarantee treats the units and their counts as public"
    )
    epsilon: float = Field(description="epsilon reserved per privacy unit (pure DP, delta 0)")
    delta: float = Field(0.0, description="delta per privacy unit (0: every step is pure DP)")
    epsilon_spent: float = Field(description="sum of the OpenDP-mapped epsilons of the steps (<= epsilon)")
    upper: float = Field(description="the public upper bound U; values are clipped to [0, U] first")
    noise_scale: float = Field(
        description="scale of the final Laplace step (of the centred sum for CLIPPED-MEAN)"
    )
    sensitivity: float = Field(description="sensitivity of the final Laplace step")
    interval: list[float] = Field(description="the interval the array means were projected to (DP or public)")
    m_ub: int | None = Field(None, description="the per-unit sample bound m_UB (public or DP-selected)")
    steps: list[dict[str, object]] = Field(
        description="each mechanism: name, OpenDP constructor, shares, scale"
    )
    day: str = Field(description="the day the budget store books the release on (ISO date)")
    noise_source: str = Field(description="OpenDP, or the test source (NOT private)")
