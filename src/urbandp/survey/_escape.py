"""Escape analysis: how many perturbed points leave their block (travel-survey report section 5, Figs. 14-21).

A utility *simulation* (Monte Carlo with numpy noise), not a release: no release module imports this one, and
its outputs are computed from the true locations, so they are data-owner material (not DP).

Blocks are cells of a uniform N x N grid over the points' bounding box, of a non-uniform grid whose lines sit at
Gaussian quantiles (small blocks near the dense centre, report Fig. 17), or arbitrary polygons (GeoJSON, via
shapely). Points get per-axis Laplace noise of scale b (in units of the bounding box side for grids, metres for
polygons). Measured: the share of points whose block changes and the share of occupied blocks whose population
is unchanged. For the uniform grid the escape share depends on b and N only through b * N (the Laplace scale over the
grid spacing), so the curves for different N collapse (report Fig. 15).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import norm

from urbandp._figures import saved_figure
from urbandp.errors import InputError


@dataclass(frozen=True)
class EscapeResult:
    layout: str
    n: int
    scale: float
    escape_share: float
    unchanged_block_share: float


def gaussian_edges(values: np.ndarray, n: int) -> np.ndarray:
    """N + 1 grid lines at Gaussian quantiles fitted to ``values`` (normalised to [0, 1]); ends at 0 and 1."""
    mu, sd = float(np.mean(values)), float(np.std(values)) or 1.0
    inner = norm.ppf(np.linspace(0.0, 1.0, n + 1)[1:-1], loc=mu, scale=sd)
    return np.concatenate([[0.0], np.clip(np.sort(inner), 0.0, 1.0), [1.0]])


def _cells(x: np.ndarray, y: np.ndarray, ex: np.ndarray, ey: np.ndarray) -> np.ndarray:
    n = ex.size - 1
    i = np.clip(np.searchsorted(ex, x, side="right") - 1, 0, n - 1)
    j = np.clip(np.searchsorted(ey, y, side="right") - 1, 0, n - 1)
    outside = (x < 0) | (x > 1) | (y < 0) | (y > 1)
    cell = (i * n + j).astype(np.int64)
    cell[outside] = -1  # left the study area: a block of its own
    return cell


def _mean_shares(
    block: Callable[[np.ndarray, np.ndarray], np.ndarray],
    before: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    blocks: int,
    scale: float,
    runs: int,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """Over ``runs`` draws of per-axis Laplace noise of scale ``scale``: the mean share of points whose ``block``
    changes from ``before``, and of occupied blocks whose population is unchanged (empty blocks staying empty are
    not counted as "unchanged")."""
    cb = np.bincount(before[before >= 0], minlength=blocks)
    occupied = cb > 0
    esc, unch = [], []
    for _ in range(runs):
        after = block(x + rng.laplace(0, scale, x.size), y + rng.laplace(0, scale, y.size))
        ca = np.bincount(after[after >= 0], minlength=blocks)
        esc.append(np.mean(before != after))
        unch.append(np.mean(cb[occupied] == ca[occupied]))
    return float(np.mean(esc)), float(np.mean(unch))


def normalise(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Map points into the unit square of their bounding box."""
    if x.size == 0:
        raise InputError("no points to analyse")
    wx = float(np.ptp(x)) or 1.0
    wy = float(np.ptp(y)) or 1.0
    return (x - x.min()) / wx, (y - y.min()) / wy


def grid_escape(
    x: np.ndarray,
    y: np.ndarray,
    n: int,
    scale: float,
    layout: str = "uniform",
    runs: int = 10,
    rng: np.random.Generator | None = None,
) -> EscapeResult:
    """Escape shares on an N x N grid over the unit square for per-axis Laplace noise of scale ``scale``."""
    ex = np.linspace(0.0, 1.0, n + 1) if layout == "uniform" else gaussian_edges(x, n)
    ey = np.linspace(0.0, 1.0, n + 1) if layout == "uniform" else gaussian_edges(y, n)

    def block(px: np.ndarray, py: np.ndarray) -> np.ndarray:
        return _cells(px, py, ex, ey)

    shares = _mean_shares(block, block(x, y), x, y, n * n, scale, runs, rng or np.random.default_rng(0))
    return EscapeResult(layout, n, scale, *shares)


