"""The fleet release's typed privacy report (privacy.json), on the shared :class:`PrivacyReport` header.

The figures a reader checks first are typed fields; the rest of the document (the methodology's wording, the
ledger, the selection's parameters) stays as extra fields, written as they are.
"""

from __future__ import annotations

from pydantic import Field

from urbandp._privacy.report import PrivacyReport


class FleetPrivacyReport(PrivacyReport):
    """privacy.json of ``urbandp release`` / :func:`urbandp.fleet.release`: the loss per vehicle-day and window."""

    mechanism: str = Field(description="gaussian (zCDP) or laplace (pure DP)")
    epsilon_per_day: dict[str, float | None] = Field(
        description="epsilon per vehicle-day of each query alone (rho converted at conversion_delta)"
    )
    cumulative_epsilon_per_day: float | None = Field(
        description="epsilon per vehicle-day of the whole release (summed rho converted once)"
    )
    delta_per_day: float | None = Field(description="delta per vehicle-day")
    days: int = Field(description="D: the public days of the window")
    epsilon_per_window: float | None = Field(description="epsilon of a vehicle present on all D days")
    delta_per_window: float | None = Field(description="delta of a vehicle present on all D days")
    rho_per_window: float | None = Field(None, description="zCDP rho over the window (Gaussian releases)")
    conversion_delta: float | None = Field(None, description="delta at which rho is stated as epsilon")
    hats_released: int = Field(description="HATs released (a DP output: decided by noisy counts)")
    max_hats_per_vehicle_day: int | str = Field(description="K, the public bound enforced by truncation")
    resolution: int = Field(description="H3 resolution of the cells")
    spec_sha256: str | None = Field(
        None, description="sha256 of the release spec (options, input reading, columns)"
    )
