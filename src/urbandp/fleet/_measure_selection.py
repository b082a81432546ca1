"""Which HATs are released (ITMS report section III C and IV B, and its DP replacement).

``public-threshold`` is the report's rule: keep a cell when, in every slot, the number of unique vehicles summed
over the D days reaches ``min_vehicles_per_day x D``. It reads true counts. Under the presence-public relation
those counts are public by assumption, so it costs nothing there; under add/remove it is NOT differentially private
and is labelled so.

``dp`` releases the HATs whose noisy vehicle-day count passes a threshold. Two steps, in this order:

1. :func:`calibrate_selection` reads public parameters only (K, D, the budget, the target delta, the size of the
   public domain) and fixes the noise scale and the threshold from OpenDP's privacy maps;
2. :func:`measure_selection` draws the noisy counts once.

Without a public domain, OpenDP's unknown-domain threshold mechanisms are used (Rogers 2023):
``make_laplace_threshold`` (pure-DP noise, distance (l0, l1, linf) = (K, K, 1)) or ``make_gaussian_threshold``
(zCDP noise, distance (l0, l2, linf) = (K, ceil(sqrt K), 1); OpenDP bounds l2^2 by min(l2^2, l0 linf^2) = K).
Over a window of D days one vehicle is D vehicle-days: the window's cost is the same map at (D K, D K, D), resp.
(D K, D sqrt K, D), which is tighter than group privacy. The integer-count measurement's map takes an integer l2;
at the window, where min(l2^2, l0 linf^2) = ceil(D sqrt K)^2 would overstate D^2 K, the map is read from OpenDP's
float-count twin at the exact l2 (:func:`window_l2`, :func:`_window_map`).

With a public domain (``domain_bbox``: the city's extent, chosen without looking at the data) every HAT of the
domain gets a noisy count, zeros included, and no delta is needed for the selection itself. The noisy counts are
kept: under add/remove they are the denominator of Query 1 at no further cost (post-processing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from statistics import NormalDist

import numpy as np
import polars as pl
import polars_h3 as plh3

import urbandp._privacy.dp_prelude as dp
from urbandp._privacy.bisection import smallest_passing
from urbandp._privacy.mechanisms import Laplace, gaussian_rho, smallest_scale
from urbandp._privacy.noise import NoiseSource

dp.enable_features("contrib")


@dataclass(frozen=True)
class SelectionResult:
    hats: pl.DataFrame  # cell, slot (+ noisy_n for dp)
    method: str
    differentially_private: bool
    scale: float | None = None
    threshold: float | None = None
    epsilon_per_hat_per_day: float = 0.0
    epsilon_per_day: float = 0.0
    delta_per_day: float = 0.0
    rho_per_hat_per_day: float = 0.0
    rho_per_day: float = 0.0
    mechanism: str = "none"
    # cost over the window of D days (OpenDP map at the window's distance): (epsilon or rho, delta)
    window_cost: tuple[float, float] = (0.0, 0.0)
    domain_hats: int | None = None
    max_noisy_count: float | None = None  # over every HAT that got a noisy count (post-processing)
    # a route domain: every domain HAT released; the threshold then decides only where a mean is shown
    release_all: bool = False

    def per_day(self, currency: str) -> float:
        """The selection's cost per vehicle-day in ``currency`` (``rho`` or ``epsilon``, the plan's)."""
        return self.rho_per_day if currency == "rho" else self.epsilon_per_day


def public_threshold(
    per_hat: pl.DataFrame, slots: list[int], min_per_day: float, days: int
) -> SelectionResult:
    """The report's rule: cells with ``sum_days unique vehicles >= min_per_day * days`` in every slot (IV B)."""
    need = min_per_day * days
    passing = per_hat.filter(pl.col("n") >= need).group_by("cell").agg(pl.col("slot").n_unique().alias("k"))
    cells = passing.filter(pl.col("k") == len(slots)).select("cell")
    hats = cells.join(pl.DataFrame({"slot": pl.Series(slots, dtype=pl.Int16)}), how="cross")
    return SelectionResult(
        hats=hats.sort("cell", "slot"),
        method="public-threshold",
        differentially_private=False,
        threshold=need,
    )


