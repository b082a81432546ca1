"""A DP map of PM2.5 itself (issue 22): noisy clipped sums and counts per cell and window, smoothed afterwards.

The paper's DP map (section VI, :mod:`urbandp.sensing.dp_map`) publishes only the GP's standardised posterior
variance, never the pollution. Here the values are published:

1. **Public domain.** The grid (``--bbox``, ``--cell-metres``) and the windows (``--start``/``--end``) are public,
   so every cell of every window gets noise, empty ones included (no selection, no delta).
2. **Bound.** A reading is clipped to [0, C] (C public, default 500 ug/m3) and centred at C/2. The privacy unit is
   one reading (add/remove); with vehicle ids, one vehicle-window whose readings are truncated to the first
   ``m`` (public) of that window.
3. **Measure** (the only draws): per cell and window the count (sensitivity m) and the centred sum (sensitivity
   m C/2) get Laplace noise through OpenDP, half of the per-unit epsilon each (the even split minimises the
   worst-case variance of the ratio; :func:`urbandp.fleet.plan.count_sum_split` derives it). A unit lies in one
   cell of one window, so the cells and windows compose in parallel: the whole release costs epsilon per unit.
4. **Post-process** (no privacy cost): a window's city-wide mean ``C/2 + sum S~ / sum N~`` is shrunk toward the
   whole release's mean by its known noise variance (:func:`shrink`, empirical Bayes); a cell's mean
   ``C/2 + S~/N~`` (where ``N~`` is clear of its noise, ``>= max(1, 2 sd)``) is shrunk toward its window's the
   same way; the map is then smoothed per window by a GP (:mod:`urbandp.sensing.gp`) or inverse-distance
   weighting on those cell means, or is the window's mean when fewer than three cells are clear.

Where it is useful and where not is measured in docs/sensing.md ("A DP map of PM2.5"): RMSE at the Kolkata static
stations against the non-private GP and IDW, per epsilon.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from urbandp.errors import InputError
from urbandp.privacy.loss import Loss
from urbandp.privacy.mechanisms import Laplace, calibrate
from urbandp.privacy.noise import NoiseSource
from urbandp.sensing.grid import SquareGrid
from urbandp.sensing.interpolate import KM, fit_window, idw_predict
from urbandp.sensing.readings import Readings, window_starts

DEFAULT_CLIP = 250.0
"""Public upper bound of a PM2.5 reading (ug/m3): where the 'severe' band of India's AQI begins. A reading above
it is clipped (it still counts, at 250); the centred sum's noise grows with this bound."""
MIN_CLEAR_CELLS = 3
SMOOTHERS = ("gp", "idw", "none")


@dataclass(frozen=True)
class PmMapPlan:
    """Public parameters and the noise, fixed before any reading is read."""

    epsilon: float  # per unit (one reading, or one vehicle-window)
    clip: float  # C
    readings_per_unit: int  # m: 1 for one reading
    count: Laplace
    total: Laplace  # on the sum of readings centred at C/2

    @property
    def count_sensitivity(self) -> float:
        return float(self.readings_per_unit)

    @property
    def sum_sensitivity(self) -> float:
        return self.readings_per_unit * self.clip / 2.0

    def loss_per_unit(self) -> Loss:
        """Each unit is in one cell of one window (parallel composition); there: count + centred sum."""
        return self.count.loss(self.count_sensitivity) + self.total.loss(self.sum_sensitivity)


