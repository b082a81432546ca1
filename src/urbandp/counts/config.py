"""The frozen spec of a count-table release (:class:`CountReleaseConfig`): validated on construction, read by the
release (:mod:`urbandp.counts.table_release`), its window accounting (:mod:`urbandp.counts.window`) and the API."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from urbandp.counts.accounting import NoisePlan, gaussian_plan, laplace_plan
from urbandp.counts.sparse import integer_threshold
from urbandp.counts.units import PrivacyUnit
from urbandp.errors import InvalidParameterError

METHODS = ("urbandp", "data61-2016")
SAMPLINGS = ("auto", "sparse", "dense")
MARGINALS = ("auto", "noisy-joint", "published-joint", "charged")


MAX_THRESHOLD = 2**53
"""Largest ``|suppress_below|``: integers above 2^53 are not exact float64 values, so no count or noisy value
compares meaningfully with a larger threshold (it would suppress every cell, or none); beyond it the exact tail
probabilities of the zero-cell sampler also get needlessly costly (the discrete Gaussian's at 1e100 never ends)."""


@dataclass(frozen=True)
class CountReleaseConfig:
    """An immutable description of one count release (validated on construction)."""

    method: str = "urbandp"
    mechanism: str = "laplace"  # laplace | gaussian
    epsilon: float | None = 1.0
    delta: float = 0.0
    noise_scale: float | None = None
    unit: PrivacyUnit = field(default_factory=PrivacyUnit)
    suppress_below: float | None = None
    precision: int | None = 0
    consistent: bool = False
    top_k: int | None = None
    top_k_epsilon: float | None = None
    top_k_tap: str | None = None  # rank by one tap only, e.g. "off" for destinations
    data61_threshold: float = 18.0
    sampling: str = "dense"  # the API's and CLI's default is "auto" (sparse when suppress_below is set)
    marginals: str = "auto"
    marginal_epsilon: float | None = None
    marginal_scale: float | None = None

    def __post_init__(self) -> None:
        if self.sampling not in SAMPLINGS:
            raise InvalidParameterError(
                f"sampling must be one of {', '.join(SAMPLINGS)}, got {self.sampling!r}",
                parameters="sampling",
            )
        if self.marginals not in MARGINALS:
            raise InvalidParameterError(
                f"marginals must be one of {', '.join(MARGINALS)}, got {self.marginals!r}",
                parameters="marginals",
            )
        for name, value in (
            ("suppress_below", self.suppress_below),
            ("threshold", self.data61_threshold),  # the API's keyword and the CLI's --threshold
            ("marginal_epsilon", self.marginal_epsilon),
            ("marginal_scale", self.marginal_scale),
            ("epsilon", self.epsilon),
            ("noise_scale", self.noise_scale),
            ("top_k_epsilon", self.top_k_epsilon),
        ):
            if value is not None and not math.isfinite(value):
                raise InvalidParameterError(f"{name} must be a finite number, got {value}", parameters=name)
        if self.suppress_below is not None and abs(self.suppress_below) > MAX_THRESHOLD:
            raise InvalidParameterError(
                f"suppress_below must be between -2^53 and 2^53 ({MAX_THRESHOLD:,}), got {self.suppress_below:g}: "
                "beyond that no count or noisy value is an exact float and every cell is on one side",
                parameters="suppress_below",
            )
        if self.precision is not None and not -9 <= self.precision <= 15:
            raise InvalidParameterError(
                f"precision must be between -9 and 15 decimal places, got {self.precision}",
                parameters="precision",
            )
        if not 0 <= self.delta < 1:
            raise InvalidParameterError(f"delta must be in [0, 1), got {self.delta}", parameters="delta")
        for name, value in (
            ("marginal_epsilon", self.marginal_epsilon),
            ("marginal_scale", self.marginal_scale),
        ):
            if value is not None and value <= 0:
                raise InvalidParameterError(f"{name} must be > 0, got {value}", parameters=name)
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
        if self.method not in METHODS:
            raise InvalidParameterError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.mechanism not in ("laplace", "gaussian"):
            raise InvalidParameterError(f"mechanism must be 'laplace' or 'gaussian', got {self.mechanism!r}")
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
        return PrivacyUnit(self.unit.kind, self.unit.max_events, self.unit.max_events, self.unit.bounding)

    def marginal_plan(self) -> NoisePlan | None:
        """What each charged marginal table costs (None unless marginals are charged)."""
        if self.resolved_marginals != "charged":
            return None
        unit = self.marginal_unit()
        eps = None if self.marginal_scale is not None else self.marginal_epsilon
        if self.mechanism == "laplace":
            return laplace_plan(unit, epsilon=eps, scale=self.marginal_scale)
        return gaussian_plan(unit, delta=self.delta, epsilon=eps, scale=self.marginal_scale)

    def conversion_delta(self) -> float | None:
        """The delta at which the Gaussian's summed rho is stated as (epsilon, delta) (None for Laplace)."""
        return self.delta if self.method != "data61-2016" and self.mechanism == "gaussian" else None

    def plan(self) -> NoisePlan | None:
        """What the joint table costs (None for the non-DP Data61 method)."""
        if self.method == "data61-2016":
            return None
        eps = None if self.noise_scale is not None else self.epsilon
        if self.mechanism == "laplace":
            return laplace_plan(self.unit, epsilon=eps, scale=self.noise_scale)
        return gaussian_plan(self.unit, delta=self.delta, epsilon=eps, scale=self.noise_scale)