def _threshold_measurement(scale: float, threshold: int, gaussian: bool = False) -> dp.Measurement:
    """OpenDP's Laplace or Gaussian threshold over integer counts keyed by text: noisy counts, kept where they reach
    ``threshold``; its map at :func:`threshold_distance` is the selection's (epsilon or rho, delta)."""
    domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int))
    if gaussian:
        metric = dp.l02inf_distance(dp.absolute_distance(T=int))
        return dp.m.make_gaussian_threshold(domain, metric, scale=scale, threshold=threshold)
    metric = dp.l01inf_distance(dp.absolute_distance(T=int))
    return dp.m.make_laplace_threshold(domain, metric, scale=scale, threshold=threshold)


def threshold_distance(k: int, days: int = 1, gaussian: bool = False) -> tuple[int, int, int]:
    """Input distance of one vehicle over ``days`` days: (l0, l1, linf) or (l0, ceil(l2), linf)."""
    if gaussian:
        return (days * k, math.ceil(days * math.sqrt(k)), days)
    return (days * k, days * k, days)


def window_l2(k: int, days: int) -> float:
    """Exact L2 distance of one vehicle over ``days`` days: ``D sqrt K`` (K HATs a day, each moved by at most one a
    day, so the per-HAT changes c_i <= D with sum c_i <= D K, and sum c_i^2 <= K D^2). Returned as the smallest
    float whose square is at least ``D^2 K`` exactly, so that rounding never understates the distance."""
    exact = Fraction(days * days * k)
    l2 = days * math.sqrt(k)
    while Fraction(l2) ** 2 < exact:
        l2 = math.nextafter(l2, math.inf)
    return l2


def _window_map(scale: float, threshold: int, k: int, days: int, gaussian: bool) -> tuple[float, float]:
    """OpenDP's threshold map at one vehicle's window distance (D K, D K, D), resp. (D K, D sqrt K, D).

    Laplace: the integer measurement's own map. Gaussian: OpenDP's integer-count measurement takes an integer
    l2, and ``ceil(D sqrt K)`` would overstate the cost by ``ceil(D sqrt K)^2 / (D^2 K)`` (1024 / 972 = 1.053 at
    K 12, D 9; 121 / 108 = 1.12 at K 12, D 3). The map is read instead from the float-count twin (the same scale
    and threshold, ``make_gaussian_threshold`` over float counts), which takes a float l2. The two maps agree at
    every integer distance (checked by a test); the discrete Gaussian's zCDP bound
    depends on the shift only through its squared L2 norm (Canonne, Kamath and Steinke 2020, the multivariate
    discrete Gaussian, Thm 14), which is the integer D^2 K here, so the exact map holds for the integer draws.
    """
    if not gaussian:
        return _threshold_measurement(scale, threshold, False).map(threshold_distance(k, days, False))
    domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=float, nan=False))
    metric = dp.l02inf_distance(dp.absolute_distance(T=float))
    twin = dp.m.make_gaussian_threshold(domain, metric, scale=scale, threshold=float(threshold))
    cost, delta = twin.map((days * k, window_l2(k, days), float(days)))
    return float(cost), float(delta)


def smallest_threshold(scale: float, k: int, delta: float, at_least: float, gaussian: bool = False) -> int:
    """Smallest integer threshold >= ``at_least`` whose privacy map gives delta <= target at one vehicle-day."""
    d_in = threshold_distance(k, 1, gaussian)

    def ok(t: int) -> bool:
        return bool(_threshold_measurement(scale, t, gaussian).map(d_in)[1] <= delta)

    lo = max(1, math.ceil(at_least))
    if ok(lo):
        return lo
    hi = lo * 2
    while not ok(hi):
        hi *= 2
    return smallest_passing(ok, lo, hi)


def domain_cells(bbox: tuple[float, float, float, float], resolution: int) -> pl.Series:
    """H3 cells whose centroid lies in the public bounding box (min_lat, min_lon, max_lat, max_lon)."""
    a, b, c, d = bbox
    wkt = f"POLYGON(({b} {a}, {d} {a}, {d} {c}, {b} {c}, {b} {a}))"
    cells = (
        pl.DataFrame({"g": [wkt]})
        .select(plh3.polygon_to_cells("g", resolution).alias("cell"))
        .explode("cell")
    )
    return cells["cell"].drop_nulls().unique().sort()