def plan_pm_map(epsilon: float, clip: float = DEFAULT_CLIP, readings_per_unit: int = 1) -> PmMapPlan:
    """Calibrate both Laplace mechanisms (OpenDP's search) to half of ``epsilon`` each."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise InputError(f"--epsilon must be a positive finite number, got {epsilon}")
    if not (clip > 0 and math.isfinite(clip)):
        raise InputError(f"--clip must be a positive finite number, got {clip}")
    if readings_per_unit < 1:
        raise InputError(f"readings per unit must be at least 1, got {readings_per_unit}")
    count = calibrate("laplace", float(readings_per_unit), epsilon / 2.0)
    total = calibrate("laplace", readings_per_unit * clip / 2.0, epsilon / 2.0)
    assert isinstance(count, Laplace) and isinstance(total, Laplace)
    return PmMapPlan(float(epsilon), float(clip), int(readings_per_unit), count, total)


@dataclass
class CellAggregates:
    """True per (window, cell) counts and centred sums: owner material until noise is added."""

    windows: np.ndarray  # public window starts
    counts: np.ndarray  # [W, G]
    centred_sums: np.ndarray  # [W, G]
    readings_dropped: int  # outside the windows, or beyond m per vehicle-window


def cell_aggregates(
    readings: Readings,
    grid: SquareGrid,
    windows: np.ndarray,
    window_minutes: int,
    clip: float,
    vehicle: np.ndarray | None = None,
    readings_per_unit: int = 1,
) -> CellAggregates:
    """Bound (clip to [0, C], centre at C/2; with ``vehicle``, keep each vehicle-window's first ``m`` readings by
    time) and aggregate per public window and grid cell."""
    starts = window_starts(readings.time, window_minutes)
    index = {w: i for i, w in enumerate(windows.astype("datetime64[m]"))}
    w_idx = np.array([index.get(w, -1) for w in starts.astype("datetime64[m]")], dtype=np.int64)
    keep = w_idx >= 0
    if vehicle is not None:
        order = np.lexsort((readings.time, w_idx, vehicle))
        rank = np.zeros(len(order), dtype=np.int64)
        key = np.stack([vehicle[order], w_idx[order]], axis=1)
        new_group = np.ones(len(order), dtype=bool)
        new_group[1:] = np.any(key[1:] != key[:-1], axis=1)
        group_start = np.maximum.accumulate(np.where(new_group, np.arange(len(order)), 0))
        rank[order] = np.arange(len(order)) - group_start
        keep &= rank < readings_per_unit
    cells = grid.cell_id(readings.lat, readings.lon)
    keep &= cells >= 0
    shape = (len(windows), grid.n_cells)
    counts = np.zeros(shape)
    sums = np.zeros(shape)
    centred = np.clip(readings.value, 0.0, clip) - clip / 2.0
    np.add.at(counts, (w_idx[keep], cells[keep]), 1.0)
    np.add.at(sums, (w_idx[keep], cells[keep]), centred[keep])
    return CellAggregates(windows, counts, sums, int((~keep).sum()))


@dataclass
class NoisyCells:
    """The release: noisy counts and centred sums per (window, cell); everything after is post-processing."""

    counts: np.ndarray
    centred_sums: np.ndarray


def measure_pm_map(plan: PmMapPlan, agg: CellAggregates, noise: NoiseSource) -> NoisyCells:
    """The only draws: Laplace on every cell of every window (OpenDP's sampler through ``noise``)."""
    counts = plan.count.draw(agg.counts.ravel(), noise).reshape(agg.counts.shape)
    sums = plan.total.draw(agg.centred_sums.ravel(), noise).reshape(agg.centred_sums.shape)
    return NoisyCells(counts, sums)


def mean_noise_var(plan: PmMapPlan, mean: np.ndarray, n: np.ndarray, cells: int = 1) -> np.ndarray:
    """First-order variance of ``C/2 + S~/N~`` from the noise alone, over ``cells`` cells pooled:
    ``cells (var_S + (mean - C/2)^2 var_N) / N~^2``."""
    return (
        cells
        * (plan.total.std**2 + (mean - plan.clip / 2.0) ** 2 * plan.count.std**2)
        / np.maximum(n, 1.0) ** 2
    )


def shrink(values: np.ndarray, noise_var: np.ndarray, target: float) -> np.ndarray:
    """Empirical-Bayes shrinkage with known noise variances (James and Stein 1961; Efron and Morris 1973):
    ``target + tau^2 / (tau^2 + v_i) (x_i - target)``, ``tau^2`` the spread of the true values by moments,
    ``max(0, mean((x - target)^2 - v))``. Post-processing of DP values: it costs nothing."""
    ok = np.isfinite(values) & np.isfinite(noise_var)
    if not ok.any():
        return values
    tau2 = max(0.0, float(np.mean((values[ok] - target) ** 2 - noise_var[ok])))
    weight = tau2 / (tau2 + noise_var) if tau2 > 0 else np.zeros_like(values)
    return np.where(ok, target + weight * (values - target), values)


def clear_of_noise(plan: PmMapPlan, counts: np.ndarray) -> np.ndarray:
    """Cells whose noisy count is at least ``max(1, 2 sd)`` of its noise: a mean is read only there."""
    return counts >= max(1.0, 2.0 * plan.count.std)


def cell_means(plan: PmMapPlan, noisy: NoisyCells) -> tuple[np.ndarray, np.ndarray]:
    """(mean per cell, clear mask): ``C/2 + S~/N~`` clipped to [0, C] where ``N~ >= max(1, 2 sd)``, else nan."""
    clear = clear_of_noise(plan, noisy.counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(clear, plan.clip / 2.0 + noisy.centred_sums / noisy.counts, np.nan)
    return np.clip(mean, 0.0, plan.clip), clear


def window_means(plan: PmMapPlan, noisy: NoisyCells) -> np.ndarray:
    """Each window's city-wide mean from all its cells' noisy sums and counts, shrunk (:func:`shrink`) toward
    the mean of the whole release (its noise is negligible) by the known noise variance of each window's."""
    g = noisy.counts.shape[1]
    n = noisy.counts.sum(axis=1)
    raw = np.clip(plan.clip / 2.0 + noisy.centred_sums.sum(axis=1) / np.maximum(n, 1.0), 0.0, plan.clip)
    overall = float(
        np.clip(plan.clip / 2.0 + noisy.centred_sums.sum() / max(float(n.sum()), 1.0), 0.0, plan.clip)
    )
    var = mean_noise_var(plan, raw, n, g)
    var = np.where(n >= max(1.0, 2.0 * plan.count.std * np.sqrt(g)), var, np.inf)
    return shrink(np.where(np.isfinite(var), raw, overall), var, overall)


def pooled_mean(plan: PmMapPlan, noisy: NoisyCells, w: int) -> float:
    """Window ``w``'s shrunk city-wide mean (:func:`window_means`)."""
    return float(window_means(plan, noisy)[w])


def smooth_window(
    plan: PmMapPlan,
    noisy: NoisyCells,
    w: int,
    grid: SquareGrid,
    x_new_km: np.ndarray,
    smoother: str = "gp",
    kernel: str = "matern32",
    city: np.ndarray | None = None,
) -> np.ndarray:
    """PM2.5 at ``x_new_km`` (km, the grid's frame) in window ``w`` from the noisy cells (post-processing).

    ``city``: :func:`window_means` of the release, when the caller smooths every window (computed once there).
    """
    ok = clear_of_noise(plan, noisy.counts[w])
    fallback = float((window_means(plan, noisy) if city is None else city)[w])
    if int(ok.sum()) < MIN_CLEAR_CELLS:
        return np.full(len(x_new_km), fallback)
    # each clear cell's mean, unclipped (clipping first would bias the shrinkage), shrunk toward the window's by
    # its own noise variance (evaluated at the window's mean: the cell's own is too noisy), then clipped
    n = noisy.counts[w, ok]
    raw = plan.clip / 2.0 + noisy.centred_sums[w, ok] / n
    var = mean_noise_var(plan, np.full(len(n), fallback), n)
    y = np.clip(shrink(raw, var, fallback), 0.0, plan.clip)
    if smoother == "none":
        cells = grid.cell_id(*grid.to_degrees(x_new_km * KM))
        lookup = dict(zip(np.flatnonzero(ok).tolist(), y.tolist(), strict=True))
        return np.array([lookup.get(int(c), fallback) for c in cells])
    xy = grid.centroids_metres()[ok] / KM
    if smoother == "idw":
        return idw_predict(xy, y, x_new_km)
    model = fit_window(xy, y, kernel)
    pred, _ = model.predict(x_new_km)
    return np.clip(np.nan_to_num(pred, nan=fallback), 0.0, plan.clip)
