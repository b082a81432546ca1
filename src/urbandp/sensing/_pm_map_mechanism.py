"""A DP map of PM2.5 itself: noisy clipped sums and counts per cell and window, smoothed afterwards.

The paper's DP map (section VI, :mod:`urbandp.sensing._dp_map_mechanism`) publishes only the GP's standardised posterior
variance, never the pollution. Here the values are published:

1. **Public domain.** The grid (``--bbox``, ``--cell-metres``) and the windows (``--start``/``--end``) are public,
   so every cell of every window gets noise, empty ones included (no selection, no delta).
2. **Bound.** A reading is clipped to [0, C] (C public, default 250 ug/m3) and centred at C/2. The privacy unit
   is one **vehicle-window** (add/remove all of one vehicle's readings in one window) when the readings carry
   vehicle ids: each vehicle-window keeps at most ``M`` readings (``M`` public,
   ``--max-readings-per-vehicle-window``), chosen by :func:`truncate_vehicle_windows` in an order keyed on each
   reading's own time (never a value or a place), so that removing one reading changes at most one other kept
   reading: a reading then costs ``2 epsilon / M`` (:meth:`PmMapPlan.loss_per_reading`). Without ids the unit
   is one reading (``M = 1``).
3. **Measure** (the only draws): per cell and window the count and the centred sum get Laplace noise through
   OpenDP, half of the per-unit epsilon each (the even split minimises the worst-case variance of the ratio;
   :func:`urbandp.fleet._plan.count_sum_split` derives it). Sensitivity (:class:`PmMapPlan`): one unit holds at
   most ``M`` readings, all in one window, spread over that window's cells in any way, so removing it changes
   the window's count vector by at most ``M`` in L1 norm and its centred-sum vector by at most ``M C/2`` (each
   centred reading lies in [-C/2, C/2]); the Laplace mechanism with scale ``b`` on every cell is then
   ``Delta_1 / b``-DP (Dwork, McSherry, Nissim, Smith 2006, Prop. 1). Windows hold disjoint units, so they
   compose in parallel: the release costs epsilon per unit. A vehicle present in ``k`` windows of a day pays
   ``k x epsilon`` that day, and ``W_v x epsilon`` over the ``W_v`` windows it is in (basic composition;
   :func:`vehicle_losses`).
4. **Post-process** (no privacy cost): empirical-Bayes shrinkage of window and cell means (:func:`shrink`,
   :func:`between_variance`) and a GP or IDW surface filling the cells without a clear count
   (:func:`smooth_cells`); described, and measured against the Kolkata static stations per epsilon, in
   docs/sensing.md, section "A DP map of PM2.5".
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from urbandp._privacy.loss import Loss
from urbandp._privacy.mechanisms import Laplace, calibrate
from urbandp._privacy.noise import NoiseSource
from urbandp.sensing._grid import SquareGrid
from urbandp.sensing._interpolation import KM, fit_window, idw_predict
from urbandp.sensing._readings import Readings, window_starts, windows_per_day

DEFAULT_MAX_READINGS = 3
"""Public default of M, the readings kept per vehicle-window. A kept reading adds signal, but M sets the noise of
every cell (sensitivities M and M C/2), so per cell the signal-to-noise ratio hardly grows with M; a smaller M
only covers fewer cells. Measured on the synthetic fleet (60 readings per vehicle-window, docs/sensing.md): M 1
to 3 gave the lowest error at epsilon 1 to 16 per vehicle-window, M 10 and 30 a higher one."""
UNITS = ("vehicle-window", "reading")
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
    readings_per_unit: int  # M: 1 for one reading
    count: Laplace
    total: Laplace  # on the sum of readings centred at C/2
    unit: str = "reading"  # or "vehicle-window"

    @property
    def count_sensitivity(self) -> float:
        """L1 sensitivity of a window's count vector: one unit holds at most M readings (module docstring)."""
        return float(self.readings_per_unit)

    @property
    def sum_sensitivity(self) -> float:
        """L1 sensitivity of a window's centred-sum vector: M readings, each in [-C/2, C/2]."""
        return self.readings_per_unit * self.clip / 2.0

    def loss_per_unit(self) -> Loss:
        """Each unit is in one cell of one window (parallel composition); there: count + centred sum."""
        return self.count.loss(self.count_sensitivity) + self.total.loss(self.sum_sensitivity)

    def loss_per_reading(self) -> Loss:
        """The loss of one reading (add/remove one reading, its unit otherwise kept): the unit's under the reading
        unit; else at most two kept readings change (:func:`truncate_vehicle_windows`), L1 2 on the counts and C
        on the centred sums: ``2 / b_count + C / b_sum = 2 epsilon / M`` by OpenDP's maps (below the unit's
        epsilon for M >= 3, equal at M = 2, twice it at M = 1)."""
        if self.unit == "reading":
            return self.loss_per_unit()
        return self.count.loss(2.0) + self.total.loss(self.clip)


