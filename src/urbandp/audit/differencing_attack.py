"""Attack 3: recover suppressed joint cells from a marginal (Culnane et al. 2017, section 4 and Appendix E).

For a marginal row ``M`` (e.g. all ferry tap-offs at 00:00) and the joint rows of the same group that were
published (``J_1..J_n``), ``gap = M - sum J_i`` estimates the total of the group's hidden (suppressed) cells.

* Marginal released *independently* from raw data (the Opal release): ``gap - hidden = L_M - sum L_i``, a sum of
  ``n + 1`` independent Laplace terms. The interval ``gap +- a`` with ``a`` the exact ``1 - alpha/2`` quantile of
  that sum (:class:`urbandp.audit.laplace_math.LaplaceSum`) has coverage exactly ``1 - alpha`` for any number of
  terms. The report's Theorem 5 (``p log(1/(4 alpha))`` for three terms) is too narrow: see
  :func:`urbandp.audit.laplace_math.theorem5_halfwidth`.
* Marginal *derived from the noisy joint* (urbandp): ``gap`` is exactly the sum of the hidden cells' own noisy
  values, i.e. what a release without suppression would have shown. The attacker gains nothing beyond the noise
  the DP release already accounts for; the interval uses only the hidden cells' noise terms.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl

from urbandp.audit.laplace_math import LaplaceSum, theorem5_halfwidth
from urbandp.audit.tables import PublishedTable
from urbandp.errors import InputError


def differencing_attack(
    joint: PublishedTable,
    marginal: PublishedTable,
    *,
    scale: float,
    marginal_scale: float | None = None,
    alpha: float = 0.05,
    marginals_derived: bool = False,
    max_cells: int = 1000,
    include_all: bool = False,
) -> dict[str, object]:
    """Difference every marginal row against its published joint rows (see module docstring).

    Rounding: when every published value is an integer and the marginal is independent, each of the ``n`` terms
    carries a rounding error of at most 1/2, so the interval is widened by ``n/2`` -- coverage stays at least
    ``1 - alpha`` whatever the rounding did. ``include_all`` lists groups whose interval contains 0 too.
    """
    if not 0 < alpha < 1:
        raise InputError(f"--alpha must be in (0, 1), got {alpha}")
    if not (scale > 0 and math.isfinite(scale)):
        raise InputError(f"--scale must be a positive finite number (or come from privacy.json), got {scale}")
    if marginal_scale is not None and not (marginal_scale > 0 and math.isfinite(marginal_scale)):
        raise InputError(f"--marginal-scale must be a positive finite number, got {marginal_scale}")
    group = [k for k in marginal.keys]
    missing = [k for k in group if k not in joint.keys]
    if missing:
        raise InputError(
            f"marginal columns {', '.join(missing)} are not in the joint table ({', '.join(joint.keys)})"
        )
    extra = [k for k in joint.keys if k not in group]
    if not extra:
        raise InputError("the joint table has no column beyond the marginal's: nothing to difference")
    m_scale = scale if marginal_scale is None else marginal_scale
    agg = joint.table.group_by(group).agg(
        visible_sum=pl.col("count").sum(),
        n_visible=pl.col("count").is_not_null().sum(),
        n_suppressed=pl.col("count").is_null().sum(),
        suppressed_cells=pl.concat_str([pl.col(c) for c in extra], separator="/").filter(
            pl.col("count").is_null()
        ),
    )
    merged = (
        marginal.table.drop_nulls("count")
        .join(agg, on=group, how="left")
        .with_columns(
            pl.col("visible_sum").fill_null(0.0),
            pl.col("n_visible").fill_null(0),
            pl.col("n_suppressed").fill_null(0),
        )
    )
    merged = merged.with_columns(gap=pl.col("count") - pl.col("visible_sum"))
    values = pl.concat([joint.table["count"].drop_nulls(), marginal.table["count"].drop_nulls()])
    rounded = bool((values.round(0) == values).all()) and not marginals_derived
    cache: dict[tuple[int, int], float] = {}
    cells: list[dict[str, object]] = []
    n_recoverable = 0
    no_joint = 0
    for row in merged.iter_rows(named=True):
        n_vis, n_sup = int(row["n_visible"]), int(row["n_suppressed"])
        if n_vis == 0 and n_sup == 0:
            no_joint += 1  # the joint table does not cover this group: nothing to difference
            continue
        if marginals_derived:
            if n_sup == 0:
                continue
            key = (0, n_sup)
            terms = [scale] * n_sup
        else:
            key = (n_vis, 1)
            terms = [m_scale] + [scale] * n_vis
        if key not in cache:
            cache[key] = LaplaceSum(terms).central_halfwidth(alpha)
        a = cache[key] + (0.5 * len(terms) if rounded else 0.0)
        gap = float(row["gap"])
        low, high = gap - a, gap + a
        recoverable = low > 0
        if not recoverable and not marginals_derived and not include_all:
            continue
        n_recoverable += int(recoverable)
        if len(cells) < max_cells:
            cells.append(
                {
                    **{k: row[k] for k in group},
                    "hidden_cells": row["suppressed_cells"] or "unknown (rows absent from the joint table)",
                    "estimate": gap,
                    "low": low,
                    "high": high,
                    "n_noise_terms": len(terms),
                    "recoverable": recoverable,
                }
            )
    out: dict[str, object] = {
        "attack": "differencing",
        "alpha": alpha,
        "scale": scale,
        "marginal_scale": m_scale,
        "marginals": "derived from the noisy joint" if marginals_derived else "released independently",
        "groups_checked": merged.height,
        "groups_without_joint_rows": no_joint,
        "groups_with_recoverable_hidden_count": n_recoverable,
        "interval": "exact quantile of a sum of independent Laplace terms"
        + (" + 1/2 per rounded term" if rounded else ""),
        "cells": cells,
        "cells_truncated": max(0, n_recoverable - len(cells)) if not marginals_derived else None,
        "groups_differenced": merged.height - no_joint,
        "gain_beyond_noise": None
        if merged.height == no_joint
        else (not marginals_derived and n_recoverable > 0),
    }
    if merged.height == no_joint:
        out["gain_beyond_noise_reason"] = "nothing was differenced: the joint table covers none of the groups"
    if marginals_derived:
        out["finding"] = (
            "nothing beyond the noise: each estimate equals the noisy value the DP joint table already holds for "
            "the suppressed cells (suppression after noise is post-processing)"
        )
    else:
        out["finding"] = (
            f"{n_recoverable} marginal groups expose a positive hidden count at level {1 - alpha:g}"
        )
        if merged.height and no_joint == merged.height:
            out["finding"] = (
                "the joint table covers none of the marginal's groups (different days or places?)"
            )
        out["theorem5_halfwidth_three_terms"] = theorem5_halfwidth(scale, alpha)
        out["exact_halfwidth_three_terms"] = LaplaceSum([scale] * 3).central_halfwidth(alpha)
    return out


def plot_cells(result: dict[str, object], path: str | Path, limit: int = 40) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    raw = result.get("cells")
    cells: list[dict[str, Any]] = list(raw)[:limit] if isinstance(raw, list) else []
    fig, ax = plt.subplots(figsize=(7, 0.3 * max(len(cells), 4) + 1.2))
    for i, c in enumerate(cells):
        ax.errorbar(
            c["estimate"],
            i,
            xerr=[[c["estimate"] - c["low"]], [c["high"] - c["estimate"]]],
            fmt="o",
            color="C3",
        )
    ax.axvline(0, color="#999", lw=0.8)
    ax.set_yticks(range(len(cells)))
    ax.set_yticklabels([str(c.get("hidden_cells"))[:40] for c in cells], fontsize=7)
    ax.set_xlabel(f"estimated hidden count, {1 - float(result['alpha']):.0%} interval")  # type: ignore[arg-type]
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
