"""The typed privacy reports of the survey releases: one class per command, on the shared
:class:`~urbandp._privacy.report.PrivacyReport` header.

Every field is public: the declared parameters, the epsilon computed from them (report eqs. 5, 13, 16; Andres et al.
2013 for the planar Laplace) and the user's declaration of public columns. Nothing read from the true data is a
field here (the figures of the owner's ``input_report.json`` stay out), so two neighbouring inputs give
the same ``privacy.json``.
"""

from __future__ import annotations

from pydantic import Field

from urbandp._privacy.report import PrivacyReport


class SurveyPrivacyReport(PrivacyReport):
    """What every survey release states: the command, its epsilon (None when not DP), its owner-only files."""

    command: str = Field(description="the command line (or Python call) that made the release")
    epsilon: float | None = Field(None, description="epsilon per privacy unit (None: not DP)")
    public_columns: dict[str, object] | None = Field(
        None,
        description="columns the user declared public (copied unchanged), with the option that named them",
    )
    ledger: dict[str, object] | None = Field(
        None, description="this release's ledger entry and the run's cap"
    )
    not_dp_outputs: list[str] = Field(
        default_factory=list, description="owner-only files beside the release (never published)"
    )
    spec_sha256: str | None = Field(
        None,
        description="sha256 of the release spec: every option, a file option (categories, aliases, blocks) by "
        "its content; not the command line, the input and output paths, the budget store or the survey date "
        "(same hash: same parameters)",
    )


class RandomizePrivacyReport(SurveyPrivacyReport):
    """``survey randomize``: k-ary or binary randomized response (report sections 3.3, 4.1; eq. 5)."""

    column: str = Field(description="the randomized column")
    within: str | None = Field(None, description="the public sub-category column, if any")
    declared_categories: dict[str, list[str]] = Field(description="the declared lists, by sub-category")
    mechanism: str
    epsilon_is_dp: bool = Field(description="false for the report's NOT DP report-replacement method")
    sampler: str = Field(description="the random source (opendp-bitvec, os-csprng)")
    detail: dict[str, object] = Field(default_factory=dict)


class PointsPrivacyReport(SurveyPrivacyReport):
    """``survey perturb-points``: planar Laplace (Andres et al. 2013) or per-axis Laplace (report eq. 14).

    Its guarantee is geo-indistinguishability, in its own unit (epsilon per metre of distance), not differential
    privacy: ``differentially_private`` is false and ``epsilon`` is None; it is never booked in a budget store."""

    mechanism: str
    guarantee: str = Field(description="the guarantee in words: geo-indistinguishability, epsilon per metre")
    epsilon_per_metre: float
    metric: str
    epsilon_at_1km: float
    epsilon_at_budget_metres: float = Field(
        description="epsilon_per_metre x budget_metres: what budget_epsilon caps (not a DP epsilon)"
    )
    budget_metres: float
    scale_metres: float | None = None
    bbox: dict[str, object] | None = None
    rounding_degrees: float


class OdPrivacyReport(SurveyPrivacyReport):
    """``survey od-randomize``: OD randomized response (report eq. 13) or section 6.3 (NOT DP)."""

    mechanism: str
    blocks: int
    od_pairs: int
    keep_probability: float
    epsilon_per_trip: float | None = Field(
        None, description="report eq. (13): the loss of one trip (None: not DP)"
    )
    epsilon_per_person: float | None = Field(
        None,
        description="basic composition of epsilon_per_trip over max_trips_per_person (None: unbounded, or not DP)",
    )
    max_trips_per_person: int | None = Field(
        None, description="the public bound on the trips released per person (None: no bound)"
    )
    person_column: str | None = Field(None, description="the column naming each trip's person")


class TrajectoriesPrivacyReport(SurveyPrivacyReport):
    """``survey perturb-trajectories``: SSD (Jiang et al. 2013; report section 6.1, eq. 16); NOT DP as a whole."""

    mechanism: str
    ssd_parameter_epsilon: float
    max_step_metres: float
    epsilon_per_point: float
    epsilon_per_trip: str
    every: int
    epsilon_per_person: str | None = Field(
        None, description="the per-person statement (see max_trips_per_person)"
    )
    max_trips_per_person: int | None = Field(
        None, description="the public bound on the trips kept per person"
    )
    person_column: str | None = Field(None, description="the column naming each trip's person")


SPEC_HASH_LEAVES_OUT = ("command",)
"""A survey spec's field that cannot change the release: the command line (it names the input and the output)."""


def spec_sha256(spec: object) -> str:
    """privacy.json's ``spec_sha256`` of a survey release made with ``spec`` (``RandomizeSpec``,
    ``PointsSpec``, ``OdSpec``, ``TrajectoriesSpec``): its options but the command line
    (:func:`urbandp._provenance.spec_sha256`), a declared ``--bbox`` as its checked numbers (``"22.5,..."`` and
    ``(22.5, ...)`` hash alike). The survey date and the budget store are not options of the spec."""
    from urbandp._provenance import spec_fields
    from urbandp._provenance import spec_sha256 as hashed

    fields = spec_fields(spec, leave_out=SPEC_HASH_LEAVES_OUT)
    box = getattr(spec, "box", None)
    if callable(box):
        fields["bbox"] = box()
    name = type(spec).__name__.removesuffix("Spec").lower()
    return hashed(f"survey {name}", fields)


def ledger(budget: float | None, name: str, epsilon: float, unit: str, mechanism: str) -> dict[str, object]:
    """privacy.json's ledger: the one entry of this release (the cap was checked by the charge, before noise)."""
    from urbandp._privacy.ledger import LedgerEntry, PrivacyLedger

    book = PrivacyLedger()
    book.entries.append(
        LedgerEntry(name=name, epsilon=epsilon, unit=unit, neighbouring="replace-one", mechanism=mechanism)
    )
    return {**book.to_dict(), "budget_epsilon": budget}