def plan_pm_map(
    epsilon: float, clip: float = DEFAULT_CLIP, readings_per_unit: int = 1, unit: str | None = None
) -> PmMapPlan:
    """Calibrate both Laplace mechanisms (OpenDP's search) to half of ``epsilon`` each, at the sensitivities of
    a unit of ``readings_per_unit`` readings (``unit`` default: ``reading`` for 1, else ``vehicle-window``). The
    parameters are pm-map's options, checked there (:class:`urbandp.sensing._options.PmMapOptions`)."""
    unit = unit if unit is not None else ("reading" if readings_per_unit == 1 else "vehicle-window")
    count = calibrate("laplace", float(readings_per_unit), epsilon / 2.0)
    total = calibrate("laplace", readings_per_unit * clip / 2.0, epsilon / 2.0)
    assert isinstance(count, Laplace) and isinstance(total, Laplace)
    return PmMapPlan(float(epsilon), float(clip), int(readings_per_unit), count, total, unit)


@dataclass(frozen=True)
class VehicleLosses:
    """What one vehicle pays, from public parameters only (the plan and the public windows)."""

    # None under the reading unit: a vehicle's readings per window are unbounded
    per_vehicle_window: Loss | None
    windows_per_day: int  # most public windows that overlap one calendar day
    per_vehicle_day: Loss | None
    windows: int  # W: the release's public windows
    per_vehicle_release: Loss | None  # a vehicle present in every window


def vehicle_losses(plan: PmMapPlan, windows: np.ndarray, window_minutes: int) -> VehicleLosses:
    """A vehicle's loss (basic composition of its vehicle-windows, each ``plan.loss_per_unit()``): per window,
    per day (``k`` windows overlap a day at most), over the release (``W`` windows). Under the reading unit a
    vehicle with ``m`` readings in a window pays ``m x epsilon`` there, and nothing public bounds ``m``: None."""
    k = windows_per_day(windows, window_minutes)
    w = len(windows)
    if plan.unit != "vehicle-window":
        return VehicleLosses(None, k, None, w, None)
    one = plan.loss_per_unit()
    return VehicleLosses(one, k, one.times(k), w, one.times(w))


@dataclass
class CellAggregates:
    """True per (window, cell) counts and centred sums: owner material until noise is added."""

    windows: np.ndarray  # public window starts
    counts: np.ndarray  # [W, G]
    centred_sums: np.ndarray  # [W, G]
    readings_dropped: int  # outside the windows or the grid, or beyond M per vehicle-window


SELECTION_SEED = 0x5EED
"""Public seed of the keyed order in which a vehicle-window's readings are kept (:func:`selection_priority`)."""


def _vehicle_keys(vehicle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group index, 64-bit key) per reading: the key is BLAKE2b of the vehicle id's text, so it depends on the
    reading's own vehicle only (the group index, from the sorted ids present, is used for grouping alone)."""
    ids, vid = np.unique(vehicle, return_inverse=True)
    keys = np.array(
        [int.from_bytes(hashlib.blake2b(str(v).encode(), digest_size=8).digest(), "little") for v in ids],
        dtype=np.uint64,
    )
    return vid, keys[vid]


