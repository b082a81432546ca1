"""Per-HAT user-level means for the release (Query 1 with a unit-level estimator).

:func:`estimate_hat_means` runs one estimator of :mod:`urbandp.estimators._core` on every (h3_cell, slot) of a
frame that holds, per privacy unit, the unit's speed samples in that HAT. The lead's ``urbandp release
--speed-estimator ...`` calls it and charges ``epsilon_hat`` per HAT to the ledger.

Privacy: docs/estimators.md ("Release integration" and "Privacy"). With ``clipped-mean`` (DP under
add/remove-one-unit), pass the public HAT domain as ``hats`` so that the set of output rows does not reveal which
HATs were visited; a unit in several HATs pays ``epsilon_hat`` in each (the caller composes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from urbandp._privacy.noise import NoiseSource
from urbandp.errors import InputError
from urbandp.estimators._core import BY_NAME, ESTIMATORS, Baseline, MeanEstimate, _Estimator

REQUIRED_COLUMNS: tuple[str, ...] = ("h3_cell", "slot", "unit", "speeds")

OUTPUT_SCHEMA: dict[str, Any] = {
    "h3_cell": pl.String,
    "slot": pl.String,
    "mean_speed": pl.Float64,
    "noise_scale": pl.Float64,
    "epsilon_hat": pl.Float64,
    "n_units": pl.Int64,
    "m_ub": pl.Int64,
    "n_arrays": pl.Int64,
    "sensitivity": pl.Float64,
    "interval_low": pl.Float64,
    "interval_high": pl.Float64,
    "estimator": pl.String,
    "counts_public": pl.Boolean,
}


def build_estimator(estimator: str, upper: float, **params: Any) -> _Estimator:
    """Map the CLI name to a configured estimator (constructor validation turns into :class:`InputError`)."""
    cls = BY_NAME.get(estimator)
    if cls is None:
        raise InputError(f"unknown estimator {estimator!r}; choose one of {', '.join(ESTIMATORS)}")
    try:
        if cls is Baseline and params:
            raise ValueError(f"baseline takes no parameters, got {sorted(params)}")
        return cls(upper=upper, **params)
    except (TypeError, ValueError) as err:
        raise InputError(f"bad parameters for estimator {estimator!r}: {err}") from None


def estimate_hat_means(
    frame: pl.DataFrame,
    estimator: str,
    epsilon: float,
    upper: float,
    noise: NoiseSource,
    *,
    hats: pl.DataFrame | None = None,
    **params: Any,
) -> pl.DataFrame:
    """One private mean speed per (h3_cell, slot).

    ``frame``: columns ``h3_cell`` (str), ``slot`` (str), ``unit`` (str, the privacy unit = the paper's user),
    ``speeds`` (list[f64], the unit's samples in the HAT, in [0, upper]). Several rows of the same unit in the same
    HAT are concatenated. ``estimator``: ``baseline``, ``array-averaging``, ``levy``, ``quantile`` or
    ``clipped-mean``; ``params`` go to its constructor (``grouping``, ``m_ub``, ``gamma``, ``rule``,
    ``n_candidates``, ``m_cap``). ``hats``: optional public domain (columns ``h3_cell``, ``slot``); every HAT in it
    gets a row (only ``clipped-mean`` can estimate an empty HAT; the others refuse one) and HATs of ``frame``
    outside it are dropped.

    Returns one row per HAT (sorted by h3_cell, slot) with ``mean_speed``, ``noise_scale`` (of the final Laplace
    step), ``epsilon_hat`` (OpenDP-mapped epsilon of all sub-steps of that HAT, summed), ``n_units`` (null for
    ``clipped-mean``: the true number of units is not private there), ``m_ub`` (privately chosen for
    ``clipped-mean``) and ``n_arrays`` (null for baseline and clipped-mean), ``sensitivity``, the clipping interval, the estimator label and
    ``counts_public`` (always true: the assumption under which the guarantee holds).
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"estimate_hat_means: missing column(s) {', '.join(missing)}")
    if not (epsilon > 0 and np.isfinite(epsilon)):
        raise InputError(f"epsilon must be finite and > 0, got {epsilon}")
    est = build_estimator(estimator, float(upper), **params)
    grouped = (
        frame.select(
            pl.col("h3_cell").cast(pl.String),
            pl.col("slot").cast(pl.String),
            pl.col("unit").cast(pl.String),
            pl.col("speeds").cast(pl.List(pl.Float64)),
        )
        .explode("speeds")
        .drop_nulls("speeds")
        .group_by("h3_cell", "slot", "unit", maintain_order=True)
        .agg(pl.col("speeds"))
        .sort("h3_cell", "slot", "unit")
    )
    by_hat = {
        (cell, slot): [np.asarray(v, dtype=float) for v in part["speeds"].to_list()]
        for (cell, slot), part in grouped.group_by("h3_cell", "slot", maintain_order=True)
    }
    if hats is None:
        keys = list(by_hat)
    else:
        missing_dom = [c for c in ("h3_cell", "slot") if c not in hats.columns]
        if missing_dom:
            raise InputError(f"estimate_hat_means: hats is missing column(s) {', '.join(missing_dom)}")
        dom = (
            hats.select(pl.col("h3_cell").cast(pl.String), pl.col("slot").cast(pl.String))
            .unique()
            .sort("h3_cell", "slot")
        )
        keys = list(dom.iter_rows())
    rows: list[dict[str, Any]] = []
    for cell, slot in keys:
        values = by_hat.get((cell, slot), [])
        try:
            res: MeanEstimate = est.estimate(values, epsilon, noise)
        except ValueError as err:
            raise InputError(f"HAT ({cell}, {slot}): {err}") from None
        rows.append(
            {
                "h3_cell": cell,
                "slot": slot,
                "mean_speed": res.estimate,
                "noise_scale": res.noise_scale,
                "epsilon_hat": res.epsilon_spent,
                "n_units": res.n_units
                if res.counts_public
                else None,  # the true count is not DP under add/remove
                "m_ub": res.m_ub,
                "n_arrays": res.n_arrays,
                "sensitivity": res.sensitivity,
                "interval_low": res.interval[0],
                "interval_high": res.interval[1],
                "estimator": res.estimator,
                "counts_public": res.counts_public,
            }
        )
    return pl.DataFrame(rows, schema=OUTPUT_SCHEMA)