EXPECTED_FALSE_POSITIVES = 0.05


def false_positive_threshold(
    scale: float,
    domain_size: int,
    at_least: float,
    gaussian: bool = False,
    expected: float = EXPECTED_FALSE_POSITIVES,
) -> float:
    """Threshold keeping the expected number of released EMPTY HATs at or below 0.05 per release.

    Laplace: an empty HAT's noisy count passes ``t`` with probability ``exp(-t / scale) / 2``, so over a domain of
    ``m`` HATs ``t = scale * ln(m / (2 * 0.05))``. Gaussian: ``t = sigma * Phi^-1(1 - 0.05 / m)``. The threshold
    depends only on public quantities (scale, domain size), so it costs nothing. (At an expected 1 per release,
    the first version's level, empty HATs showed up in most real-data releases with a mean of noise over noise.)
    The Gaussian counts are continuous, so ``t`` is used as it is; the discrete Laplace counts are integers, so
    ``ceil(t)`` passes the same HATs. (Rounding the Gaussian ``t`` up as well, 19.65 -> 20 on four Austin days at
    epsilon 10, cost about 8 of 362 HATs for nothing.)
    """
    m = max(domain_size, 1)
    f = expected
    t = scale * NormalDist().inv_cdf(1.0 - f / m) if gaussian else math.ceil(scale * math.log(m / (2.0 * f)))
    return float(max(at_least, t))


@dataclass(frozen=True)
class SelectionCalibration:
    """Everything the selection will do, fixed from public parameters before any count is read."""

    method: str  # "dp" (unknown domain) or "dp-public-domain"
    gaussian: bool
    scale: float
    threshold: float
    cost_hat: float  # epsilon (laplace) or rho (gaussian) per HAT per day
    cost_day: float  # ... per vehicle-day (K HATs)
    delta_day: float
    window_cost: tuple[float, float]
    release_all: bool = False  # a route domain: every domain HAT released, the threshold not applied


# cached: public parameters only, and the plan (charge), the planner and the release calibrate the same selection
@lru_cache(maxsize=64)
def calibrate_selection(
    *,
    gaussian: bool,
    k: int,
    days: int,
    budget: float,
    delta: float,
    min_per_day: float,
    domain_size: int | None,
    false_positives: float = EXPECTED_FALSE_POSITIVES,
    release_all: bool = False,
) -> SelectionCalibration:
    """Scale and threshold from the budget (epsilon for Laplace, rho for Gaussian), from OpenDP maps, once.

    ``release_all`` (a route domain, which is public): every domain HAT is released whatever its noisy count; the
    threshold is computed (it is what an extent would use) but not applied.
    """
    # OpenDP's Gaussian threshold bounds the squared L2 norm by min(l2^2, l0 linf^2) = K at one vehicle-day, so
    # sigma = sqrt(K / (2 rho)); starting from ceil(sqrt K) instead wasted up to a third of the budget at small K
    guess = math.sqrt(k / (2.0 * budget)) if gaussian else k / budget
    if domain_size is not None:
        if gaussian:  # a vehicle-day moves K counts by one: L2 norm sqrt K
            scale = smallest_scale(lambda s: gaussian_rho(math.sqrt(k), s), budget, guess)
            cost_hat = gaussian_rho(1.0, scale)
            cost_day = gaussian_rho(math.sqrt(k), scale)
            window = (gaussian_rho(days * math.sqrt(k), scale), 0.0)
        else:  # L1 norm K, OpenDP's integer Laplace
            scale = smallest_scale(lambda s: Laplace(s, discrete=True).loss(k).epsilon, budget, guess)
            counts = Laplace(scale, discrete=True)
            cost_hat = counts.loss(1).epsilon
            cost_day = counts.loss(k).epsilon
            window = (counts.loss(days * k).epsilon, 0.0)
        threshold = false_positive_threshold(
            scale, domain_size, min_per_day * days, gaussian, false_positives
        )
        method, delta_day = "dp-public-domain", 0.0
    else:
        d_day = threshold_distance(k, 1, gaussian)
        # The threshold is the per-day one (the privacy unit is a vehicle-day). It is not raised to D: over the
        # window one vehicle can move a HAT's count by D, and a vehicle alone in a HAT on >= threshold days is
        # released with probability >= 1/2, so the window's delta is ~1 below D and stays ~1 at D (0.99999 at 40
        # with D = 31, K = 32). A floor of D cost HATs (31 against 27 at epsilon 10 on a month) and bought nothing.
        t = smallest_threshold(guess, k, delta, max(min_per_day * days, 1.0), gaussian)
        # OpenDP rounds its map outward: the smallest scale whose map at this threshold stays within budget
        scale = smallest_scale(
            lambda s: float(_threshold_measurement(s, t, gaussian).map(d_day)[0]), budget, guess
        )
        meas = _threshold_measurement(scale, t, gaussian)
        cost_day, delta_day = meas.map(d_day)
        cost_hat = meas.map((1, 1, 1))[0]
        # OpenDP's map needs threshold >= the l-infinity distance (D over the window): below D the noise's cost is
        # read at threshold D (it does not depend on the threshold) and the window's delta is 1, stated as such
        w_eps, w_delta = _window_map(scale, max(t, days), k, days, gaussian)
        method, threshold, window = "dp", float(t), (float(w_eps), float(w_delta) if t >= days else 1.0)
    costs = (float(cost_hat), float(cost_day), float(delta_day))
    return SelectionCalibration(method, gaussian, scale, threshold, *costs, window, release_all)


