"""Per-window GP interpolation onto the square grid, and cross-validated accuracy against IDW.

Paper section V: readings are split into windows (one hour by default), a GP with a Matern 3/2 kernel is fitted
per window on standardised values and the posterior mean ``mu_p`` (eq. 4) and variance ``sigma_p^2`` (eq. 5) are
predicted at every cell centroid. Inputs are the grid's planar coordinates in kilometres.
Appendix A of the paper evaluates GPR accuracy by cross-validated RMSE; :func:`cross_validate` does the same and
compares with inverse-distance weighting (IDW, power 2), the usual baseline interpolator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from urbandp.sensing._gp import Bounds, ExactGP, Hyperparameters, SparseGP, method_name
from urbandp.sensing._grid import SquareGrid
from urbandp.sensing._kernels import distances
from urbandp.sensing._readings import Readings, window_starts

KM = 1000.0


@dataclass
class WindowResult:
    """One window's model and grid prediction (``mu``/``sigma2`` in original units; ``sigma2_std`` standardised)."""

    window: np.datetime64
    n_readings: int
    method: str
    hyperparameters: Hyperparameters
    log_marginal_likelihood: float
    value_mean: float
    value_sd: float
    mu: np.ndarray
    sigma2: np.ndarray
    sigma2_std: np.ndarray
    reading_xy_km: np.ndarray


def fit_window(
    xy_km: np.ndarray,
    values: np.ndarray,
    kernel: str = "matern32",
    exact_max: int = 2000,
    n_inducing: int = 500,
    bounds: Bounds | None = None,
    hyperparameters: Hyperparameters | None = None,
) -> ExactGP | SparseGP:
    """Fit the GP chosen by size: exact up to ``exact_max`` readings, SGPR beyond (paper App. B's O(n^3); the
    choice is reported as ``method``).

    ``hyperparameters`` (in the standardised units of these ``values``) fixes them and skips the optimisation.
    """
    b = bounds or Bounds()
    model: ExactGP | SparseGP
    if len(values) <= exact_max:
        model = ExactGP(kernel, bounds=b, hyperparameters=hyperparameters)
    else:
        model = SparseGP(kernel, n_inducing, bounds=b, hyperparameters=hyperparameters)
    return model.fit(xy_km, values)


def interpolate_windows(
    readings: Readings,
    grid: SquareGrid,
    window_minutes: int = 60,
    kernel: str = "matern32",
    exact_max: int = 2000,
    n_inducing: int = 500,
    bounds: Bounds | None = None,
    min_readings: int = 3,
    progress: Callable[[int, int], None] | None = None,
    origin: np.datetime64 | None = None,
) -> tuple[list[WindowResult], dict[str, int]]:
    """GP per window; windows with fewer than ``min_readings`` readings are skipped (counted in the report).

    ``origin``: where the windows are counted from (a release's public start; default the Unix epoch)."""
    starts = window_starts(readings.time, window_minutes, origin)
    xy_all = grid.to_metres(readings.lat, readings.lon) / KM
    centroids = grid.centroids_metres() / KM
    windows = np.unique(starts)
    results: list[WindowResult] = []
    skipped = 0
    for i, w in enumerate(windows):
        mask = starts == w
        if int(mask.sum()) < min_readings:
            skipped += 1
        else:
            model = fit_window(xy_all[mask], readings.value[mask], kernel, exact_max, n_inducing, bounds)
            m_std, v_std = model.predict_standardised(centroids)
            lml = model.elbo_ if isinstance(model, SparseGP) else model.log_marginal_likelihood_
            results.append(
                WindowResult(
                    window=w,
                    n_readings=int(mask.sum()),
                    method=method_name(model),
                    hyperparameters=model.hyperparameters_,
                    log_marginal_likelihood=float(lml),
                    value_mean=model.value_mean_,
                    value_sd=model.value_sd_,
                    mu=m_std * model.value_sd_ + model.value_mean_,
                    sigma2=v_std * model.value_sd_**2,
                    sigma2_std=v_std,
                    reading_xy_km=xy_all[mask],
                )
            )
        if progress is not None:
            progress(i + 1, len(windows))
    return results, {"windows": len(windows), "windows_fitted": len(results), "windows_skipped": skipped}


