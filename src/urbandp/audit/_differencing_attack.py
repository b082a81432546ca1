"""Attack 3: recover suppressed joint cells from a marginal (Culnane et al. 2017, section 4 and Appendix E).

For a marginal row ``M`` (e.g. all ferry tap-offs at 00:00) and the joint rows of the same group that were
published (``J_1..J_n``), ``gap = M - sum J_i`` estimates the total of the group's hidden (suppressed) cells.

* Marginal released *independently* from raw data (the Opal release): ``gap - hidden = L_M - sum L_i``, a sum of
  ``n + 1`` independent Laplace terms. The interval ``gap +- a`` with ``a`` the exact ``1 - alpha/2`` quantile of
  that sum (:class:`urbandp.audit._laplace_math.LaplaceSum`) has coverage exactly ``1 - alpha`` for any number of
  terms. The report's Theorem 5 (``p log(1/(4 alpha))`` for three terms) is too narrow: see
  :func:`urbandp.audit._laplace_math.theorem5_halfwidth`.
* Marginal *derived from the noisy joint* (urbandp): ``gap`` is exactly the sum of the hidden cells' own noisy
  values, i.e. what a release without suppression would have shown. The attacker gains nothing beyond the noise
  the DP release already accounts for; the interval uses only the hidden cells' noise terms.

Noise alone flags some groups: where nothing is hidden, an interval lies above 0 with probability at most
``alpha / 2`` (coverage at least ``1 - alpha``, symmetric noise), and the groups of a marginal are independent
(disjoint cells, independent marginal noise). Over ``G`` differenced groups at most ``G alpha / 2`` are expected
flagged by chance (``expected_flagged_by_noise_alone_at_most``); ``gain_beyond_noise`` is true only when the
number flagged is above what noise alone gives at level ``alpha`` (binomial tail ``P(Bin(G, alpha/2) >= k) <
alpha``, ``p_value_noise_alone``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from urbandp._figures import saved_figure
from urbandp.audit._laplace_math import LaplaceSum, theorem5_halfwidth
from urbandp.audit._tables import PublishedTable
from urbandp.errors import InputError


@dataclass(frozen=True)
class _Setting:
    """How one attack turns a gap into an interval: the noise scales of the joint (``scale``) and the marginal,
    the level ``1 - alpha``, how the marginal was released, and whether every published value is an integer."""

    scale: float
    marginal_scale: float
    alpha: float
    marginals_derived: bool
    rounded: bool

    def noise_terms(self, n_visible: int, n_suppressed: int) -> list[float] | None:
        """The Laplace scales of ``gap - hidden`` for a group (module docstring); None: nothing to estimate.

        Independent marginal: its own term and one per visible joint row (``n + 1`` terms). Derived marginal: one
        term per hidden cell, none when the group hides nothing.
        """
        if self.marginals_derived:
            return [self.scale] * n_suppressed if n_suppressed else None
        return [self.marginal_scale] + [self.scale] * n_visible


@dataclass
class _Tally:
    """What differencing the groups found: the listed ``cells``, the groups whose hidden count is positive at
    level ``1 - alpha`` (``recoverable``), and the groups the joint table does not cover (``no_joint``)."""

    cells: list[dict[str, object]] = field(default_factory=list)
    recoverable: int = 0
    no_joint: int = 0


def _key_columns(joint: PublishedTable, marginal: PublishedTable) -> tuple[list[str], list[str]]:
    """(the marginal's group columns, the joint's columns beyond them), or :class:`InputError`."""
    group = [k for k in marginal.keys]
    missing = [k for k in group if k not in joint.keys]
    if missing:
        raise InputError(
            f"marginal columns {', '.join(missing)} are not in the joint table ({', '.join(joint.keys)})"
        )
    extra = [k for k in joint.keys if k not in group]
    if not extra:
        raise InputError("the joint table has no column beyond the marginal's: nothing to difference")
    return group, extra


def _gaps(
    joint: PublishedTable, marginal: PublishedTable, group: list[str], extra: list[str]
) -> pl.DataFrame:
    """Each published marginal row with ``gap = M - sum J_i`` over its group's visible joint rows, the numbers of
    visible and suppressed joint rows, and the suppressed cells' names (``extra`` values joined by ``/``)."""
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
    return merged.with_columns(gap=pl.col("count") - pl.col("visible_sum"))


def _integer_valued(joint: PublishedTable, marginal: PublishedTable) -> bool:
    """Whether every published value of both tables is an integer (then each was rounded)."""
    values = pl.concat([joint.table["count"].drop_nulls(), marginal.table["count"].drop_nulls()])
    return bool((values.round(0) == values).all())


