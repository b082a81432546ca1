"""The suppression threshold to use: the smallest that keeps the expected noise-only cells at most a stated number.

A cell whose raw count is 0 gets noise X like every cell (docs/design.md rule 4) and is published when its noisy
value reaches the threshold ``t``: with probability ``P(X >= t)`` (discrete Laplace of scale ``b``:
``a^t / (1 + a)``, ``a = exp(-1/b)``; :mod:`urbandp.counts._tails`). Its published value is then pure noise. Over
a domain of ``n`` cells at most ``n`` are raw zeros, so at most ``n P(X >= t)`` noise-only cells are expected
(Cormode et al. 2012, section 4: the number published is Binomial(zeros, P(X >= t))).

:func:`recommended_threshold` is the smallest integer ``t >= 1`` with ``n P(X >= t) <= at_most``. It depends on
the noise law only through the scale, which the unit and epsilon set (``card-day`` of ``k`` events at epsilon 1:
``b = k``), and on the public domain's size: public parameters only, so stating it discloses nothing and costs
no budget. ``urbandp counts release --dry-run`` states it before any data is read; a release states, in
``privacy.json`` ``suppression``, the threshold that keeps its own domain below one noise-only cell.
"""

from __future__ import annotations

from urbandp._privacy.bisection import smallest_passing
from urbandp.counts._tails import IntegerNoise
from urbandp.errors import Advice

AT_MOST = 1.0
"""The expected number of noise-only cells the recommendation allows (one over the whole domain)."""


def expected_noise_only(law: IntegerNoise, threshold: int, n_cells: int) -> float:
    """Upper bound on the expected number of published cells whose raw count is 0: ``n_cells P(X >= t)``."""
    return n_cells * law.tail_float(threshold)


def recommended_threshold(law: IntegerNoise, n_cells: int, at_most: float = AT_MOST) -> int:
    """The smallest integer ``t >= 1`` with ``n_cells P(X >= t) <= at_most`` (``P`` falls with ``t``: doubling
    then bisection, exact on the tail intervals' midpoints as :func:`expected_noise_only` states them)."""
    if not at_most > 0:
        raise ValueError(f"at_most must be > 0, got {at_most}")
    if expected_noise_only(law, 1, n_cells) <= at_most:
        return 1
    lo, hi = 1, 2  # expected(lo) > at_most throughout
    while expected_noise_only(law, hi, n_cells) > at_most:
        lo, hi = hi, hi * 2
    return smallest_passing(lambda t: expected_noise_only(law, t, n_cells) <= at_most, lo, hi)


def advice(law: IntegerNoise, n_cells: int, at_most: float = AT_MOST) -> dict[str, object]:
    """The recommendation as ``--dry-run`` prints it: the threshold, what it lets through, from what."""
    t = recommended_threshold(law, n_cells, at_most)
    p = law.tail_float(t)
    return {
        "recommended_suppress_below": t,
        "noise_only_publish_probability": p,
        "expected_noise_only_cells_at_most": n_cells * p,
        "target_expected_noise_only_cells": at_most,
        "cells": n_cells,
        "noise": law.mechanism,
        "noise_scale": law.scale,
        "note": "the smallest threshold at which at most the target number of published cells are expected to "
        "be pure noise on a raw zero; from the noise scale (set by the unit and epsilon) and the domain's "
        "size only (public)",
    }


def advice_line(advised: dict[str, object], unit: object) -> Advice:
    """The advice in one line, as ``counts release --dry-run`` prints it on stderr (from :func:`advice`)."""
    return Advice(
        f"suppress_below={advised['recommended_suppress_below']} keeps the expected noise-only cells at most "
        f"{advised['target_expected_noise_only_cells']:g} ({advised['expected_noise_only_cells_at_most']:.2g} over "
        f"{advised['cells']:,} cells at noise scale {advised['noise_scale']:g}, unit {unit})",
        parameters="suppress_below",
    )
