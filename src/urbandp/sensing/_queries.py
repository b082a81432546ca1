"""Aggregate queries over grid cells with error propagation (paper section VII-C, Table III) and DP (VII-D).

This plaintext module is the reference the secure two-party version must match: every function is pure, takes
numpy arrays ``mu``, ``sigma2`` (the server's cells of the obfuscation rectangle) and ``v`` (the client's 0/1
selection, eq. 11-12) and returns a :class:`QueryResult`; the threshold bit ``beta = [sum v >= alpha]`` (eq. 10)
zeroes the answer. Propagated error eq. (13): ``E = sqrt(sum_i (df/dy_i)^2 sigma_i^2)``. The formulas of each
query, where they depart from Table III (AVERAGE's error is eq. 16, COUNT's sigmoid eq. 20) and why, are in
docs/sensing.md, section "Aggregate queries with error propagation".

DP (section VII-D): Laplace noise on ``E^2``, clamped to its range. Privacy unit: ONE READING. A GP posterior
variance depends on every reading, so one reading moves every cell's ``sigma_i^2`` at once and the paper's
per-cell sensitivity understates epsilon by up to ``n`` times; the sensitivity used is the width of the range of
``E^2`` over the public domain (:func:`error2_range`). ``sigma2_min``/``sigma2_max`` must be public (the paper
reads them from the GP output, which is not DP); cell variances are clamped into them first
(:func:`clamp_sigma2`). The value ``f`` is not perturbed (as in the paper) and is not differentially private.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from urbandp._privacy.mechanisms import laplace_epsilon, laplace_scale
from urbandp._privacy.noise import NoiseSource
from urbandp.errors import InvalidParameterError

QUERY_TYPES = ("average", "min", "max", "min-exact", "max-exact", "count", "range")

MIN_STEEPNESS = 1e-3
MAX_STEEPNESS = 1e3
STEEPNESS_WHY = (
    "the count and range queries' sensitivity grows as k^2 (eq. 22): a smaller k underflows it to 0, a larger "
    "one makes the sigmoid a step"
)
"""Bounds of the sigmoid steepness k (the paper uses 1), shared by `sensing query` and `mpc serve`."""


@dataclass(frozen=True)
class QueryResult:
    """Value ``f``, propagated error ``E`` (a standard deviation) and whether the threshold alpha was met."""

    value: float
    error: float
    n_selected: int
    answered: bool
    noisy_error2: float | None = None
    epsilon: float | None = None
    noise_scale: float | None = None  # the Laplace scale b of the noisy squared error (public)
    error2_bounds: tuple[float, float] | None = None  # its public range [lo, hi] (the clamp)

    @property
    def error2(self) -> float:
        return self.error**2

    def error2_scale(self) -> dict[str, object]:
        """How far the noisy squared error may be from the true one (:func:`error2_interval`), or {}."""
        if self.noisy_error2 is None or self.noise_scale is None or self.error2_bounds is None:
            return {}
        return error2_interval(self.noisy_error2, self.noise_scale, *self.error2_bounds)


CONFIDENCE = 0.95


def error2_interval(noisy: float, scale: float, lo: float, hi: float) -> dict[str, object]:
    """The scale of a noisy squared error (post-processing of public figures): the noise's standard deviation
    ``sqrt(2) b`` and a 95% interval for the true ``E^2``, ``noisy +- b ln(1 / 0.05)`` (the Laplace tail
    ``P(|X| > q) = exp(-q / b)``) within its public range ``[lo, hi]``. A noisy value clamped to an end of the
    range is still covered: the true value lies in the range, and the unclamped draw was beyond the end. When the
    interval is the whole range, the answer says nothing about the error at this epsilon."""
    q = scale * math.log(1.0 / (1.0 - CONFIDENCE))
    low, high = max(lo, noisy - q), min(hi, noisy + q)
    return {
        "error2_noise_sd": math.sqrt(2.0) * scale,
        "error2_interval95": [low, high],
        "error2_range": [lo, hi],
        "error2_informative": not (low <= lo and high >= hi),
    }


def describe_error2(noisy: float, scale: Mapping[str, object]) -> str:
    """One line for the command's summary: the noisy squared error with its scale, never a bare number."""
    interval, bounds = scale["error2_interval95"], scale["error2_range"]
    assert isinstance(interval, (list, tuple)) and isinstance(bounds, (list, tuple))
    low, high = float(interval[0]), float(interval[1])
    lo, hi = float(bounds[0]), float(bounds[1])
    text = (
        f"DP squared error {noisy:.4g} (noise sd {scale['error2_noise_sd']:.4g}; the true squared error lies in "
        f"[{low:.4g}, {high:.4g}] with 95% confidence"
    )
    if not scale["error2_informative"]:
        text += (
            f": the whole public range [{lo:.4g}, {hi:.4g}], so this answer says nothing of the error; a larger "
            "epsilon or narrower sigma2 bounds would"
        )
    return text + ")"


