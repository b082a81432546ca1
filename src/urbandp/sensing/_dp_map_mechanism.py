"""Differentially private posterior-variance maps (paper section VI) and the utility curve of Fig. 6.

Default (corrected) release, per window and cell:

1. Fit the window's GP with the kernel variance capped at ``sensitivity`` (``sigma_f^2 <= Delta``); then every
   cell's standardised ``sigma_p^2`` lies in ``[0, Delta]`` whatever the readings, which is what makes section
   VI-A's bound ``|f(D) - f(D')| <= sigma_f^2`` a valid sensitivity. (The paper fixes ``sigma_f^2 = 1`` in the
   sensitivity but fits the kernel variance freely, so its bound does not hold when the fit exceeds 1.)
   Windows with fewer than ``min_readings`` readings get the prior variance ``Delta`` in every cell.
2. Add bounded Laplace noise on ``[0, upper]`` (``upper >= Delta``, default ``Delta``) with Holohan et al.'s
   scale (:mod:`urbandp.sensing._bounded_laplace`), sampled from OpenDP.

The paper's version (``calibration="paper"``, for comparison only): free kernel variance, bounds
``[0, max sigma_p^2 of the window]`` (data-dependent) and ``b = Delta / epsilon``. It is not differentially private.

Accounting (docs/sensing.md, "DP variance maps", in full): every cell of a window depends on every reading, so a
window's map is ``G`` epsilon-DP cells composed (basic, or the optimal composition of Kairouz, Oh and Viswanath
2015 at ``delta``); a replace-one neighbour can move a reading into another window (``2G`` cells). The VI-A bound
holds for any change of a window's readings, so a vehicle pays ``k x G`` cells on a day of ``k`` windows: the
loss booked per **vehicle-day** and guarded. The variance stays standardised (original units are not DP).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from urbandp._privacy.ledger import LedgerEntry, PrivacyLedger
from urbandp._privacy.loss import Loss, optimal_homogeneous_epsilon
from urbandp._privacy.noise import NoiseSource
from urbandp.errors import InvalidParameterError
from urbandp.sensing._bounded_laplace import (
    MIN_ACCEPTANCE,
    BoundedLaplace,
    acceptance_min,
    check_meaningful,
    expected_squared_error,
)
from urbandp.sensing._gp import Bounds
from urbandp.sensing._grid import SquareGrid
from urbandp.sensing._interpolation import KM, WindowResult, interpolate_windows
from urbandp.sensing._leakage import Leakage, leakage
from urbandp.sensing._readings import Readings, window_starts


@dataclass
class DpWindow:
    window: np.datetime64
    n_readings: int
    sigma2_std: np.ndarray
    sigma2_dp: np.ndarray
    upper: float
    scale: float
    fitted: WindowResult | None
    leak_before: Leakage | None = None
    leak_after: Leakage | None = None


@dataclass
class DpMapRelease:
    windows: list[DpWindow]
    ledger: PrivacyLedger


MAX_EXPECTED_DRAWS = 20_000_000  # bound on the rejection sampler's work (OpenDP draws) for one release


def all_windows(readings: Readings, window_minutes: int) -> np.ndarray:
    """Every window from the first to the last one holding a reading (empty windows included).

    The first and last window are read off the data: publishing them is NOT differentially private (it tells
    when the first and last reading were taken). :func:`public_windows` is the DP alternative.
    """
    starts = window_starts(readings.time, window_minutes)
    step = np.timedelta64(int(window_minutes), "m")
    return np.arange(starts.min(), starts.max() + step, step)


def public_windows(start: np.datetime64, end: np.datetime64, window_minutes: int) -> np.ndarray:
    """The windows that cover the public interval ``[start, end)`` (chosen without looking at the data, checked by
    :func:`urbandp.sensing._options.parse_window`): the first begins at ``start``, each follows the last, and the
    last may run past ``end`` (its readings stop there)."""
    step = np.timedelta64(int(window_minutes), "m")
    first: np.datetime64 = start.astype("datetime64[m]")
    stop: np.datetime64 = end.astype("datetime64[m]")
    return np.arange(first, stop, step)


@dataclass(frozen=True)
class DpMapPlan:
    """What a release costs and how much work it is, computed before any noise is drawn (OpenDP-style map).

    Only for the DP calibration: the paper's bounds come from the data, so it has no plan (and no epsilon).
    """

    windows: int
    cells: int
    scale: float
    epsilon_cell: float
    epsilon_per_window_map: float
    epsilon_total: float
    acceptance_min: float
    expected_draws: float
    delta: float = 0.0
    epsilon_replace_one: float = 0.0
    basic_per_window_map: float = 0.0
    basic_total: float = 0.0
    windows_per_day: int = 0
    epsilon_per_vehicle_day: float = 0.0
    basic_per_vehicle_day: float = 0.0

    def _loss(self, epsilon: float, basic: float) -> Loss:
        """``epsilon`` at ``delta``; at delta 0 where the optimal composition is no tighter than the basic sum."""
        return Loss.approx_dp(epsilon, self.delta if epsilon < basic else 0.0)

    def loss_per_reading(self) -> Loss:
        """The loss of one reading under add/remove (its window's map of G cells, composed optimally)."""
        return self._loss(self.epsilon_per_window_map, self.basic_per_window_map)

    def loss_per_vehicle_day(self) -> Loss:
        """The loss of a vehicle on one day: the ``k x G`` cells of the day's windows, composed optimally."""
        return self._loss(self.epsilon_per_vehicle_day, self.basic_per_vehicle_day)

    def loss_total(self) -> Loss:
        """The loss of a vehicle with readings in every window (W x G cells, composed optimally)."""
        return self._loss(self.epsilon_total, self.basic_total)

    def to_json(self) -> dict[str, object]:
        """privacy.json's composition figures: the tight ones, and the basic sums for comparison."""
        return {
            "epsilon_per_window_map": self.epsilon_per_window_map,
            "epsilon_per_reading": self.epsilon_per_window_map,
            "delta_per_reading": self.loss_per_reading().delta,
            "epsilon_per_reading_replace_one": self.epsilon_replace_one,
            "windows_per_day_max": self.windows_per_day,
            "epsilon_per_vehicle_day": self.epsilon_per_vehicle_day,
            "delta_per_vehicle_day": self.loss_per_vehicle_day().delta,
            "epsilon_vehicle_upper_bound": self.epsilon_total,
            "delta_vehicle_upper_bound": self.loss_total().delta,
            "composition_delta": self.delta,
            "basic_composition": {
                "epsilon_per_window_map": self.basic_per_window_map,
                "epsilon_per_vehicle_day": self.basic_per_vehicle_day,
                "epsilon_vehicle_upper_bound": self.basic_total,
                "note": "G x epsilon per cell (k x G per vehicle-day, W x G over windows) at delta 0, for comparison",
            },
            "composition": "optimal composition of the G cells of a window (Kairouz, Oh, Viswanath 2015, Thm 3.3) "
            "at composition_delta, never above the basic G x epsilon; parallel over windows for one reading "
            "under add/remove; replace-one can move a reading into another window: 2 x G cells composed; a "
            "window's map bounds any change of its readings (VI-A), so a vehicle pays the k x G cells of a day's "
            "windows per vehicle-day (the loss booked and guarded) and W x G over the release",
        }

    def check(self) -> None:
        """Refuse, before any noise, a release whose noise is meaningless (:func:`plan_dp_map` refused unbounded
        work)."""
        if self.acceptance_min < MIN_ACCEPTANCE:
            raise InvalidParameterError(  # one "epsilon" only: the parameter (the CLI writes its flag)
                f"at {self.epsilon_cell:.3g} per cell the bounded Laplace scale is {self.scale:.3g}: one "
                f"draw in {1 / max(self.acceptance_min, 1e-300):.3g} lands in the domain and the released "
                "values would be practically uniform noise (no information); use a larger epsilon",
                parameters="epsilon",
            )


def check_work(windows: int, cells: int, expected_draws: float) -> None:
    """Refuse a release whose rejection sampler would need more than :data:`MAX_EXPECTED_DRAWS` draws."""
    if expected_draws > MAX_EXPECTED_DRAWS:
        raise InvalidParameterError(
            f"{windows} windows x {cells} cells need about {expected_draws:.3g} noise draws "
            f"(limit {MAX_EXPECTED_DRAWS:.0e}); use a shorter start/end window, larger cell_metres or "
            "a larger epsilon",
            parameters=("start", "end", "cell_metres", "epsilon"),
        )


def plan_dp_map(
    n_windows: int,
    n_cells: int,
    epsilon_cell: float,
    sensitivity: float = 1.0,
    upper: float | None = None,
    delta: float = 0.0,
    windows_per_day: int | None = None,
) -> DpMapPlan:
    """Cost of the default (Holohan) release: the ``G`` cells of a window composed optimally at ``delta``
    (:func:`urbandp._privacy.loss.optimal_homogeneous_epsilon`; ``delta`` 0 gives the basic ``G x epsilon``).
    ``windows_per_day``: most windows on one day (:func:`urbandp.sensing._readings.windows_per_day`); default
    every window (a bound)."""
    k = n_windows if windows_per_day is None else min(int(windows_per_day), n_windows)
    hi = sensitivity if upper is None else float(upper)
    try:
        check_meaningful(epsilon_cell, sensitivity, 0.0, hi)
    except ValueError as err:
        raise InvalidParameterError(f"{err}; use a larger epsilon", parameters="epsilon") from None
    mech = BoundedLaplace(epsilon_cell, sensitivity, 0.0, hi, calibration="holohan")
    b = mech.scale
    eps_cell = mech.epsilon_actual
    acc = acceptance_min(b, 0.0, hi)
    draws = n_windows * n_cells / max(acc, 1e-300)
    check_work(n_windows, n_cells, draws)  # first: composing W x G cells costs memory growing with W x G
    return DpMapPlan(
        windows=n_windows,
        cells=n_cells,
        scale=b,
        epsilon_cell=eps_cell,
        epsilon_per_window_map=optimal_homogeneous_epsilon(eps_cell, n_cells, delta),
        epsilon_total=optimal_homogeneous_epsilon(eps_cell, n_windows * n_cells, delta),
        acceptance_min=acc,
        expected_draws=draws,
        delta=delta,
        epsilon_replace_one=optimal_homogeneous_epsilon(eps_cell, 2 * n_cells, delta),
        basic_per_window_map=n_cells * eps_cell,
        basic_total=n_windows * n_cells * eps_cell,
        windows_per_day=k,
        epsilon_per_vehicle_day=optimal_homogeneous_epsilon(eps_cell, k * n_cells, delta),
        basic_per_vehicle_day=k * n_cells * eps_cell,
    )


def fit_for_release(
    readings: Readings,
    grid: SquareGrid,
    sensitivity: float,
    calibration: str,
    window_minutes: int,
    kernel: str,
    min_readings: int,
    progress: Callable[[int, int], None] | None = None,
    origin: np.datetime64 | None = None,
) -> list[WindowResult]:
    """GP per window (counted from ``origin``, default the Unix epoch); the kernel variance is capped at
    ``sensitivity`` unless the paper's version is asked for."""
    bounds = (
        Bounds() if calibration == "paper" else Bounds(variance=(min(1e-2, sensitivity / 10), sensitivity))
    )
    results, _ = interpolate_windows(
        readings,
        grid,
        window_minutes,
        kernel,
        bounds=bounds,
        min_readings=min_readings,
        progress=progress,
        origin=origin,
    )
    return results


def _release_dp_map(
    readings: Readings,
    grid: SquareGrid,
    epsilon_cell: float,
    noise: NoiseSource,
    fitted: list[WindowResult],
    windows: np.ndarray,
    sensitivity: float = 1.0,
    upper: float | None = None,
    calibration: str = "holohan",
    window_minutes: int = 60,
    progress: Callable[[int, int], None] | None = None,
) -> DpMapRelease:
    """Release one noisy sigma_p^2 map per window of the GPs ``fitted`` (:func:`fit_for_release`; see the module
    docstring for the accounting) over the window starts ``windows`` (:func:`public_windows`, or
    :func:`all_windows` derived from the data); the paper's version releases only the fitted windows.
    ``upper`` (default ``sensitivity``) is at least ``sensitivity`` (the options check it)."""
    upper = sensitivity if upper is None else float(upper)
    by_window = {r.window: r for r in fitted}
    if calibration == "paper":
        windows = np.array(sorted(by_window))
    n_cells = grid.n_cells
    centroids = grid.centroids_metres() / KM
    starts = window_starts(
        readings.time, window_minutes, windows[0] if calibration != "paper" and len(windows) else None
    )
    cell_of = grid.cell_id(readings.lat, readings.lon)
    ledger = PrivacyLedger()  # the release's cap is the session's, checked on the whole map before any noise
    out: list[DpWindow] = []
    true_maps = [
        by_window[w].sigma2_std if w in by_window else np.full(n_cells, float(sensitivity)) for w in windows
    ]
    # One mechanism for every window (same epsilon, sensitivity and bounds): its rejection sampling runs over all
    # windows' cells at once, a few OpenDP calls in all instead of ~17 per window. Each cell still gets its own
    # independent draws, so the output distribution is unchanged.
    shared = BoundedLaplace(epsilon_cell, sensitivity, 0.0, upper, calibration="holohan")
    batched = shared.release(np.stack(true_maps), noise) if calibration != "paper" and true_maps else None
    for i, w in enumerate(windows):
        res = by_window.get(w)
        n = int((starts == w).sum())
        s2 = true_maps[i]
        mech = shared
        if calibration == "paper":  # data-dependent bound, as the paper
            mech = BoundedLaplace(
                epsilon_cell, sensitivity, 0.0, float(max(s2.max(), 1e-12)), calibration="paper"
            )
        noisy = batched[i] if batched is not None else mech.release(s2, noise)
        if calibration != "paper":
            ledger.charge(
                LedgerEntry(
                    name=f"dp-map sigma2 window {w}",
                    epsilon=n_cells * mech.epsilon_actual,
                    unit="reading",
                    neighbouring="add/remove one reading (replace-one: two windows, see privacy.json)",
                    mechanism="bounded-laplace (Holohan)",
                    detail={
                        "cells": n_cells,
                        "epsilon_cell": mech.epsilon_actual,
                        "scale": mech.scale,
                        "sensitivity": sensitivity,
                        "bounds": [0.0, mech.upper],
                    },
                )
            )
        dw = DpWindow(w, n, s2, noisy, mech.upper, mech.scale, res)
        if res is not None and n > 0:
            mask = starts == w
            visited = np.zeros(n_cells, dtype=bool)
            visited[cell_of[mask][cell_of[mask] >= 0]] = True
            dw.leak_before = leakage(s2, centroids, res.reading_xy_km, visited)
            dw.leak_after = leakage(noisy, centroids, res.reading_xy_km, visited)
        out.append(dw)
        if progress is not None:
            progress(i + 1, len(windows))
    return DpMapRelease(out, ledger)


def rmse_vs_epsilon(
    fitted: list[WindowResult],
    epsilons: list[float],
    sensitivity: float = 1.0,
    upper: float | None = None,
    calibration: str = "holohan",
) -> list[dict[str, object]]:
    """Fig. 6: per window and epsilon, RMSE between noisy and true sigma_p^2 over the grid, and max sigma_p^2.

    RMSE is reported in standardised units (what is released) and in original units (times the window's value
    variance, as the paper plots it). It is the *expected* RMSE, ``sqrt(mean_cells E[(Y - x)^2])``, from the
    closed-form second moment of the bounded Laplace (:func:`expected_squared_error`); a single sampled map
    differs from it by O(1/sqrt(cells)). A utility experiment: it reads the true values and releases nothing.
    """
    upper = sensitivity if upper is None else upper
    rows: list[dict[str, object]] = []
    for res in fitted:
        s2 = res.sigma2_std
        hi = float(max(s2.max(), 1e-12)) if calibration == "paper" else upper
        for eps in epsilons:
            mech = BoundedLaplace(eps, sensitivity, 0.0, hi, calibration=calibration)
            rmse = float(np.sqrt(np.mean(expected_squared_error(s2, mech.scale, 0.0, hi))))
            rows.append(
                {
                    "window": str(res.window),
                    "n_readings": res.n_readings,
                    "epsilon": eps,
                    "scale": mech.scale,
                    "rmse_std": rmse,
                    "rmse_original": rmse * res.value_sd**2,
                    "max_sigma2_std": float(s2.max()),
                    "max_sigma2_original": float(s2.max()) * res.value_sd**2,
                }
            )
    return rows
