"""The options of one count release, checked together before any data is read (``urbandp counts release``,
``urbandp.counts.release``): each option's type and bounds by its field, the options together by
``model_post_init``, the delta limit by the shared guard (:func:`urbandp._privacy.guards.check_delta`).

The spec is also the mechanism's description that the release reads (:mod:`urbandp.counts._table_release`, its
accounting :meth:`CountsReleaseSpec.plan`, its window :mod:`urbandp.counts._window`): one spec, no second
description below it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from urbandp._privacy.guards import check_delta
from urbandp._privacy.loss import Loss
from urbandp._release_options import ReleaseOptions, option
from urbandp.counts._accounting import NoisePlan, gaussian_plan, laplace_plan
from urbandp.counts._columns import ColumnsLike, column_map
from urbandp.counts._config import MARGINALS, MAX_THRESHOLD, METHODS, SAMPLINGS
from urbandp.counts._domain import CountDomain
from urbandp.counts._sparse import integer_threshold
from urbandp.counts._units import PrivacyUnit
from urbandp.errors import InvalidParameterError

DomainLike = str | Path | CountDomain | dict[str, object] | None
"""A public domain: a JSON file, a :class:`CountDomain`, or its JSON object; None with ``select_partitions``."""

MAX_NOISE_SCALE = float(2**40)
"""Largest ``noise_scale`` (about 1.1e12): a discrete Laplace or Gaussian draw of this scale stays, with its count,
far inside a 64-bit integer (2^63, about 9.2e18; a draw beyond 2^22 scales has probability below e^-4e6)."""

SPEC_HASH_LEAVES_OUT = ("engine", "spark_master", "column")
"""Options that cannot change a count release (Polars and Spark compute the same table; the column mapping
renames the input's columns): not in its hash."""


class CountsReleaseSpec(ReleaseOptions):
    """Every option of a count release, declared once (:func:`urbandp._release_options.option`): the command's flags
    and ``--help`` are built from these fields, and :func:`urbandp.counts._api.release` takes them as keywords."""

    domain: DomainLike = option(
        None,
        help="Public domain JSON: days, taps, bin_minutes, places (default: none; then --select-partitions is required).",
        cli_type=Path | None,
    )
    select_partitions: bool = option(False, help="No public domain: DP partition selection (needs --delta).")
    input_kind: str = option(
        "events",
        help="events | counts (pre-aggregated mode,day,tap,bin,location,count).",
        choices=("events", "counts"),
    )
    column: ColumnsLike = option(
        None,
        help="Column mapping ROLE=NAME, repeatable, e.g. --column day=date --column location=loc; ROLE in "
        "mode,day,tap,bin,location,count (counts) or mode,timestamp,tap,location,card_id (events) "
        "(default: the columns have the role names).",
        cli_type=list[str] | None,
    )
    unit: str = option("event", help="Privacy unit: event | card-day.", choices=("event", "card-day"))
    max_events: int = option(1, help="card-day: at most k events per card and day (truncation).", ge=1)
    max_per_cell: int = option(1, help="card-day: at most m events of one card-day per cell.", ge=1)
    method: str = option(
        "urbandp", help="urbandp (DP, default) | data61-2016 (NOT DP, for comparison).", choices=METHODS
    )
    mechanism: str = option(
        "laplace",
        help="laplace (discrete, pure DP) | gaussian (discrete, zCDP -> (eps, delta)).",
        choices=("laplace", "gaussian"),
    )
    epsilon: float | None = option(
        None,
        help="Epsilon for the joint table, scale calibrated by OpenDP (default: none; give this or --noise-scale).",
        gt=0,
    )
    delta: float = option(0.0, help="Delta (Gaussian mechanism or partition selection).")
    noise_scale: float | None = option(
        None,
        help="Noise scale instead of epsilon, which is then computed (default: none; give this or --epsilon).",
        gt=0,
        le=MAX_NOISE_SCALE,
        why="the noisy counts are 64-bit integers: noise of a larger scale would overflow them",
    )
    suppress_below: float | None = option(
        None,
        help="Hide joint cells whose NOISY value is below this (default: publish every cell).",
    )
    threshold: float = option(18.0, help="data61-2016 only: release if noisy > threshold.")
    precision: int = option(0, help="Decimal places of released values.", ge=-9, le=15)
    consistent: bool = option(
        False, help="Consistent non-negative least-squares projection (post-processing)."
    )
    top_k: int | None = option(
        None,
        help="Also release the k busiest places with OpenDP noisy top-k (default: off).",
        ge=1,
    )
    top_k_epsilon: float | None = option(
        None,
        help="Epsilon charged for --top-k (default: none; required with --top-k).",
        gt=0,
    )
    top_k_tap: str | None = option(
        None, help="Rank places by this tap only, e.g. off = destinations (default: all taps)."
    )
    format: str = option("csv", help="csv | parquet.", choices=("csv", "parquet"))
    sampling: str = option(
        "auto",
        help="auto (sparse when --suppress-below > 0 is set) | sparse (exact sparse sampler of the zero "
        "cells, Cormode et al. 2012) | dense (noise on every cell).",
        choices=SAMPLINGS,
    )
    marginals: str = option(
        "auto",
        help="auto (noisy-joint with dense sampling, published-joint with sparse, charged when "
        "--marginal-epsilon/--marginal-scale is given) | noisy-joint | published-joint | charged.",
        choices=MARGINALS,
    )
    marginal_epsilon: float | None = option(
        None,
        help="Charged marginals: epsilon of each marginal table (default: none; needed with --marginals charged).",
        gt=0,
    )
    marginal_scale: float | None = option(
        None,
        help="Charged marginals: noise scale instead of --marginal-epsilon (default: none).",
        gt=0,
    )
    budget_epsilon: float | None = option(
        None, help="Refuse releases that spend more epsilon (default: no cap).", gt=0
    )
    budget_delta: float = option(1e-5, help="Refuse releases that spend more delta.", ge=0, lt=1)
    engine: str = option(
        "polars",
        help="Per-event stage: polars (in-process) or spark, see docs/scale-out.md.",
        choices=("polars", "spark"),
    )
    spark_master: str | None = option(
        None, help="With --engine spark: master URL, e.g. spark://host:7077 (default: local[*])."
    )

    def model_post_init(self, context: Any, /) -> None:
        if self.domain is not None and self.select_partitions:
            raise InvalidParameterError(
                "give domain (a public list of cells) or select_partitions (cells chosen with DP), not both",
                parameters=("domain", "select_partitions"),
            )
        column_map(self.column, self.input_kind)
        self.privacy_unit()  # the unit's own checks, in the order the command line always made them
        check_delta(self.delta, "delta")
        if self.epsilon is None and self.noise_scale is None:
            raise InvalidParameterError("give epsilon or noise_scale", parameters=("epsilon", "noise_scale"))
        if self.epsilon is not None and self.noise_scale is not None:
            raise InvalidParameterError(
                "give only one of epsilon and noise_scale (the other is computed)",
                parameters=("epsilon", "noise_scale"),
            )
        self._check_mechanism()

    def privacy_unit(self) -> PrivacyUnit:
        """The privacy unit; counts given pre-aggregated declare their bounding, events are truncated here."""
        bounding = "declared" if self.input_kind == "counts" else "truncation"
        return PrivacyUnit(self.unit, self.max_events, self.max_per_cell, bounding=bounding)

    def _check_mechanism(self) -> None:
        """The checks between the mechanism's options (each option's own bounds are its field's)."""
        if self.suppress_below is not None and abs(self.suppress_below) > MAX_THRESHOLD:
            raise InvalidParameterError(
                f"suppress_below must be between -2^53 and 2^53 ({MAX_THRESHOLD:,}), got {self.suppress_below:g}: "
                "beyond that no count or noisy value is an exact float and every cell is on one side",
                parameters="suppress_below",
            )
        if self.marginal_epsilon is not None and self.marginal_scale is not None:
            raise InvalidParameterError(
                "give only one of marginal_epsilon and marginal_scale",
                parameters=("marginal_epsilon", "marginal_scale"),
            )
        if self.marginals == "charged" and self.marginal_epsilon is None and self.marginal_scale is None:
            raise InvalidParameterError(
                "marginals charged needs marginal_epsilon or marginal_scale",
                parameters=("marginals", "marginal_epsilon", "marginal_scale"),
            )
        if self.sampling == "sparse":
            if self.method != "urbandp":
                raise InvalidParameterError(  # "method" here is the word, not the parameter
                    "sampling sparse applies to the DP method only (data61-2016 is dense)",
                    parameters="sampling",
                )
            if self.suppress_below is None:
                raise InvalidParameterError(  # "threshold" here is the word, not the parameter
                    "sampling sparse needs suppress_below (without a threshold use dense)",
                    parameters=("sampling", "suppress_below"),
                )
            if self.consistent:
                raise InvalidParameterError(
                    "consistent mixes every cell of a row: use sampling dense with it",
                    parameters=("consistent", "sampling"),
                )
        if self.method == "data61-2016" and self.noise_scale is None:
            raise InvalidParameterError(
                "method data61-2016 needs noise_scale (the report's p)", parameters=("method", "noise_scale")
            )
        if self.top_k is not None and self.top_k_epsilon is None:
            raise InvalidParameterError(
                "top_k needs top_k_epsilon (it is charged separately)", parameters=("top_k", "top_k_epsilon")
            )

    @property
    def resolved_sampling(self) -> str:
        """``sparse`` or ``dense``; ``auto`` is sparse when a threshold above 0 (in noise units) is set."""
        if self.method != "urbandp":
            return "dense"
        if self.sampling == "sparse":
            if integer_threshold(float(self.suppress_below), self.precision) < 1:  # type: ignore[arg-type]
                raise InvalidParameterError(
                    f"sampling sparse needs suppress_below above 0, got {self.suppress_below} "
                    "(most zero cells would be published: use sampling dense)",
                    parameters=("sampling", "suppress_below"),
                )
            return "sparse"
        if self.sampling == "auto" and self.suppress_below is not None and not self.consistent:
            return "sparse" if integer_threshold(self.suppress_below, self.precision) >= 1 else "dense"
        return "dense"

    @property
    def resolved_marginals(self) -> str:
        if self.marginals == "auto":
            if self.marginal_epsilon is not None or self.marginal_scale is not None:
                return "charged"
            return "noisy-joint" if self.resolved_sampling == "dense" else "published-joint"
        if self.marginals == "noisy-joint" and self.resolved_sampling == "sparse":
            raise InvalidParameterError(
                "marginals noisy-joint needs every noisy cell: use sampling dense, or marginals "
                "charged / published-joint with sampling sparse",
                parameters=("marginals", "sampling"),
            )
        return self.marginals

    def marginal_unit(self) -> PrivacyUnit:
        """A unit's k events may all fall into one marginal cell (same place, other bins): m = k there."""
        unit = self.privacy_unit()
        return PrivacyUnit(unit.kind, unit.max_events, unit.max_events, unit.bounding)

    def marginal_plan(self) -> NoisePlan | None:
        """What each charged marginal table costs (None unless marginals are charged)."""
        if self.resolved_marginals != "charged":
            return None
        return self._noise_plan(self.marginal_unit(), self.marginal_epsilon, self.marginal_scale)

    def conversion_delta(self) -> float | None:
        """The delta at which the Gaussian's summed rho is stated as (epsilon, delta) (None for Laplace)."""
        return self.delta if self.method != "data61-2016" and self.mechanism == "gaussian" else None

    def plan(self) -> NoisePlan | None:
        """What the joint table costs (None for the non-DP Data61 method)."""
        if self.method == "data61-2016":
            return None
        return self._noise_plan(self.privacy_unit(), self.epsilon, self.noise_scale)

    def _noise_plan(self, unit: PrivacyUnit, epsilon: float | None, scale: float | None) -> NoisePlan:
        """A table's plan for ``unit``: the ``scale`` given, else the mechanism calibrated to ``epsilon``."""
        if self.mechanism == "laplace":
            return laplace_plan(unit, epsilon=epsilon, scale=scale)
        return gaussian_plan(unit, delta=self.delta, epsilon=epsilon, scale=scale)

    def cap(self) -> Loss | None:
        """The run's own cap (``--budget-epsilon``, ``--budget-delta``), or None."""
        return None if self.budget_epsilon is None else Loss.approx_dp(self.budget_epsilon, self.budget_delta)

    def sha256(self, domain: CountDomain | None) -> str:
        """privacy.json's ``spec_sha256``: every option, the public ``domain`` by its content (never
        the file's path), less the engine that computes the same release (``engine``, ``spark_master``)."""
        from urbandp._provenance import spec_fields, spec_sha256

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