def _selected(
    mu: np.ndarray, sigma2: np.ndarray, v: np.ndarray, alpha: int
) -> tuple[np.ndarray, np.ndarray, bool]:
    mu = np.asarray(mu, dtype=float)
    sigma2 = np.asarray(sigma2, dtype=float)
    v = np.asarray(v).astype(bool)
    if not (mu.shape == sigma2.shape == v.shape) or mu.ndim != 1:
        raise ValueError("mu, sigma2 and v must be 1-D arrays of the same length")
    if np.any(sigma2 < 0):
        raise ValueError("sigma2 must be >= 0")
    beta = int(v.sum()) >= max(int(alpha), 1)  # eq. (10)
    return mu[v], sigma2[v], beta


def _propagated(w: np.ndarray, s2: np.ndarray) -> float:
    """Eq. (13): ``E = sqrt(sum_i (df/dy_i)^2 sigma_i^2)`` with the derivatives ``w``."""
    return float(np.sqrt(np.sum(w**2 * s2)))


def _logsumexp(y: np.ndarray, s2: np.ndarray, rho: float) -> tuple[float, float]:
    """Eq. (17)-(19): smooth max (rho > 0) or min (rho < 0), and its error."""
    z = rho * y
    z_star = float(z.max())
    e = np.exp(z - z_star)
    total = float(e.sum())
    return float((z_star + np.log(total)) / rho), _propagated(e / total, s2)  # weights eq. (18)


def sigmoid(y: np.ndarray, theta: float, steepness: float = 1.0) -> np.ndarray:
    """S(y, theta) = 1 / (1 + exp(-k (y - theta))) (eq. 20), computed without overflow."""
    t = steepness * (np.asarray(y, dtype=float) - theta)
    return 0.5 * (1.0 + np.tanh(0.5 * t))


def run_query(
    query: str,
    mu: np.ndarray,
    sigma2: np.ndarray,
    v: np.ndarray,
    alpha: int = 1,
    rho: float = 1.0,
    theta: float | None = None,
    theta2: float | None = None,
    steepness: float = 1.0,
) -> QueryResult:
    """The query named ``query`` (one of :data:`QUERY_TYPES`) over the cells selected by ``v``; ``rho`` is used
    with its sign set by min/max. Fewer than ``alpha`` selected cells: refused (eq. 10), nothing computed.

    AVERAGE eq. (14) and (16); MIN/MAX the LogSumExp of eq. (17)-(19); MIN-EXACT/MAX-EXACT the exact extreme
    with the error of the arg-extreme cell (the first one on ties); COUNT and RANGE smooth counts (Table III)."""
    if query not in QUERY_TYPES:
        raise ValueError(f"unknown query {query!r}; choose one of {', '.join(QUERY_TYPES)}")
    if query in ("min", "max") and rho == 0:
        raise ValueError("rho must be non-zero (> 0 for max, < 0 for min)")
    if query in ("count", "range") and theta is None:
        raise ValueError(f"{query} needs theta")
    if query == "range" and (theta2 is None or not theta < theta2):  # type: ignore[operator]
        raise ValueError("range needs theta1 < theta2")
    y, s2, beta = _selected(mu, sigma2, v, alpha)
    if not beta:
        return QueryResult(0.0, 0.0, len(y), False)
    if query == "average":
        value, error = float(y.sum() / len(y)), float(np.sqrt(s2.sum()) / len(y))
    elif query in ("min", "max"):
        value, error = _logsumexp(y, s2, abs(rho) if query == "max" else -abs(rho))
    elif query in ("min-exact", "max-exact"):
        i = int(np.argmin(y) if query == "min-exact" else np.argmax(y))
        value, error = float(y[i]), float(np.sqrt(s2[i]))
    elif query == "count":  # eq. (20)-(22): cells with mu > theta
        s = sigmoid(y, theta, steepness)  # type: ignore[arg-type]
        value, error = float(s.sum()), _propagated(steepness * s * (1.0 - s), s2)
    else:  # RANGE: cells with theta < mu < theta2
        s1, s2_ = sigmoid(y, theta, steepness), sigmoid(y, theta2, steepness)  # type: ignore[arg-type]
        w = steepness * (s1 * (1.0 - s1) - s2_ * (1.0 - s2_))
        value, error = float(np.sum(s1 - s2_)), _propagated(w, s2)
    return QueryResult(value, error, len(y), True)


