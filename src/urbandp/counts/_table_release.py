"""Release a tap-count table: noisy joint over a public domain, marginals derived from it, optional top-k.

Order of operations (docs/design.md rules 3, 4, 6):
1. raw joint counts over the public domain (zeros included), contribution-bounded per privacy unit;
2. OpenDP noise on every cell (discrete Laplace, or discrete Gaussian under zCDP -> (epsilon, delta));
3. post-processing only: optional consistent non-negative projection, rounding, marginals (sums of the
   noisy joint), suppression of cells whose *noisy* value is below a threshold.
``method="data61-2016"`` runs the Second Algorithm instead (:mod:`urbandp.counts._data61`), labelled not DP.

``sampling="sparse"`` draws OpenDP noise only for the non-zero cells and samples the published zero cells exactly
(:mod:`urbandp.counts._sparse`, Cormode et al. ICDT 2012): the same law as dense-then-suppress. The sampling and
``marginals`` choices are in docs/counts.md, sections "Sparse sampling" and "Marginals".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

import urbandp.counts._data61 as data61
from urbandp._privacy.guards import noise_reasons
from urbandp._privacy.ledger import LedgerEntry, PrivacyLedger
from urbandp._privacy.noise import NoiseSource, OpenDPNoise
from urbandp._privacy.rounding import round_to_precision
from urbandp.counts._accounting import NoisePlan, table_entry
from urbandp.counts._domain import CountDomain
from urbandp.counts._marginals import (
    consistent_nonnegative,
    location_marginal,
    location_marginal_sparse,
    time_marginal,
    time_marginal_sparse,
)
from urbandp.counts._parallel_noise import add_noise
from urbandp.counts._sparse import PublishedCells, SparseJoint, integer_threshold, sparse_release
from urbandp.counts._tails import IntegerNoise
from urbandp.counts._threshold_advice import recommended_threshold
from urbandp.counts._topk import noisy_top_k
from urbandp.counts._window import per_card_window
from urbandp.errors import Advice, InputError

if TYPE_CHECKING:
    from urbandp.counts._options import CountsReleaseSpec


@dataclass
class CountRelease:
    """A released table. Dense sampling fills ``joint``/``suppressed``; sparse sampling fills ``cells`` only."""

    joint: np.ndarray | None  # released values (float64), shape domain.shape (dense sampling)
    suppressed: np.ndarray | None  # bool mask, True = published as missing (dense sampling)
    time: np.ndarray  # (day, tap, bin, mode)
    location: np.ndarray  # (day, tap, place)
    privacy: dict[str, object]
    top_k: list[int] | None = None
    time_suppressed: np.ndarray | None = None
    location_suppressed: np.ndarray | None = None
    cells: PublishedCells | None = None  # published cells only (sparse sampling)

    def published(self) -> tuple[np.ndarray, np.ndarray]:
        """Flat indices and values of the published joint cells (either sampling)."""
        return _published(self.joint, self.suppressed, self.cells)


def _published(
    joint: np.ndarray | None, suppressed: np.ndarray | None, cells: PublishedCells | None
) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices and values of the published joint cells, from either sampling."""
    if cells is not None:
        return cells.index, cells.values
    assert joint is not None and suppressed is not None
    idx = np.flatnonzero(~suppressed.ravel())
    return idx, joint.ravel()[idx]


def _charge_top_k(
    raw: SparseJoint, domain: CountDomain, config: CountsReleaseSpec, ledger: PrivacyLedger
) -> tuple[list[int], dict[str, object]]:
    assert config.top_k is not None and config.top_k_epsilon is not None  # and the tap checked on the domain
    by_tap = location_marginal_sparse(raw.index, raw.counts, domain).sum(axis=0)  # raw (tap, place) totals
    tap = config.top_k_tap
    totals = (by_tap.sum(axis=0) if tap is None else by_tap[domain.taps.index(tap)]).astype(np.int64)
    res = noisy_top_k(totals, config.top_k, config.top_k_epsilon, config.privacy_unit())
    ledger.charge(
        LedgerEntry(
            name=f"top-{config.top_k} places",
            epsilon=res.epsilon,
            unit=config.privacy_unit().name,
            neighbouring=config.privacy_unit().neighbouring,
            mechanism="opendp make_noisy_top_k (one-shot, Gumbel)",
            detail={"noise_scale": res.noise_scale, "k": config.top_k},
        )
    )
    info: dict[str, object] = {
        "k": config.top_k,
        "tap": config.top_k_tap or "all",
        "epsilon": res.epsilon,
        "noise_scale": res.noise_scale,
        "mechanism": "opendp make_noisy_top_k (monotonic Linf, d_in = k)",
    }
    return res.indices, info


