"""The options of one count release, checked together before any data is read (``urbandp counts release``,
``urbandp.counts.release``).

The defaults are declared by the entry points (the Python keywords of :func:`urbandp.counts.api.release` and the
flags of ``urbandp counts release``; a test holds them equal); the validation is declared once, here and in
:class:`urbandp.counts.table_release.CountReleaseConfig`. Messages name each option by its Python keyword and
list it in the error's ``parameters``; the command line prints its flag instead (issue 31). The delta limit is
the shared guard's (:func:`urbandp.privacy.guards.check_delta`), which names the flag itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from urbandp.counts.domain import CountDomain
from urbandp.counts.table_release import CountReleaseConfig
from urbandp.counts.units import PrivacyUnit
from urbandp.errors import InvalidParameterError
from urbandp.privacy.guards import check_delta
from urbandp.privacy.loss import Loss

DomainLike = str | Path | CountDomain | dict[str, object] | None
"""A public domain: a JSON file, a :class:`CountDomain`, or its JSON object; None with ``select_partitions``."""

SPEC_HASH_LEAVES_OUT = ("engine", "spark_master")
"""Options that cannot change a count release (Polars and Spark compute the same table): not in its hash."""


@dataclass(frozen=True)
class CountsReleaseSpec:
    """Every option of a count release (see ``urbandp counts release --help`` for each one's meaning)."""

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> CountsReleaseSpec:
        """The spec from a mapping holding (at least) every field by name: the API's keywords, the CLI's flags."""
        return cls(**{f.name: options[f.name] for f in fields(cls)})  # type: ignore[arg-type]

    domain: DomainLike
    select_partitions: bool
    input_kind: str
    unit: str
    max_events: int
    max_per_cell: int
    method: str
    mechanism: str
    epsilon: float | None
    delta: float
    noise_scale: float | None
    suppress_below: float | None
    threshold: float
    precision: int
    consistent: bool
    top_k: int | None
    top_k_epsilon: float | None
    top_k_tap: str | None
    format: str
    sampling: str
    marginals: str
    marginal_epsilon: float | None
    marginal_scale: float | None
    budget_epsilon: float | None
    budget_delta: float
    engine: str
    spark_master: str | None

    def __post_init__(self) -> None:
        if self.domain is not None and self.select_partitions:
            raise InvalidParameterError(
                "give domain (a public list of cells) or select_partitions (cells chosen with DP), not both",
                parameters=("domain", "select_partitions"),
            )
        if self.input_kind not in ("events", "counts"):
            raise InvalidParameterError(
                f"input_kind must be events or counts, got {self.input_kind!r}", parameters="input_kind"
            )
        if self.format not in ("csv", "parquet"):
            raise InvalidParameterError(
                f"format must be csv or parquet, got {self.format!r}", parameters="format"
            )
        self.privacy_unit()  # the unit's own checks, in the order the command line always made them
        if self.budget_epsilon is not None and not self.budget_epsilon > 0:
            raise InvalidParameterError(
                f"budget_epsilon must be a number above 0, got {self.budget_epsilon:g}",
                parameters="budget_epsilon",
            )
        check_delta(self.delta, "delta")
        if self.epsilon is None and self.noise_scale is None:
            raise InvalidParameterError("give epsilon or noise_scale", parameters=("epsilon", "noise_scale"))
        if self.epsilon is not None and self.noise_scale is not None:
            raise InvalidParameterError(
                "give only one of epsilon and noise_scale (the other is computed)",
                parameters=("epsilon", "noise_scale"),
            )
        self.config()

    def privacy_unit(self) -> PrivacyUnit:
        """The privacy unit; counts given pre-aggregated declare their bounding, events are truncated here."""
        bounding = "declared" if self.input_kind == "counts" else "truncation"
        return PrivacyUnit(self.unit, self.max_events, self.max_per_cell, bounding=bounding)

    def config(self) -> CountReleaseConfig:
        """The release's mechanism description (validated on construction)."""
        return CountReleaseConfig(
            method=self.method,
            mechanism=self.mechanism,
            epsilon=self.epsilon,
            delta=self.delta,
            noise_scale=self.noise_scale,
            unit=self.privacy_unit(),
            suppress_below=self.suppress_below,
            precision=self.precision,
            consistent=self.consistent,
            top_k=self.top_k,
            top_k_epsilon=self.top_k_epsilon,
            top_k_tap=self.top_k_tap,
            data61_threshold=self.threshold,
            sampling=self.sampling,
            marginals=self.marginals,
            marginal_epsilon=self.marginal_epsilon,
            marginal_scale=self.marginal_scale,
        )

    def cap(self) -> Loss | None:
        """The run's own cap (``--budget-epsilon``, ``--budget-delta``), or None."""
        return None if self.budget_epsilon is None else Loss.approx_dp(self.budget_epsilon, self.budget_delta)

    def sha256(self, domain: CountDomain | None) -> str:
        """privacy.json's ``spec_sha256`` (issue 32): every option, the public ``domain`` by its content (never
        the file's path), less the engine that computes the same release (``engine``, ``spark_master``)."""
        from urbandp.provenance import spec_fields, spec_sha256

        fields = spec_fields(self, leave_out=SPEC_HASH_LEAVES_OUT)
        return spec_sha256(
            "counts release", {**fields, "domain": None if domain is None else domain.to_json()}
        )

    def domain_path(self) -> Path | None:
        """The domain's file, when it was given as one (an input of the run: never overwritten)."""
        return Path(self.domain) if isinstance(self.domain, (str, Path)) else None

    def load_domain(self) -> CountDomain:
        """The public domain (from its file, object or JSON object)."""
        if isinstance(self.domain, CountDomain):
            return self.domain
        if isinstance(self.domain, dict):
            return CountDomain.from_json(self.domain)
        assert self.domain is not None
        return CountDomain.from_file(Path(self.domain))