def error2_range(
    query: str, n_selected: int, sigma2_min: float, sigma2_max: float, steepness: float = 1.0
) -> tuple[float, float]:
    """Range ``[lo, hi]`` of ``E^2`` over the public domain for ``n_selected`` cells (docs/sensing.md, section
    "Aggregate queries with error propagation").

    Any change of the readings (one reading moves every cell's ``mu`` and ``sigma^2``) keeps ``E^2`` inside it,
    so ``hi - lo`` is a per-reading sensitivity, and the noisy ``E^2`` is clamped to it.
    """
    if not (0 <= sigma2_min < sigma2_max):
        raise ValueError("need 0 <= sigma2_min < sigma2_max")
    if n_selected < 1:
        raise ValueError("need at least one selected cell")
    n = float(n_selected)
    if query == "average":
        return sigma2_min / n, sigma2_max / n
    if query in ("min", "max"):
        return sigma2_min / n, sigma2_max
    if query in ("min-exact", "max-exact"):
        return sigma2_min, sigma2_max
    if query in ("count", "range"):
        # |df/dy_i| = k S (1 - S) <= k/4; for RANGE |S1(1-S1) - S2(1-S2)| <= 1/4 too
        return 0.0, n * steepness**2 * sigma2_max / 16.0
    raise ValueError(f"unknown query {query!r}")


def privatize_error(
    result: QueryResult,
    query: str,
    epsilon: float,
    sigma2_min: float,
    sigma2_max: float,
    noise: NoiseSource,
    steepness: float = 1.0,
) -> QueryResult:
    """Section VII-D: ``E^2 + Lap(Delta / epsilon)`` clamped to :func:`error2_range`; privacy unit one reading.

    The cells' sigma^2 must already lie in ``[sigma2_min, sigma2_max]`` (the caller clamps them with
    :func:`clamp_sigma2` before the query) for the range to hold. The scale comes from OpenDP's privacy map
    (:func:`urbandp._privacy.noise.laplace_scale`) and the epsilon reported is recomputed from it.
    A refused query (threshold not met) releases nothing and costs nothing.
    """
    if not result.answered:
        return result
    lo, hi = error2_range(query, result.n_selected, sigma2_min, sigma2_max, steepness)
    if not (hi - lo > 0 and math.isfinite(hi - lo)):
        raise InvalidParameterError(
            f"the squared error's sensitivity is {hi - lo:g} for sigma2_min {sigma2_min:g}, sigma2_max "
            f"{sigma2_max:g} and steepness {steepness:g}: not a finite number > 0 (widen sigma2_min..sigma2_max)",
            parameters=("sigma2_min", "sigma2_max", "steepness"),
        )
    scale = laplace_scale(hi - lo, epsilon)
    noisy = float(noise.laplace(np.array([result.error2]), scale)[0])
    return replace(
        result,
        noisy_error2=float(np.clip(noisy, lo, hi)),
        epsilon=laplace_epsilon(hi - lo, scale),
        noise_scale=float(scale),
        error2_bounds=(lo, hi),
    )


def clamp_sigma2(sigma2: np.ndarray, sigma2_min: float, sigma2_max: float) -> np.ndarray:
    """Clamp per-cell variances into the public domain (needed for the VII-D sensitivity to hold)."""
    return np.clip(np.asarray(sigma2, dtype=float), sigma2_min, sigma2_max)


ANSWER_KEYS = ("function", "value", "error", "beta", "n_cells", "seconds")