def _difference(
    merged: pl.DataFrame, group: list[str], setting: _Setting, *, include_all: bool, max_cells: int
) -> _Tally:
    """The interval ``gap +- a`` of each group (``a``: the exact ``1 - alpha/2`` quantile of the sum of its noise
    terms, :class:`LaplaceSum`, plus 1/2 per rounded term); the first ``max_cells`` listed groups as cells."""
    cache: dict[tuple[float, ...], float] = {}
    tally = _Tally()
    for row in merged.iter_rows(named=True):
        n_vis, n_sup = int(row["n_visible"]), int(row["n_suppressed"])
        if n_vis == 0 and n_sup == 0:
            tally.no_joint += 1  # the joint table does not cover this group: nothing to difference
            continue
        terms = setting.noise_terms(n_vis, n_sup)
        if terms is None:
            continue
        key = tuple(terms)
        if key not in cache:
            cache[key] = LaplaceSum(terms).central_halfwidth(setting.alpha)
        a = cache[key] + (0.5 * len(terms) if setting.rounded else 0.0)
        gap = float(row["gap"])
        low, high = gap - a, gap + a
        recoverable = low > 0
        if not recoverable and not setting.marginals_derived and not include_all:
            continue
        tally.recoverable += int(recoverable)
        if len(tally.cells) < max_cells:
            tally.cells.append(
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
    return tally


def _noise_alone(setting: _Setting, differenced: int, flagged: int) -> tuple[float, float]:
    """(the groups noise alone flags at most in expectation, the binomial p-value of ``flagged`` or more)."""
    from scipy import stats

    rate = setting.alpha / 2.0
    p_value = float(stats.binom.sf(flagged - 1, differenced, rate)) if flagged > 0 else 1.0
    return differenced * rate, p_value


def _report(setting: _Setting, groups: int, tally: _Tally) -> dict[str, object]:
    """The attack's result from the ``groups`` marginal rows checked and what differencing them found."""
    derived, n_recoverable, no_joint = setting.marginals_derived, tally.recoverable, tally.no_joint
    by_chance, p_value = _noise_alone(setting, groups - no_joint, n_recoverable)
    beyond = n_recoverable > 0 and p_value < setting.alpha
    out: dict[str, object] = {
        "attack": "differencing",
        "alpha": setting.alpha,
        "scale": setting.scale,
        "marginal_scale": setting.marginal_scale,
        "marginals": "derived from the noisy joint" if derived else "released independently",
        "groups_checked": groups,
        "groups_without_joint_rows": no_joint,
        "groups_with_recoverable_hidden_count": n_recoverable,
        "interval": "exact quantile of a sum of independent Laplace terms"
        + (" + 1/2 per rounded term" if setting.rounded else ""),
        "cells": tally.cells,
        "cells_truncated": max(0, n_recoverable - len(tally.cells)) if not derived else None,
        "groups_differenced": groups - no_joint,
        "expected_flagged_by_noise_alone_at_most": None if derived else by_chance,
        "p_value_noise_alone": None if derived else p_value,
        "gain_beyond_noise": None if groups == no_joint else (not derived and beyond),
    }
    if groups == no_joint:
        out["gain_beyond_noise_reason"] = "nothing was differenced: the joint table covers none of the groups"
    out.update(_finding(setting, groups, tally, by_chance, beyond))
    return out


def _finding(
    setting: _Setting, groups: int, tally: _Tally, by_chance: float, beyond: bool
) -> dict[str, object]:
    """The ``finding`` in words; for an independent marginal also the report's Theorem 5 half-width for three
    terms beside the exact one (:func:`theorem5_halfwidth`)."""
    if setting.marginals_derived:
        return {
            "finding": "nothing beyond the noise: each estimate equals the noisy value the DP joint table already "
            "holds for the suppressed cells (suppression after noise is post-processing)"
        }
    level = f"{1 - setting.alpha:g}"
    finding = (
        f"{tally.recoverable} marginal groups expose a positive hidden count at level {level} (noise alone "
        f"would flag at most {by_chance:.1f})"
    )
    if tally.recoverable and not beyond:
        finding = (
            f"{tally.recoverable} marginal groups have an interval above 0 at level {level}, no more than noise "
            f"alone flags (at most {by_chance:.1f} of {groups - tally.no_joint} expected): no evidence of hidden "
            "counts"
        )
    if groups and tally.no_joint == groups:
        finding = "the joint table covers none of the marginal's groups (different days or places?)"
    return {
        "finding": finding,
        "theorem5_halfwidth_three_terms": theorem5_halfwidth(setting.scale, setting.alpha),
        "exact_halfwidth_three_terms": LaplaceSum([setting.scale] * 3).central_halfwidth(setting.alpha),
    }


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
    group, extra = _key_columns(joint, marginal)
    setting = _Setting(
        scale=scale,
        marginal_scale=scale if marginal_scale is None else marginal_scale,
        alpha=alpha,
        marginals_derived=marginals_derived,
        rounded=_integer_valued(joint, marginal) and not marginals_derived,
    )
    merged = _gaps(joint, marginal, group, extra)
    tally = _difference(merged, group, setting, include_all=include_all, max_cells=max_cells)
    return _report(setting, merged.height, tally)


def plot_cells(result: dict[str, object], path: str | Path, limit: int = 40) -> None:
    raw = result.get("cells")
    cells: list[dict[str, Any]] = list(raw)[:limit] if isinstance(raw, list) else []
    with saved_figure(path, figsize=(7, 0.3 * max(len(cells), 4) + 1.2)) as (_, ax):
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