def measure_selection(
    cal: SelectionCalibration, per_hat: pl.DataFrame, noise: NoiseSource, grid: pl.DataFrame | None = None
) -> SelectionResult:
    """Draw the noisy counts (once) and keep the HATs over the calibrated threshold."""
    if cal.method == "dp-public-domain":
        assert grid is not None
        counts = grid.join(per_hat.select("cell", "slot", "n"), on=["cell", "slot"], how="left").with_columns(
            pl.col("n").fill_null(0)
        )
        n = counts["n"].to_numpy()
        drawn = (
            noise.gaussian(n.astype(float), cal.scale)
            if cal.gaussian
            else noise.discrete_laplace(n, cal.scale)
        )
        column = pl.Series("noisy_n", drawn, dtype=pl.Float64 if cal.gaussian else pl.Int64)
        hats = counts.select("cell", "slot").with_columns(column)
    else:
        true_n = {str(i): int(v) for i, v in enumerate(per_hat["n"].to_numpy())}
        if noise.is_private:  # OpenDP draws inside its threshold measurement
            kept = _threshold_measurement(cal.scale, int(cal.threshold), cal.gaussian)(true_n)
        else:  # exact test mode: the same rule on true counts
            kept = {key: v for key, v in true_n.items() if v >= cal.threshold}
        noisy = np.full(len(true_n), np.nan)
        noisy[[int(key) for key in kept]] = [float(v) for v in kept.values()]
        hats = (
            per_hat.select(pl.col("cell").cast(pl.UInt64), pl.col("slot").cast(pl.Int16))
            .with_columns(pl.Series("noisy_n", noisy, dtype=pl.Float64))
            .filter(pl.col("noisy_n").is_not_nan())
        )
    largest = float(hats["noisy_n"].max()) if hats.height else None  # type: ignore[arg-type]
    if cal.method == "dp-public-domain" and not cal.release_all:
        hats = hats.filter(pl.col("noisy_n") >= cal.threshold)
    mechanism = ("gaussian" if cal.gaussian else "laplace") + (
        " threshold (OpenDP, unknown domain)" if cal.method == "dp" else " counts over the public domain"
    )
    return SelectionResult(
        hats=hats.sort("cell", "slot"),
        method=cal.method,
        differentially_private=True,
        scale=cal.scale,
        threshold=cal.threshold,
        release_all=cal.release_all,
        epsilon_per_hat_per_day=0.0 if cal.gaussian else cal.cost_hat,
        epsilon_per_day=0.0 if cal.gaussian else cal.cost_day,
        delta_per_day=cal.delta_day,
        rho_per_hat_per_day=cal.cost_hat if cal.gaussian else 0.0,
        rho_per_day=cal.cost_day if cal.gaussian else 0.0,
        mechanism=mechanism,
        window_cost=cal.window_cost,
        domain_hats=None if grid is None else grid.height,
        max_noisy_count=largest,
    )