def selection_priority(time: np.ndarray, vehicle_key: np.ndarray, seed: int = SELECTION_SEED) -> np.ndarray:
    """A pseudo-random priority per reading computed from the reading's own time and vehicle only: SplitMix64
    (Steele, Lea and Flood 2014) of its microseconds since the epoch xor its vehicle's key xor a public seed. It
    reads no other reading, no value and no place, so removing a reading leaves every other reading's priority
    unchanged; the vehicle's key keeps two vehicles sampled at the same minutes from keeping the same ones."""
    x = time.astype("datetime64[us]").astype(np.int64).view(np.uint64) ^ vehicle_key ^ np.uint64(seed)
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def truncate_vehicle_windows(
    vehicle: np.ndarray, window: np.ndarray, time: np.ndarray, max_readings: int
) -> np.ndarray:
    """Keep at most ``max_readings`` (M) readings of each (vehicle, window): the M of lowest
    :func:`selection_priority` (all when it has ``<= M``; ties broken by input order). Returns the mask kept.

    The choice reads only the unit's own readings, so removing a unit changes only its kept readings (the
    sensitivities M and M C/2 of :class:`PmMapPlan`); every reading's place in the order is its own, so removing
    one reading swaps at most one other kept reading in (:meth:`PmMapPlan.loss_per_reading`). Evenly spaced ranks
    of time are not stable (removing a reading shifts every rank: up to all M swapped); the first M in time would
    keep only the window's first minutes.
    """
    n = len(vehicle)
    if n == 0:
        return np.zeros(0, dtype=bool)
    vid, vkey = _vehicle_keys(vehicle)
    order = np.lexsort((np.arange(n), selection_priority(time, vkey), window, vid))
    key = np.stack([vid[order], window[order]], axis=1)
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = np.any(key[1:] != key[:-1], axis=1)
    group_start = np.flatnonzero(new_group)
    rank_sorted = np.arange(n) - group_start[np.cumsum(new_group) - 1]
    keep = np.zeros(n, dtype=bool)
    keep[order] = rank_sorted < int(max_readings)
    return keep


def cell_aggregates(
    readings: Readings,
    grid: SquareGrid,
    windows: np.ndarray,
    window_minutes: int,
    clip: float,
    vehicle: np.ndarray | None = None,
    readings_per_unit: int = 1,
) -> CellAggregates:
    """Bound (clip to [0, C], centre at C/2; with ``vehicle``, keep at most ``M`` readings per vehicle-window,
    :func:`truncate_vehicle_windows`) and aggregate per public window and grid cell. ``windows`` are the public
    window starts, sorted and distinct (as the release's window list is); an unsorted list is refused."""
    public = windows.astype("datetime64[m]")  # sorted: each reading's window by binary search, -1 if none
    if np.any(np.diff(public.astype(np.int64)) <= 0):
        raise ValueError("windows must be sorted and distinct")
    starts = window_starts(readings.time, window_minutes, windows[0] if len(windows) else None)
    w_idx = np.where(np.isin(starts, public), np.searchsorted(public, starts), -1).astype(np.int64)
    keep = w_idx >= 0
    if vehicle is not None:
        keep &= truncate_vehicle_windows(vehicle, w_idx, readings.time, readings_per_unit)
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


def between_variance(values: np.ndarray, noise_var: np.ndarray, target: float | np.ndarray) -> float:
    """The spread ``tau^2`` of the true values around ``target``, from noisy ``values`` with known noise
    variances: the root of ``sum (x_i - target)^2 / (tau^2 + v_i) = k`` (Paule and Mandel 1982; DerSimonian and
    Kacker 2007), 0 when even ``tau^2 = 0`` leaves the sum below ``k``.

    Each value is weighted by ``1 / (tau^2 + v_i)``: a cell whose count barely clears its noise (``v_i`` in the
    thousands) weighs next to nothing. The unweighted moment estimate ``mean((x - target)^2 - v)`` let those few
    cells decide: on the Kolkata season map at epsilon 4 per reading it ranged from 48 to 1,250 between draws of
    the same release, and at 0 it flattened the map to one value."""
    ok = np.isfinite(values) & np.isfinite(noise_var)
    d2 = (values[ok] - np.broadcast_to(target, values.shape)[ok]) ** 2
    v = np.maximum(noise_var[ok], 0.0)
    k = len(d2)
    if k == 0:
        return 0.0

    def excess(tau2: float) -> float:  # decreasing in tau2
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(d2 > 0, d2 / (tau2 + v), 0.0)
        return float(np.sum(terms)) - k

    if excess(0.0) <= 0:
        return 0.0
    from scipy.optimize import brentq

    # the root lies below sum d2, where excess <= sum d2 / sum d2 - k = 1 - k <= 0
    return float(brentq(excess, 0.0, float(np.sum(d2)), rtol=1e-12))


