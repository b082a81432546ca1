"""Figures: contour maps of mu_p and sigma_p^2 (paper Fig. 4), noisy maps (Fig. 5) and the RMSE CDF (Fig. 6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from urbandp.sensing._grid import SquareGrid


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _field(grid: SquareGrid, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    c = grid.centroids_metres() / 1000.0
    shape = (grid.n_rows, grid.n_cols)
    return c[:, 0].reshape(shape), c[:, 1].reshape(shape), np.asarray(values, dtype=float).reshape(shape)


def contour_panels(
    grid: SquareGrid,
    panels: list[tuple[str, np.ndarray]],
    path: Path,
    title: str,
    readings_xy_km: np.ndarray | None = None,
) -> Path:
    """Side-by-side filled contours over the grid (km from the south-west corner), readings as dots."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.4), squeeze=False)
    for ax, (name, values) in zip(axes[0], panels, strict=True):
        x, y, z = _field(grid, values)
        if grid.n_rows > 1 and grid.n_cols > 1:
            cs = ax.contourf(x, y, z, levels=20, cmap="viridis")
        else:
            cs = ax.scatter(x.ravel(), y.ravel(), c=z.ravel(), cmap="viridis")
        fig.colorbar(cs, ax=ax)
        if readings_xy_km is not None and len(readings_xy_km):
            ax.plot(readings_xy_km[:, 0], readings_xy_km[:, 1], "r.", ms=3, alpha=0.7, label="readings")
            ax.legend(loc="upper right", fontsize=7)
        ax.set_title(name)
        ax.set_xlabel("km east")
        ax.set_ylabel("km north")
        ax.set_aspect("equal")
    fig.suptitle(title)
    return _save(fig, path)


def rmse_cdf(rows: list[dict[str, object]], path: Path, title: str) -> Path:
    """Fig. 6: empirical CDF over windows of the RMSE of noisy sigma_p^2, one curve per epsilon, plus max sigma_p^2."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    eps_values = sorted({float(r["epsilon"]) for r in rows})  # type: ignore[arg-type]
    for eps in eps_values:
        v = np.sort([float(r["rmse_std"]) for r in rows if float(r["epsilon"]) == eps])  # type: ignore[arg-type]
        ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=f"RMSE, epsilon = {eps:g}")
    first = eps_values[0] if eps_values else None
    m = np.sort([float(r["max_sigma2_std"]) for r in rows if float(r["epsilon"]) == first])  # type: ignore[arg-type]
    if len(m):
        ax.step(m, np.arange(1, len(m) + 1) / len(m), where="post", color="k", ls="--", label="max sigma_p^2")
    ax.set_xlabel("RMSE of sigma_p^2 (standardised units)")
    ax.set_ylabel("share of windows")
    ax.set_title(title)
    ax.legend()
    return _save(fig, path)


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path