def answer_json(
    function: str, value: float, noisy_error2: float | None, beta: bool, n_cells: int, seconds: float
) -> dict[str, object]:
    """The answer printed by ``urbandp sensing query`` and ``urbandp mpc query`` (same keys, comparable).

    ``error`` is the square root of the noisy, clamped squared propagated error (section VII-D); a refused query
    (``beta`` false: fewer than alpha cells) has ``value`` and ``error`` null.
    """
    return {
        "function": function,
        "value": float(value) if beta else None,
        "error": float(np.sqrt(max(noisy_error2, 0.0))) if beta and noisy_error2 is not None else None,
        "beta": bool(beta),
        "n_cells": int(n_cells),
        "seconds": round(float(seconds), 6),
    }


def read_cells_file(path: str | Path) -> list[int]:
    """Cell ids of interest, one integer per line (blank lines and ``#`` comments ignored).

    Raises :class:`urbandp.errors.InputError` with the line number on anything else.
    """
    from urbandp.errors import InputError

    p = Path(path)
    if not p.is_file():
        raise InputError(f"cells file not found: {p}")
    ids: list[int] = []
    for k, line in enumerate(p.read_text().splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            ids.append(int(text))
        except ValueError:
            raise InputError(f"{p}:{k}: expected one integer cell_id per line, got {text!r}") from None
    if not ids:
        raise InputError(f"{p}: no cell ids")
    return ids


def rectangle_mask(lat: np.ndarray, lon: np.ndarray, rect: tuple[float, ...]) -> np.ndarray:
    """Cells of the obfuscation rectangle (paper VII-A step 3): centroid inside the two diagonal vertices."""
    la1, lo1, la2, lo2 = rect
    lat = np.asarray(lat, dtype=float)
    lon = np.asarray(lon, dtype=float)
    return (lat >= min(la1, la2)) & (lat <= max(la1, la2)) & (lon >= min(lo1, lo2)) & (lon <= max(lo1, lo2))


def read_grid_window(
    path: Path, window: str | None, rect: tuple[float, ...] | None
) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One window's cells inside the obfuscation rectangle (``rect`` None: all of them, as ``mpc serve`` holds),
    read with the filter pushed into the scan.

    ``grid.parquet`` (written by ``interpolate``, one row group per window with statistics): only the row group of
    ``window`` is decoded, so a query costs the same on a grid of 10 windows or 10,000. ``grid.csv`` is streamed
    with the same filter (bounded memory, but every line is read). ``window`` None means the first window.
    Returns (window, cell_id, lat, lon, mu, sigma2), sorted by cell id. Raises :class:`InputError` on bad input.
    """
    import polars as pl

    from urbandp.errors import InputError

    path = Path(path)
    if not path.is_file():
        raise InputError(f"grid file not found: {path}")
    parquet = path.suffix.lower() in (".parquet", ".pq")
    try:
        lf = (
            pl.scan_parquet(path)
            if parquet
            else pl.scan_csv(path, schema_overrides={"window": pl.String, "cell_id": pl.Int64})
        )
        missing = {"cell_id", "lat", "lon", "window", "mu", "sigma2"} - set(lf.collect_schema().names())
        if missing:
            raise InputError(f"{path}: missing columns {', '.join(sorted(missing))}")
        first = lf.select(pl.col("window").first()).collect()
        if first.height == 0 or first.item() is None:
            raise InputError(f"{path}: no rows")
        w = window or str(first.item())
        inside = pl.col("window") == w
        if rect is not None:
            la1, lo1, la2, lo2 = rect
            inside &= pl.col("lat").is_between(min(la1, la2), max(la1, la2))
            inside &= pl.col("lon").is_between(min(lo1, lo2), max(lo1, lo2))
        numbers = pl.col("lat", "lon", "mu", "sigma2").cast(pl.Float64, strict=False)
        cells = lf.filter(inside).select("cell_id", numbers).sort("cell_id").collect()
        if cells.height == 0 and lf.filter(pl.col("window") == w).select(pl.len()).collect().item() == 0:
            raise InputError(f"window {w!r} not in {path} (first: {first.item()})")
    except pl.exceptions.PolarsError as err:  # polars raises several types for unreadable files
        raise InputError(f"{path}: cannot read ({str(err).splitlines()[0]})") from None
    return (
        w,
        cells["cell_id"].to_numpy(),
        cells["lat"].to_numpy(),
        cells["lon"].to_numpy(),
        cells["mu"].to_numpy(),
        cells["sigma2"].to_numpy(),
    )