def _charged_marginals(
    raw: SparseJoint,
    domain: CountDomain,
    config: CountsReleaseSpec,
    noise: NoiseSource,
    ledger: PrivacyLedger,
) -> tuple[np.ndarray, np.ndarray, NoisePlan]:
    """Time-only and location-only tables with their own OpenDP noise, each charged (sequential composition)."""
    plan = config.marginal_plan()
    assert plan is not None
    unit = config.marginal_unit()
    kind = plan.mechanism
    tables = []
    for name, true in (
        ("time-only marginal", time_marginal_sparse(raw.index, raw.counts, domain)),
        ("location-only marginal", location_marginal_sparse(raw.index, raw.counts, domain)),
    ):
        ledger.charge(table_entry(name, plan, unit, {"cells": int(true.size), "max_per_cell": unit.linf}))
        noisy = add_noise(true.astype(np.int64), plan.noise_scale, kind, noise).astype(np.float64)
        tables.append(round_to_precision(noisy, config.precision))
    return tables[0], tables[1], plan


def _release_counts(
    raw: np.ndarray | SparseJoint,
    domain: CountDomain,
    config: CountsReleaseSpec,
    *,
    noise: NoiseSource | None = None,
    progress: Callable[[int], None] | None = None,
) -> CountRelease:
    """Release the raw joint ``raw`` (dense int array of ``domain.shape``, or :class:`SparseJoint`) under ``config``."""
    noise = noise or OpenDPNoise()
    ledger = PrivacyLedger(conversion_delta=config.conversion_delta())
    if tuple(raw.shape) != domain.shape:
        raise InputError(f"joint table shape {tuple(raw.shape)} does not match the domain {domain.shape}")
    if config.method == "data61-2016":
        dense = raw.to_dense() if isinstance(raw, SparseJoint) else raw
        return _release_data61(dense, domain, config, noise)
    plan = config.plan()
    assert plan is not None
    sampling = config.resolved_sampling
    marginals = config.resolved_marginals
    sparse_raw = raw if isinstance(raw, SparseJoint) else SparseJoint.from_dense(raw)
    ledger.charge(
        table_entry(
            "joint count table", plan, config.privacy_unit(), {"cells": domain.n_cells, "sampling": sampling}
        )
    )
    kind = plan.mechanism
    post: list[str] = []
    joint: np.ndarray | None = None
    suppressed: np.ndarray | None = None
    cells: PublishedCells | None = None
    if sampling == "dense":
        dense = raw if isinstance(raw, np.ndarray) else sparse_raw.to_dense()
        joint = add_noise(dense.astype(np.int64), plan.noise_scale, kind, noise, progress=progress).astype(
            np.float64
        )
        if config.consistent:
            joint = consistent_nonnegative(joint)
            post.append(
                "consistent non-negative projection per (day, tap, place) onto its clipped noisy total"
            )
        joint = round_to_precision(joint, config.precision)
        below = config.suppress_below
        suppressed = np.zeros(joint.shape, dtype=bool) if below is None else joint < below
    else:
        assert config.suppress_below is not None
        cells = sparse_release(
            sparse_raw,
            IntegerNoise(kind, plan.noise_scale),
            config.suppress_below,
            config.precision,
            noise,
            progress=progress,
        )
        post.append(
            "sparse sampling (Cormode et al. ICDT 2012): OpenDP noise on the non-zero cells; the published zero "
            "cells sampled exactly (Binomial count, uniform positions, values from the noise tail): the same law "
            "as noise on every cell then suppression"
        )
    post.append(
        f"rounded to {config.precision} decimal places" if config.precision is not None else "no rounding"
    )
    marginal_plan: NoisePlan | None = None
    if marginals == "noisy-joint":  # dense sampling only (the spec refuses it with sparse)
        assert joint is not None
        time, loc = time_marginal(joint, domain), location_marginal(joint)
        post.append("marginals = sums of the noisy joint table (before suppression)")
    if config.suppress_below is not None:
        post.append(f"joint cells with noisy value < {config.suppress_below} suppressed (after noise)")
    if marginals == "published-joint":
        idx, vals = _published(joint, suppressed, cells)
        time = time_marginal_sparse(idx, vals, domain)
        loc = location_marginal_sparse(idx, vals, domain)
        post.append(
            "marginals = sums of the PUBLISHED joint cells (suppressed cells count 0): free post-processing, "
            "biased low by the true counts of suppressed cells (see docs/counts.md)"
        )
    if marginals == "charged":
        time, loc, marginal_plan = _charged_marginals(sparse_raw, domain, config, noise, ledger)
        post.append("marginals = their own OpenDP noise on the true marginal counts (charged, see ledger)")
    top = None
    topk_info: dict[str, object] | None = None
    if config.top_k is not None:
        top, topk_info = _charge_top_k(sparse_raw, domain, config, ledger)
    privacy = _privacy_document(config, plan, domain, post, marginal_plan, topk_info, noise, ledger)
    return CountRelease(joint, suppressed, time, loc, privacy, top, cells=cells)


