"""Release a tap-count table: noisy joint over a public domain, marginals derived from it, optional top-k.

Order of operations (DESIGN.md rules 3, 4, 6):
1. raw joint counts over the public domain (zeros included), contribution-bounded per privacy unit;
2. OpenDP noise on every cell (discrete Laplace, or discrete Gaussian under zCDP -> (epsilon, delta));
3. post-processing only: optional consistent non-negative projection, rounding, marginals (sums of the
   noisy joint), suppression of cells whose *noisy* value is below a threshold.
``method="data61-2016"`` runs the Second Algorithm instead (:mod:`urbandp.counts.data61`), labelled not DP.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from urbandp.counts import data61
from urbandp.counts.accounting import NoisePlan, gaussian_plan, laplace_plan
from urbandp.counts.domain import CountDomain
from urbandp.counts.marginals import consistent_nonnegative, location_marginal, time_marginal
from urbandp.counts.parallel_noise import add_noise
from urbandp.counts.topk import noisy_top_k
from urbandp.counts.units import PrivacyUnit
from urbandp.errors import InputError
from urbandp.privacy.ledger import LedgerEntry, PrivacyLedger
from urbandp.privacy.noise import NoiseSource, OpenDPNoise
from urbandp.privacy.rounding import round_to_precision

METHODS = ("urbandp", "data61-2016")


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

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise InputError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.mechanism not in ("laplace", "gaussian"):
            raise InputError(f"mechanism must be 'laplace' or 'gaussian', got {self.mechanism!r}")
        if self.method == "data61-2016" and self.noise_scale is None:
            raise InputError("--method data61-2016 needs --noise-scale (the report's p)")
        if self.top_k is not None and self.top_k_epsilon is None:
            raise InputError("--top-k needs --top-k-epsilon (it is charged separately)")

    def plan(self) -> NoisePlan | None:
        """What the joint table costs (None for the non-DP Data61 method)."""
        if self.method == "data61-2016":
            return None
        eps = None if self.noise_scale is not None else self.epsilon
        if self.mechanism == "laplace":
            return laplace_plan(self.unit, epsilon=eps, scale=self.noise_scale)
        return gaussian_plan(self.unit, delta=self.delta, epsilon=eps, scale=self.noise_scale)


@dataclass
class CountRelease:
    joint: np.ndarray  # released values (float64), shape domain.shape
    suppressed: np.ndarray  # bool mask, True = published as missing
    time: np.ndarray  # (day, tap, bin, mode)
    location: np.ndarray  # (day, tap, place)
    privacy: dict[str, object]
    top_k: list[int] | None = None
    time_suppressed: np.ndarray | None = None
    location_suppressed: np.ndarray | None = None


def _suppress(values: np.ndarray, below: float | None) -> np.ndarray:
    if below is None:
        return np.zeros(values.shape, dtype=bool)
    return values < below


def release_counts(
    raw: np.ndarray,
    domain: CountDomain,
    config: CountReleaseConfig,
    *,
    noise: NoiseSource | None = None,
    ledger: PrivacyLedger | None = None,
    progress: Callable[[int], None] | None = None,
) -> CountRelease:
    """Release the raw dense joint ``raw`` (int, ``domain.shape``) under ``config``."""
    noise = noise or OpenDPNoise()
    # An unbounded ledger: PrivacyLedger() alone has budget_delta=0 and would refuse any delta > 0.
    ledger = ledger or PrivacyLedger(budget_epsilon=None, budget_delta=1.0)
    if raw.shape != domain.shape:
        raise InputError(f"joint table shape {raw.shape} does not match the domain {domain.shape}")
    if config.method == "data61-2016":
        return _release_data61(raw, domain, config, noise)
    plan = config.plan()
    assert plan is not None
    ledger.charge(
        LedgerEntry(
            name="joint count table",
            epsilon=plan.epsilon,
            delta=plan.delta,
            unit=config.unit.name,
            neighbouring=config.unit.neighbouring,
            mechanism=plan.mechanism,
            detail={"noise_scale": plan.noise_scale, "cells": domain.n_cells},
        )
    )
    kind = "discrete_laplace" if plan.mechanism == "discrete_laplace" else "discrete_gaussian"
    noisy = add_noise(raw.astype(np.int64), plan.noise_scale, kind, noise, progress=progress).astype(
        np.float64
    )
    post: list[str] = []
    if config.consistent:
        noisy = consistent_nonnegative(noisy)
        post.append("consistent non-negative projection per (day, tap, place) onto its clipped noisy total")
    noisy = round_to_precision(noisy, config.precision)
    post.append(
        f"rounded to {config.precision} decimal places" if config.precision is not None else "no rounding"
    )
    time = time_marginal(noisy, domain)
    loc = location_marginal(noisy)
    post.append("marginals = sums of the noisy joint table (before suppression)")
    suppressed = _suppress(noisy, config.suppress_below)
    if config.suppress_below is not None:
        post.append(f"joint cells with noisy value < {config.suppress_below} suppressed (after noise)")
    top = None
    topk_info: dict[str, object] | None = None
    if config.top_k is not None:
        assert config.top_k_epsilon is not None
        if config.top_k_tap is not None and config.top_k_tap not in domain.taps:
            raise InputError(
                f"--top-k-tap {config.top_k_tap!r} is not a tap of the domain ({', '.join(domain.taps)})"
            )
        ranked = raw if config.top_k_tap is None else raw[:, [domain.taps.index(config.top_k_tap)]]
        res = noisy_top_k(ranked.sum(axis=(0, 1, 2)), config.top_k, config.top_k_epsilon, config.unit)
        ledger.charge(
            LedgerEntry(
                name=f"top-{config.top_k} places",
                epsilon=res.epsilon,
                unit=config.unit.name,
                neighbouring=config.unit.neighbouring,
                mechanism="opendp make_noisy_top_k (one-shot, Gumbel)",
                detail={"noise_scale": res.noise_scale, "k": config.top_k},
            )
        )
        top = res.indices
        topk_info = {
            "k": config.top_k,
            "tap": config.top_k_tap or "all",
            "epsilon": res.epsilon,
            "noise_scale": res.noise_scale,
            "mechanism": "opendp make_noisy_top_k (monotonic Linf, d_in = k)",
        }
    privacy: dict[str, object] = {
        "method": "urbandp",
        "differentially_private": True,
        **config.unit.to_json(),
        **plan.to_json(),
        "zeros_perturbed": True,
        "domain": {
            "source": "public",
            "shape": dict(zip(("day", "tap", "bin", "place"), domain.shape, strict=False)),
            "n_cells": domain.n_cells,
        },
        "marginals": "derived_from_noisy_joint",
        "suppress_below": config.suppress_below,
        "precision": config.precision,
        "post_processing": post,
        "top_k": topk_info,
        "noise_source": "OpenDP" if noise.is_private else "NONE (exact test source: not private)",
        "total_epsilon": ledger.epsilon_spent,
        "total_delta": ledger.delta_spent,
        "ledger": ledger.to_dict(),
    }
    return CountRelease(noisy, suppressed, time, loc, privacy, top)


def _release_data61(
    raw: np.ndarray, domain: CountDomain, config: CountReleaseConfig, noise: NoiseSource
) -> CountRelease:
    p = float(config.noise_scale)  # type: ignore[arg-type]
    t = config.data61_threshold
    joint = data61.second_algorithm(raw, p, t, noise)
    time = data61.second_algorithm(time_marginal(raw, domain), p, t, noise)
    loc = data61.second_algorithm(location_marginal(raw), p, t, noise)
    privacy: dict[str, object] = {
        "method": "data61-2016",
        "differentially_private": False,
        "label": data61.NOT_DP_LABEL,
        **config.unit.to_json(),
        "mechanism": "laplace (continuous, OpenDP) on non-zero cells only",
        "noise_scale": p,
        "epsilon": None,
        "delta": None,
        "delta_lower_bound_exact": 0.5 * math.exp(-(t - 1) / p),
        "delta_lower_bound_theorem1": math.exp(-(t - 1) / p) / (2 * p),
        "zeros_perturbed": False,
        "threshold": t,
        "suppress_below": None,
        "marginals": "derived_from_raw_independently",
        "precision": 0,
    }
    return CountRelease(joint, joint == 0, time, loc, privacy, None, time == 0, loc == 0)