def idw_predict(
    x_train: np.ndarray, y_train: np.ndarray, x_new: np.ndarray, others: bool = False
) -> np.ndarray:
    """Inverse-distance weighting (Shepard 1968); a point at distance 0 takes the mean of the coincident readings.

    ``others``: the training points lying on a point are left out instead (at a cell's own centroid the surface is
    its neighbours' view of it), and a point with no other training point takes the mean of ``y_train``."""
    d = distances(x_new, x_train)
    zero = d <= 1e-12
    with np.errstate(divide="ignore"):
        w = np.where(zero, 0.0, d**-2.0)
    if not others:
        has_zero = zero.any(axis=1)
        w[has_zero] = zero[has_zero].astype(float)
    total = w.sum(axis=1)
    return np.where(total > 0, (w @ y_train) / np.where(total > 0, total, 1.0), float(np.mean(y_train)))


@dataclass(frozen=True)
class CvReport:
    """Pooled held-out RMSE of the GP posterior mean and of IDW over all cross-validated windows."""

    folds: int
    windows: int
    held_out: int
    rmse_gp: float
    rmse_idw: float
    per_window: list[dict[str, float | int | str]]


def cross_validate(
    readings: Readings,
    grid: SquareGrid,
    window_minutes: int = 60,
    folds: int = 5,
    kernel: str = "matern32",
    exact_max: int = 2000,
    n_inducing: int = 500,
    max_windows: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    fitted: dict[np.datetime64, Hyperparameters] | None = None,
) -> CvReport:
    """K-fold cross-validation per window (random folds, seed 0) of the windows with at least 10 readings (and one
    per fold), GP versus IDW, pooled RMSE.

    With ``fitted`` (window -> hyper-parameters fitted on all the window's readings, in its standardised units)
    each fold reuses them: one Cholesky per fold instead of an optimisation per fold (Rasmussen & Williams 2006,
    section 5.4.2 uses fixed hyper-parameters for leave-out predictions the same way). The held-out readings then
    took part in choosing the three hyper-parameters, so the GP's RMSE is slightly optimistic; without ``fitted``
    every fold is re-optimised (nested, unbiased, ``folds`` times slower).
    """
    starts = window_starts(readings.time, window_minutes)
    xy_all = grid.to_metres(readings.lat, readings.lon) / KM
    windows = [w for w in np.unique(starts) if int((starts == w).sum()) >= max(10, folds)]
    if max_windows is not None:
        windows = windows[:max_windows]
    rng = np.random.default_rng(0)
    se_gp: list[np.ndarray] = []
    se_idw: list[np.ndarray] = []
    per_window: list[dict[str, float | int | str]] = []
    for i, w in enumerate(windows):
        mask = starts == w
        x, y = xy_all[mask], readings.value[mask]
        fold_of = rng.permutation(len(y)) % folds
        e_gp = np.empty(len(y))
        e_idw = np.empty(len(y))
        hp = fitted.get(w) if fitted is not None else None
        sd_all = float(np.std(y)) or 1.0
        for f in range(folds):
            test = fold_of == f
            fold_hp = None
            if hp is not None:  # the fit's units are the window's sd; a fold standardises with its own
                fold_hp = hp.rescaled((sd_all / (float(np.std(y[~test])) or 1.0)) ** 2)
            model = fit_window(x[~test], y[~test], kernel, exact_max, n_inducing, hyperparameters=fold_hp)
            e_gp[test] = model.predict(x[test])[0] - y[test]
            e_idw[test] = idw_predict(x[~test], y[~test], x[test]) - y[test]
        se_gp.append(e_gp**2)
        se_idw.append(e_idw**2)
        per_window.append(
            {
                "window": str(w),
                "n": len(y),
                "rmse_gp": float(np.sqrt(np.mean(e_gp**2))),
                "rmse_idw": float(np.sqrt(np.mean(e_idw**2))),
            }
        )
        if progress is not None:
            progress(i + 1, len(windows))
    if not windows:
        return CvReport(folds, 0, 0, float("nan"), float("nan"), [])
    all_gp = np.concatenate(se_gp)
    all_idw = np.concatenate(se_idw)
    return CvReport(
        folds,
        len(windows),
        int(all_gp.size),
        float(np.sqrt(all_gp.mean())),
        float(np.sqrt(all_idw.mean())),
        per_window,
    )