def shrink(values: np.ndarray, noise_var: np.ndarray, target: float | np.ndarray) -> np.ndarray:
    """Empirical-Bayes shrinkage with known noise variances (James and Stein 1961; Efron and Morris 1973):
    ``target + tau^2 / (tau^2 + v_i) (x_i - target)``, ``tau^2`` the spread of the true values around the target
    (:func:`between_variance`, weighted by precision). Post-processing of DP values: it costs nothing."""
    ok = np.isfinite(values) & np.isfinite(noise_var)
    if not ok.any():
        return values
    tau2 = between_variance(values, noise_var, target)
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


def smooth_window(
    plan: PmMapPlan,
    noisy: NoisyCells,
    w: int,
    grid: SquareGrid,
    x_new_km: np.ndarray,
    smoother: str = "gp",
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
    cells = np.flatnonzero(ok)
    return smooth_cells(grid, x_new_km, y, cells, smoother, plan.clip, fallback, raw, var)


def smooth_cells(
    grid: SquareGrid,
    x_new_km: np.ndarray,
    values: np.ndarray,
    cells: np.ndarray,
    smoother: str,
    clip: float,
    fallback: float | None = None,
    raw: np.ndarray | None = None,
    noise_var: np.ndarray | None = None,
) -> np.ndarray:
    """The map at ``x_new_km`` from ``values`` at the grid ``cells`` (post-processing).

    ``none``: a point in one of ``cells`` takes its value, any other the ``fallback``. ``idw`` / ``gp``: a
    surface (IDW from the other cells, or the GP's posterior mean) is fitted on the cells whose known
    ``noise_var`` is at most the spread ``tau^2`` of the true cell means (:func:`between_variance`; all of them
    when fewer than three are): a cell that is more noise than signal would teach the smoother, which assumes one
    noise level for all, that the field is flat. A point in one of ``cells`` then takes that cell's own
    estimate: ``raw`` shrunk toward the surface by its noise (:func:`shrink` with a spatial target,
    ``s + tau_s^2 / (tau_s^2 + v) (raw - s)``, ``tau_s^2`` the spread of the true means around the surface). A
    cell measured well keeps its own mean, a vague one follows its neighbours, a cell without readings is the
    surface: the smoother fills the gaps and never flattens what the cells carry. Without ``raw`` every cell
    fits the surface and keeps ``values``."""
    fallback = float(np.mean(values)) if fallback is None else fallback
    where = grid.cell_id(*grid.to_degrees(x_new_km * KM))
    position = np.full(grid.n_cells + 1, -1, dtype=np.int64)
    position[cells] = np.arange(len(cells))
    at = position[np.where(where >= 0, where, grid.n_cells)]  # index in ``cells``, or -1
    if smoother == "none":
        return np.where(at >= 0, values[np.maximum(at, 0)], fallback)
    fit = np.ones(len(cells), dtype=bool)
    if raw is not None and noise_var is not None:
        informative = noise_var <= between_variance(raw, noise_var, fallback)
        if int(informative.sum()) >= MIN_CLEAR_CELLS:
            fit = informative
    centroids = grid.centroids_metres()[cells] / KM
    points = np.vstack([centroids, x_new_km])
    if smoother == "idw":
        surface = idw_predict(centroids[fit], values[fit], points, others=True)
    else:
        model = fit_window(centroids[fit], values[fit])
        surface = np.nan_to_num(model.predict(points)[0], nan=fallback)
    at_cells, at_new = surface[: len(cells)], surface[len(cells) :]
    own = values if raw is None or noise_var is None else shrink(raw, noise_var, at_cells)
    return np.clip(np.where(at >= 0, own[np.maximum(at, 0)], at_new), 0.0, clip)
