"""Attack 2: were zeros skipped? (Culnane et al. 2017, section 3, Theorem 1 and Appendix C.)

If a release skips zero cells and suppresses noisy values ``<= t``, any published value ``> t`` proves the raw cell
was non-zero: a suspected individual alone at a quiet stop is detected *with certainty* with probability
``P(1 + L > t)``. Theorem 1: no epsilon works and ``delta >= exp(-(t-1)/p) / (2p)``. That expression is the
Laplace *density* at ``t - 1``; the exact probability of the distinguishing event is ``exp(-(t-1)/p) / 2``
(it is larger than the report's bound when ``p > 1`` and smaller when ``p < 1``, so for ``p < 1`` the printed
bound overstates what the proof shows). Both are reported. For a group of ``g`` travellers the detection
probability is ``P(g + L > t) = exp(-(t-g)/p)/2`` for ``g <= t``. The report's figures at p = 1.4 (2e-6 and
0.005 for g = 1 and 12) follow the density convention ``exp(-(t-g)/p)/(2p)``; its 4e-5 for g = 5 matches the exact
probability (4.6e-5) rather than the density (3.3e-5).

From a table alone one can only tell whether it is *consistent* with skipping zeros (no published value in
``(-inf, t)`` other than 0; exactly ``t`` can appear after rounding); the declared method (``privacy.json`` or
``--method``) settles it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import cast

import numpy as np

from urbandp._figures import saved_figure


def detection_probability(g: int, t: float, p: float) -> float:
    """``P(g + L > t)`` for ``L ~ Laplace(0, p)``: a group of ``g`` pushes a skipped-zero cell above ``t``."""
    if g > t:
        return 1.0 - 0.5 * math.exp(-(g - t) / p)
    return 0.5 * math.exp(-(t - g) / p)


def paper_detection_figure(g: int, t: float, p: float) -> float:
    """The report's convention ``exp(-(t-g)/p) / (2p)`` (Theorem 1 with ``g = 1``).

    It is the Laplace *density* at ``t - g``, not a probability: it exceeds 1 when ``p < 1/2`` and ``g`` is
    close to ``t``, and for ``g > t`` the formula means nothing. :func:`detection_curves` plots it only where it
    is a sensible figure (``g <= t`` and at most 1) and labels it as a density.
    """
    return math.exp(-(t - g) / p) / (2 * p)


def detection_curves(t: float, p: float, max_group: int) -> dict[str, tuple[list[int], list[float]]]:
    """The plotted curves: the exact probability ``P(g + L > t)`` for ``g = 1..max_group``, and the report's
    density convention for the ``g <= t`` where it is ``<= 1`` (a value above 1 cannot sit on a probability axis)."""
    gs = list(range(1, max_group + 1))
    exact = [detection_probability(g, t, p) for g in gs]
    keep = [g for g in gs if g <= t and paper_detection_figure(g, t, p) <= 1.0]
    return {
        "P(g + L > t) (exact probability)": (gs, exact),
        "report's figure exp(-(t-g)/p)/(2p) (a density; shown where <= 1, g <= t)": (
            keep,
            [paper_detection_figure(g, t, p) for g in keep],
        ),
    }


def _declared_method(method: str, privacy: dict[str, object] | None) -> str:
    """``method``, or with ``auto`` the one privacy.json declares (``unknown`` without privacy.json)."""
    if method != "auto":
        return method
    return "unknown" if privacy is None else str(privacy.get("method", "unknown"))


def _decision(declared: str, zeros_perturbed: object, small: int) -> tuple[bool, bool | None, str, str]:
    """(zeros may be skipped, vulnerable (None: cannot tell), verdict, basis).

    A declared method settles it; without one, a table with ``small`` published values in (-inf, t) other than 0
    cannot be the Second Algorithm's output with this threshold, and one with none cannot rule out skipped zeros.
    """
    if declared == "data61-2016" or zeros_perturbed is False:
        return (
            True,
            True,
            "vulnerable (declared method skips zeros)",
            "declared method skips zeros (Data61 2016 Second Algorithm)",
        )
    if zeros_perturbed is True or declared == "urbandp":
        return (
            False,
            False,
            "not vulnerable (declared: zeros are perturbed)",
            "declared: every cell of a public domain, zeros included, gets OpenDP noise",
        )
    if small == 0:
        return (
            True,
            None,
            "cannot be ruled out (no declared method; the table is consistent with skipped zeros)",
            "undeclared method; the table has no published value in (-inf, t) other than 0, so skipped zeros "
            "cannot be ruled out",
        )
    return (
        False,
        False,
        "not the Second Algorithm with this threshold (values below t are published)",
        f"undeclared method; {small} published values lie in (-inf, t) (noise reached small cells), "
        "which the Second Algorithm with this threshold cannot output",
    )


def _exposure_without_skipping(eps: object, group_sizes: tuple[int, ...]) -> dict[str, object]:
    """Zeros are perturbed: no output rules out a neighbour, so no delta and no certain detection; the likelihood
    ratio per unit is ``exp(epsilon)`` where privacy.json states epsilon."""
    out: dict[str, object] = {
        "delta_lower_bound_theorem1": 0.0,
        "delta_lower_bound_exact": 0.0,
        "certain_detection_probability": [{"group_size": g, "probability": 0.0} for g in group_sizes],
    }
    if isinstance(eps, (int, float)):
        out["max_likelihood_ratio_per_unit"] = math.exp(float(eps))
    out["finding"] = "nothing: no output rules out a neighbouring dataset (zeros are perturbed)"
    return out


def _exposure_with_skipping(
    threshold: float, scale: float, group_sizes: tuple[int, ...], vulnerable: bool | None
) -> dict[str, object]:
    """Zeros may be skipped, noise scale ``p`` known: Theorem 1's bound ``exp(-(t-1)/p) / (2p)`` beside the exact
    ``exp(-(t-1)/p) / 2``, and ``P(g + L > t)`` per group size (module docstring)."""
    out: dict[str, object] = {
        "delta_lower_bound_theorem1": math.exp(-(threshold - 1) / scale) / (2 * scale),
        "delta_lower_bound_exact": 0.5 * math.exp(-(threshold - 1) / scale),
        "certain_detection_probability": [
            {
                "group_size": g,
                "probability": detection_probability(g, threshold, scale),
                "paper_convention": paper_detection_figure(g, threshold, scale),
            }
            for g in group_sizes
        ],
        "max_likelihood_ratio_per_unit": None,
        "max_likelihood_ratio_per_unit_reason": (
            "unbounded (infinite) if zeros are skipped: a published value > t is impossible from a zero cell"
        ),
    }
    finding = (
        f"not epsilon-DP for any epsilon: a published value > {threshold:g} proves a non-zero raw count; "
        f"an individual alone in a cell is detected with certainty with probability "
        f"{detection_probability(1, threshold, scale):.3g}"
    )
    if vulnerable is None:
        finding = (
            "skipped zeros cannot be ruled out (no declared method). IF zeros were skipped, the release is "
            + finding
        )
        out["note"] = "the delta bound and detection probabilities below hold only if zeros were skipped"
    out["finding"] = finding
    return out


def zero_skipping_attack(
    counts: np.ndarray,
    *,
    threshold: float,
    method: str,
    scale: float | None,
    privacy: dict[str, object] | None = None,
    group_sizes: tuple[int, ...] = (1, 5, 12),
) -> dict[str, object]:
    """Decide whether zeros could have been skipped and what that exposes."""
    values = counts[np.isfinite(counts)]
    nonzero = values[values != 0]
    small = int(np.sum(nonzero < threshold))  # released iff noisy > t, then rounded: t itself can appear
    declared = _declared_method(method, privacy)
    zeros_perturbed = privacy.get("zeros_perturbed") if privacy else None
    may_skip, vulnerable, verdict, basis = _decision(declared, zeros_perturbed, small)
    out: dict[str, object] = {
        "attack": "zero-skipping",
        "threshold": threshold,
        "declared_method": declared,
        "cells_published": int(values.size),
        "cells_missing_or_suppressed": int(counts.size - values.size) + int(np.sum(values == 0)),
        "published_values_below_threshold": small,
        "negative_values": int(np.sum(nonzero < 0)),
        "consistent_with_second_algorithm": small == 0,
        "zeros_may_be_skipped": may_skip,
        "basis": basis,
        "scale": scale,
        "vulnerable": vulnerable,
        "verdict": verdict,
    }
    if not may_skip:
        return out | _exposure_without_skipping(privacy.get("epsilon") if privacy else None, group_sizes)
    if scale is None or scale <= 0:
        out["finding"] = (
            "zeros may be skipped; noise scale unknown (estimate it with the noise-scale attack, or give scale)"
        )
        out["delta_lower_bound_theorem1"] = None
        return out
    return out | _exposure_with_skipping(threshold, scale, group_sizes, vulnerable)


def plot_detection(result: dict[str, object], path: str | Path) -> None:
    t, p = float(cast(float, result["threshold"])), cast("float | None", result.get("scale"))
    with saved_figure(path, figsize=(6, 4)) as (_, ax):
        if result.get("zeros_may_be_skipped") and p:
            for (label, (gs, ys)), style in zip(
                detection_curves(t, float(p), int(t) + 3).items(), ("o-", "x--"), strict=True
            ):
                if gs:
                    ax.semilogy(gs, ys, style, label=label)
            ax.set_ylim(top=1.0)
            ax.legend(fontsize=7)
            if result.get("vulnerable") is None:
                ax.set_title("IF zeros were skipped (cannot be ruled out)", fontsize=9)
        else:
            ax.text(0.5, 0.5, "zeros perturbed: no certain detection", ha="center", transform=ax.transAxes)
        ax.set_xlabel("group size g")
        ax.set_ylabel("probability of certain detection")
