"""The typed privacy report of a count release: its privacy.json, with the main figures as typed fields."""

from __future__ import annotations

from pydantic import Field

from urbandp._privacy.report import PrivacyReport


class CountsPrivacyReport(PrivacyReport):
    """privacy.json of ``urbandp counts release`` (and :func:`urbandp.counts._table_release`).

    The joint table's figures are those of its noise plan (:class:`urbandp.counts._accounting.NoisePlan`):
    ``epsilon``/``delta`` per privacy unit for the joint table, ``total_epsilon``/``total_delta`` for every table
    of the release (basic composition, or rho summed then converted once for the Gaussian; Dwork and Roth 2014,
    Thm 3.16; Bun and Steinke 2016, Prop. 1.3). Other entries (ledger, sensitivity, suppression, ...) are kept as
    extra fields.
    """

    method: str = Field(description="urbandp (DP) or data61-2016 (NOT DP, for comparison)")
    mechanism: str | None = Field(None, description="the joint table's noise mechanism")
    noise_scale: float | None = Field(None, description="the joint table's noise scale")
    epsilon: float | None = Field(None, description="epsilon of the joint table per privacy unit")
    delta: float | None = Field(None, description="delta of the joint table per privacy unit")
    rho_zcdp: float | None = Field(None, description="rho of the joint table (Gaussian mechanism)")
    sampling: str | None = Field(None, description="sparse or dense (how the zero cells are noised)")
    marginals: str | None = Field(None, description="how the time and location tables were made")
    suppress_below: float | None = Field(None, description="cells with a noisy value below it are hidden")
    threshold: float | None = Field(None, description="partition selection's or data61-2016's threshold")
    precision: int | None = Field(None, description="decimal places of the released values")
    total_epsilon: float | None = Field(None, description="epsilon of the whole release per privacy unit")
    total_delta: float | None = Field(None, description="delta of the whole release per privacy unit")
    per_card_window: dict[str, object] | None = Field(
        None, description="what one card pays over every day of the domain (unit card-day)"
    )
    spec_sha256: str | None = Field(
        None,
        description="sha256 of the release spec: every option and the public domain's content; not the input "
        "and output paths, the budget store or the engine (same hash: same parameters)",
    )