def _privacy_document(
    config: CountsReleaseSpec,
    plan: NoisePlan,
    domain: CountDomain,
    post: list[str],
    marginal_plan: NoisePlan | None,
    topk_info: dict[str, object] | None,
    noise: NoiseSource,
    ledger: PrivacyLedger,
) -> dict[str, object]:
    """privacy.json of a release over a public domain, from its plan, its ledger and its post-processing: DP
    unless the noise source is not private (:func:`urbandp._privacy.guards.noise_reasons`)."""
    sampling, marginals = config.resolved_sampling, config.resolved_marginals
    not_dp = noise_reasons(noise)
    private_noise = not not_dp
    privacy: dict[str, object] = {
        "method": "urbandp",
        "differentially_private": private_noise,
        "not_dp_reasons": not_dp,
        **config.privacy_unit().to_json(),
        **plan.to_json(),
        "zeros_perturbed": True,
        "sampling": sampling,
        "domain": {
            "source": "public",
            "shape": dict(zip(("day", "tap", "bin", "place"), domain.shape, strict=False)),
            "n_cells": domain.n_cells,
        },
        "marginals": {
            "noisy-joint": "derived_from_noisy_joint",
            "published-joint": "derived_from_published_joint",
            "charged": "charged_noisy_marginals",
        }[marginals],
        "marginal_noise": None if marginal_plan is None else marginal_plan.to_json(),
        "suppress_below": config.suppress_below,
        "precision": config.precision,
        "post_processing": post,
        "top_k": topk_info,
        "noise_source": "OpenDP" if private_noise else "NONE (exact test source: not private)",
        "total_epsilon": ledger.epsilon_spent,
        "total_delta": ledger.delta_spent,
        "ledger": ledger.to_dict(),
    }
    top_k_epsilon = None if topk_info is None else float(topk_info["epsilon"])  # type: ignore[arg-type]
    totals = (ledger.epsilon_spent, ledger.delta_spent)
    return privacy | public_statements(config, plan, marginal_plan, top_k_epsilon, domain, totals)


def public_statements(
    config: CountsReleaseSpec,
    plan: NoisePlan,
    marginal_plan: NoisePlan | None,
    top_k_epsilon: float | None,
    domain: CountDomain,
    totals: tuple[float, float],
) -> dict[str, object]:
    """privacy.json's ``suppression`` (with ``suppress_below``) and ``per_card_window`` of a release over
    ``domain`` whose loss per unit is ``totals``: public quantities only, so a dry run states them as the release
    will."""
    stated: dict[str, object] = {}
    if config.suppress_below is not None:
        law = IntegerNoise(plan.mechanism, plan.noise_scale)
        stated["suppression"] = suppression_report(
            law, config.suppress_below, config.precision, domain.n_cells
        )
    days = len(domain.days)
    stated["per_card_window"] = per_card_window(config, plan, marginal_plan, top_k_epsilon, days, totals)
    return stated


def suppression_report(
    law: IntegerNoise, suppress_below: float, precision: int | None, n_cells: int
) -> dict[str, object]:
    """What a threshold means for cells whose raw count is 0, from public quantities only (scale, domain size).

    The number of published raw-zero cells is NOT reported: it would tell which published cells are true zeros.
    """
    t = integer_threshold(suppress_below, precision)
    if t < 1:
        return {
            "noise_only_publish_probability": None,
            "note": "threshold <= 0: most zero cells are published",
        }
    p = law.tail_float(t)
    suggested = max(t, recommended_threshold(law, n_cells))
    report: dict[str, object] = {
        "noise_only_publish_probability": p,
        "expected_noise_only_cells_at_most": n_cells * p,
        "threshold_for_at_most_one_noise_only_cell": suggested,
        "note": "a cell whose raw count is 0 is published with this probability (its value is pure noise); "
        "the bound multiplies by every cell of the public domain",
    }
    if n_cells * p > 1.0:
        report["warning"] = Advice(
            f"up to {n_cells * p:,.0f} published cells may be pure noise on a raw zero (P = {p:.3g} per cell over "
            f"{n_cells:,} cells); suppress_below={suggested} keeps that below one",
            parameters="suppress_below",
        )
    return report


def _release_data61(
    raw: np.ndarray, domain: CountDomain, config: CountsReleaseSpec, noise: NoiseSource
) -> CountRelease:
    p = float(config.noise_scale)  # type: ignore[arg-type]
    t = config.threshold
    joint = data61.second_algorithm(raw, p, t, noise)
    time = data61.second_algorithm(time_marginal(raw, domain), p, t, noise)
    loc = data61.second_algorithm(location_marginal(raw), p, t, noise)
    privacy: dict[str, object] = {
        "method": "data61-2016",
        "differentially_private": False,
        "not_dp_reasons": [data61.NOT_DP_LABEL],
        "label": data61.NOT_DP_LABEL,
        **config.privacy_unit().to_json(),
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
