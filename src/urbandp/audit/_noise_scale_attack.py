"""Attack 1: read the noise scale off a published table (Culnane et al. 2017, section 2 and Appendix D).

Input: pairs ``a, b`` of published counts whose raw values are equal (the Manly ferry's tap-ons and the matching
tap-offs 30 minutes later). Their difference is the difference of two independent noise draws, so the scale is
estimated by maximum likelihood (:func:`urbandp.audit._laplace_math.fit_difference_scale`).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np
import polars as pl

from urbandp._figures import saved_figure
from urbandp.audit._laplace_math import difference_logpdf, discrete_difference_logpmf, fit_difference_scale
from urbandp.errors import InputError


def pair_differences(df: pl.DataFrame, source: str) -> tuple[np.ndarray, int, np.ndarray | None]:
    """The differences ``a - b`` of the pairs ``df``, how many rows were dropped (missing / non-numeric), and the
    route labels; ``source`` names the pairs in error messages."""
    for col in ("a", "b"):
        if col not in df.columns:
            raise InputError(f"{source} needs columns a,b (has {', '.join(df.columns)})")
    df = df.with_columns(
        pl.col("a").cast(pl.Float64, strict=False), pl.col("b").cast(pl.Float64, strict=False)
    )
    # missing, non-numeric, NaN and +-inf values all count as dropped (a NaN/inf count is not a count)
    good = df.drop_nulls(["a", "b"]).filter(pl.col("a").is_finite() & pl.col("b").is_finite())
    if good.height < 2:
        raise InputError(f"{source} needs at least two numeric pairs")
    groups = good["route"].to_numpy() if "route" in good.columns else None
    return (good["a"] - good["b"]).to_numpy(), df.height - good.height, groups


def symmetry_check(u: np.ndarray, groups: np.ndarray | None) -> dict[str, object]:
    """Sign test per route: if the raw counts are really equal, ``a - b`` is symmetric about 0.

    A small p-value means the pairs are *not* equal in the raw data (e.g. daily totals of a wharf that also serves
    other trips), and then the fitted "scale" mixes real differences with noise: an upper bound at best.
    """
    from scipy.stats import binomtest

    labels = groups if groups is not None else np.full(u.size, "all")
    out: dict[str, object] = {}
    for g in dict.fromkeys(labels.tolist()):
        d = u[labels == g]
        nz = d[d != 0]
        pos = int(np.sum(nz > 0))
        p = float(binomtest(pos, int(nz.size), 0.5).pvalue) if nz.size else 1.0
        out[str(g)] = {"n": int(d.size), "positive": pos, "negative": int(nz.size - pos), "sign_test_p": p}
    return out


def noise_scale_attack(
    u: np.ndarray, *, model: str = "continuous", alpha: float = 0.05, groups: np.ndarray | None = None
) -> dict[str, object]:
    if np.all(u == 0):
        return {
            "attack": "noise-scale",
            "scale": 0.0,
            "low": 0.0,
            "high": 0.0,
            "n_pairs": int(u.size),
            "note": "every difference is 0: no noise is visible (or the pairs are copies)",
        }
    fit = fit_difference_scale(u, model=model, alpha=alpha)
    out: dict[str, object] = {"attack": "noise-scale", **asdict(fit)}
    out["ci"] = "profile likelihood (Wilks, chi2_1)"
    out["density"] = (
        "(b + |u|) exp(-|u|/b) / (4 b^2) on the real line (Appendix D, signed difference)"
        if model == "continuous"
        else "difference of two discrete Laplace(b): exact pmf"
    )
    out["mean_abs_difference"] = float(np.mean(np.abs(u)))
    sym = symmetry_check(u, groups)
    out["symmetry"] = sym
    # 5% level, Bonferroni-corrected over routes
    out["raw_equality_plausible"] = all(float(v["sign_test_p"]) >= 0.05 / len(sym) for v in sym.values())  # type: ignore[index]
    if out["raw_equality_plausible"]:
        out["implied_epsilon_per_event"] = 1.0 / fit.scale
    else:
        out["implied_epsilon_per_event"] = None
        out["implied_epsilon_per_event_reason"] = (
            "not computed: the pairs are not equal in the raw data, so 'scale' is not a noise scale"
        )
        out["warning"] = (
            "differences are not symmetric about 0 (sign test, 5% level Bonferroni-corrected over routes): the pairs are not equal in the raw data, "
            "so 'scale' mixes real differences with noise and is not an estimate of the noise scale"
        )
    return out


def difference_axis_label(result: dict[str, object]) -> str:
    """The plot's x label: it claims raw equality only when the sign test does not reject it."""
    if result.get("raw_equality_plausible") is False:
        return "a - b (pairs NOT equal in raw data: sign test rejects symmetry)"
    return "a - b (pairs assumed equal in raw data)"


def plot_differences(u: np.ndarray, result: dict[str, object], path: Path) -> None:
    with saved_figure(path, figsize=(6, 4)) as (_, ax):
        lim = max(1.0, float(np.percentile(np.abs(u), 99)) * 1.2)
        edges = np.arange(-np.ceil(lim) - 0.5, np.ceil(lim) + 1.5, max(1.0, np.ceil(lim / 30)))
        ax.hist(u, bins=edges.tolist(), color="#888", label=f"observed differences (n={u.size})")
        b = float(result["scale"])  # type: ignore[arg-type]
        if b > 0:
            xs = np.linspace(edges[0], edges[-1], 400)
            width = edges[1] - edges[0]
            dens = (
                np.exp(difference_logpdf(xs, b))
                if result.get("model") == "continuous"
                else np.exp(discrete_difference_logpmf(xs, b))
            )
            name = (
                "fitted noise scale" if result.get("raw_equality_plausible") is not False else "fitted spread"
            )
            ax.plot(xs, dens * u.size * width, color="C0", label=f"{name}, b = {b:.3g}")
        ax.set_xlabel(difference_axis_label(result))
        ax.set_ylabel("pairs")
        ax.legend()