def sweep(
    x: np.ndarray,
    y: np.ndarray,
    grids: Sequence[int],
    bn_values: Sequence[float],
    layouts: Sequence[str] = ("uniform", "gaussian"),
    runs: int = 10,
    seed: int = 0,
) -> list[EscapeResult]:
    """Escape shares for every grid size and lumped parameter b * N (scale = bN / N)."""
    rng = np.random.default_rng(seed)
    return [
        grid_escape(x, y, n, bn / n, layout, runs, rng)
        for layout in layouts
        for n in grids
        for bn in bn_values
    ]


def load_polygons(path: Path) -> list[object]:
    """Polygons of a GeoJSON FeatureCollection (shapely geometries)."""
    from shapely.geometry import shape

    try:
        data = json.loads(Path(path).read_text())
        feats = data["features"] if data.get("type") == "FeatureCollection" else [data]
        polys = [shape(f.get("geometry", f)) for f in feats]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise InputError(f"cannot read polygons from {path}: {err}") from None
    if not polys:
        raise InputError(f"no polygons in {path}")
    for i, poly in enumerate(polys, start=1):
        kind = getattr(poly, "geom_type", type(poly).__name__)
        if kind not in ("Polygon", "MultiPolygon"):
            raise InputError(f"polygons {path}: feature {i} is a {kind}, not a Polygon or MultiPolygon")
        if poly.is_empty or not poly.is_valid or not poly.area > 0:
            raise InputError(
                f"polygons {path}: feature {i} is not a valid polygon with an area (a ring that crosses itself "
                "or encloses nothing); repair it first (e.g. shapely.make_valid)"
            )
    return polys


def polygon_escape(
    x: np.ndarray, y: np.ndarray, polygons: list[object], scale: float, runs: int = 10, seed: int = 0
) -> EscapeResult:
    """Escape shares for arbitrary polygons (report Fig. 21; eq. 15 is the population-weighted mean)."""
    import shapely

    tree = shapely.STRtree(polygons)
    rng = np.random.default_rng(seed)

    def block(px: np.ndarray, py: np.ndarray) -> np.ndarray:
        pts = shapely.points(px, py)
        idx_pt, idx_poly = tree.query(pts, predicate="within")
        out = np.full(px.size, -1, dtype=np.int64)
        out[idx_pt] = idx_poly
        return out

    before = block(x, y)
    if not (before >= 0).any():
        raise InputError(
            "no point lies inside any of the polygons: are they longitude/latitude polygons over the points' area?"
        )
    shares = _mean_shares(block, before, x, y, len(polygons), scale, runs, rng)
    return EscapeResult("polygons", len(polygons), scale, *shares)


def plot_collapse(results: Sequence[EscapeResult], path: Path) -> None:
    """Escape share and unchanged-block share against log10(b N), one curve per (layout, N) (report Fig. 15)."""
    with saved_figure(path, 1, 2, figsize=(11, 4.2)) as (fig, axes):
        keys = sorted({(r.layout, r.n) for r in results if r.layout != "polygons"})
        for layout, n in keys:
            rs = sorted((r for r in results if (r.layout, r.n) == (layout, n)), key=lambda r: r.scale)
            bn = np.array([r.scale * r.n for r in rs])
            style = "-" if layout == "uniform" else "--"
            axes[0].plot(
                np.log10(bn), [r.escape_share for r in rs], style, marker="o", ms=3, label=f"{layout} N={n}"
            )
            axes[1].plot(np.log10(bn), [r.unchanged_block_share for r in rs], style, marker="o", ms=3)
        axes[0].set_xlabel("log10(b N)  (Laplace scale / grid spacing)")
        axes[0].set_ylabel("share of points that left their block")
        axes[1].set_xlabel("log10(b N)")
        axes[1].set_ylabel("share of blocks with no net change")
        axes[0].legend(fontsize=7)
        axes[0].set_title("Escape share collapses onto b N (report Fig. 15)")
        axes[1].set_title("Blocks with unchanged population (report Fig. 16)")
        fig.text(0.01, 0.01, "Simulation on true locations: owner material, not DP.", fontsize=7)
