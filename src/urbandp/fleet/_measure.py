"""Steps 2-5 of a fleet release: bound, select, (clip bound), measure. The only place a fleet release draws noise.

Every draw goes through the plan's :class:`~urbandp._privacy.mechanisms.Mechanism` (or the selection's and the
clip bound's OpenDP measurements) with the :class:`~urbandp._privacy.noise.NoiseSource` of the release's
:class:`~urbandp._privacy.session.ReleaseCharge`, which refuses to draw before the budget is reserved.

* bound (:func:`truncate_vehicle_days`): a vehicle-day keeps at most K HATs, chosen from its presence only;
* select (:func:`select_hats`, :mod:`urbandp.fleet._measure_selection`): one noisy count per HAT, calibrated from the plan;
* clip bound (:func:`choose_clip_bound`, ``--clip-bound dp-quantile``): a DP quantile U' <= U;
* measure (:func:`measure_queries`): Query 1 (the centred sum over the selection's noisy count, or the mean under
  presence-public, or a user-level estimator) and Query 2, then post-processing (clamps, Fieller intervals).

ITMS report sections III C-E; user-level mean paper section III-E for the clip bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
import polars as pl

from urbandp._grid.h3cells import cell_to_string
from urbandp._grid.slots import SlotSpec
from urbandp._privacy.mechanisms import Gaussian, Laplace
from urbandp._privacy.noise import NoiseSource
from urbandp.errors import InputError
from urbandp.fleet._domain import domain_grid, load_public_domain
from urbandp.fleet._measure_selection import (
    SelectionResult,
    measure_selection,
    public_threshold,
)
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._plan import (
    QueryScales,
    ReleasePlan,
    calibrate_level_selection,
    hat_costs,
    speed_sensitivities,
)

# The truncation's public key seed and priors (:func:`truncate_vehicle_days`).
TRUNCATION_SEED = 20211115
DAYTIME_HOURS = (6, 22)
DWELL_HOURS = 4


def truncation_key() -> pl.Expr:
    """The keyed hash of (vehicle, day, cell, slot) with the fixed public seed: presence only."""
    return pl.struct(
        pl.col("vehicle").cast(pl.String),
        pl.col("day").cast(pl.String),
        pl.col("cell").cast(pl.UInt64),
        pl.col("slot").cast(pl.Int64),
    ).hash(seed=TRUNCATION_SEED)


def truncate_vehicle_days(
    contributions: pl.DataFrame, k: int, slot_minutes: int = 60
) -> tuple[pl.DataFrame, int]:
    """Keep K HATs per vehicle-day chosen from presence only; return the rows dropped.

    A vehicle-day that visits more than K HATs keeps them in this order (ITMS report III E bounds the HATs per
    vehicle-day; which ones to keep is free as long as the choice reads only the vehicle-day's own presence):

    1. **daytime first**: slots starting in [06:00, 22:00) (:data:`DAYTIME_HOURS`) before night ones. Few vehicles
       run at night, so a night HAT rarely reaches the selection threshold and its contribution is wasted;
    2. **no long dwells**: at most :data:`DWELL_HOURS` (4) hours' worth of slots in one cell before the
       vehicle-day's HATs elsewhere; the rest of a long dwell comes last (fewest extra hours first). A vehicle that
       stays in one cell for many hours (a depot, a long layover) would otherwise spend its K on HATs few other
       vehicles share;
    3. **a keyed hash** of (vehicle, day, cell, slot) with a fixed public seed (ties: lowest cell, slot); it also
       orders the slots within a cell for step 2.

    Each step reads no record count, no speed and no other vehicle-day, so two datasets with the same presence
    keep the same HATs and the same N (needed under presence-public, where N is public), and a vehicle-day's choice
    never depends on others: the sensitivity analysis is that of any fixed truncation. The two constants were
    chosen on the peer benchmark's tables, where they pass more HATs at the same noise (docs/fleet.md, "Privacy
    model", gives the figures).
    """
    key = truncation_key()
    start = pl.col("slot").cast(pl.Int32) * slot_minutes
    night = (start < DAYTIME_HOURS[0] * 60) | (start >= DAYTIME_HOURS[1] * 60)
    dwell_slots = max(1, DWELL_HOURS * 60 // slot_minutes)
    ranked = (
        contributions.with_columns(key.alias("_key"), night.alias("_night"))
        .with_columns(
            pl.struct("_key", pl.col("slot").cast(pl.Int64))
            .rank("ordinal")
            .over("vehicle", "day", "cell")
            .alias("_visit")
        )
        .with_columns(
            pl.when(pl.col("_visit") > dwell_slots).then(pl.col("_visit")).otherwise(0).alias("_dwell"),
        )
        .with_columns(
            pl.struct("_night", "_dwell", "_key", pl.col("cell").alias("_c"), pl.col("slot").alias("_s"))
            .rank("ordinal")
            .over("vehicle", "day")
            .alias("_rank")
        )
    )
    kept = ranked.filter(pl.col("_rank") <= k).drop("_rank", "_visit", "_dwell", "_key", "_night")
    return kept, contributions.height - kept.height


def l2_normalised(contributions: pl.DataFrame) -> pl.DataFrame:
    """Every contribution weighted ``1 / sqrt(m)``, ``m`` the HATs its vehicle-day visits.

    Sensitivity (add/remove a vehicle-day, Gaussian mechanism): a vehicle-day in ``m`` HATs changes the vector of
    weighted counts ``c_h = sum_v w_v`` by ``w_v = m^-1/2`` in ``m`` coordinates, an L2 norm of exactly 1, and the
    vector of weighted centred sums ``s_h = sum_v w_v (x_vh - U/2)`` by at most ``w_v U/2`` per coordinate, an L2
    norm of at most ``U/2`` (``x`` clipped to [0, U]). These are the L2 sensitivities of truncation to K = 1, with
    no row dropped: the accounting is that of K = 1. Over a window of D days one vehicle is D vehicle-days, each of
    norm 1, so the window's L2 norm is at most D (triangle inequality), as for K = 1. The weights read only the
    vehicle-day's own presence (its m), so a neighbour changes no other vehicle-day's weight.

    The released mean is the weighted mean ``sum w x / sum w`` of vehicle-day means: a vehicle-day seen in few
    HATs weighs more. Compared with truncation to K it trades the K-fold noise for this weighting (Wilson et al.
    2020 and Gopi et al. 2020, "Differentially private set union", weight each user's contribution by a norm
    bound in the same way).
    """
    m = pl.len().over("vehicle", "day").cast(pl.Float64)
    return contributions.with_columns((1.0 / m.sqrt()).alias("weight"))


def observed_max_hats(contributions: pl.DataFrame) -> int:
    """The most HATs any vehicle visits in a day (the report's K; reading it is not DP)."""
    if contributions.height == 0:
        return 0
    return int(contributions.group_by("vehicle", "day").len()["len"].max())  # type: ignore[arg-type]


def per_hat_aggregates(contributions: pl.DataFrame, speed_limit: float) -> pl.DataFrame:
    """Per HAT: N (vehicle-days), the sum of per-vehicle-day mean speeds, and vehicles over the limit (summed).

    With a ``weight`` column (:func:`l2_normalised`) N and the sum are weighted: ``sum w`` and ``sum w x``.
    """
    weighted = "weight" in contributions.columns
    n = pl.col("weight").sum() if weighted else pl.len().cast(pl.Int64)
    total = (pl.col("weight") * pl.col("mean_speed")).sum() if weighted else pl.col("mean_speed").sum()
    return (
        contributions.group_by("cell", "slot")
        .agg(
            n.alias("n"),
            total.alias("sum_mean_speed"),
            (pl.col("max_speed") > speed_limit).sum().cast(pl.Int64).alias("n_over_limit"),
        )
        .sort("cell", "slot")
    )


def select_hats(
    per_hat: pl.DataFrame,
    cfg: HatReleaseConfig,
    plan: ReleasePlan,
    k: int,
    noise: NoiseSource,
    slots: SlotSpec,
    grid: pl.DataFrame | None = None,
) -> SelectionResult:
    """The selection stage: calibrated from the plan (public), measured once.

    ``grid``: the public domain's HATs (a route domain: every one is released, see
    :mod:`urbandp.fleet._domain`); without it an extent's HATs are enumerated here at the level's resolution.
    """
    if cfg.selection == "public-threshold":
        return public_threshold(per_hat, slots.slots, cfg.min_per_day, plan.days)
    release_all = grid is not None and cfg.route_domain
    if grid is None and cfg.domain_bbox is not None:  # the extent at this level's resolution and slots
        extent = load_public_domain(cfg)
        assert extent is not None
        grid = domain_grid(extent, slots.slots)
    cal = calibrate_level_selection(cfg, plan, k, None if grid is None else grid.height, release_all)
    return measure_selection(cal, per_hat, noise, grid)


@dataclass
class Measured:
    """Query 1's answer for each released HAT (post-processed: clamped, intervals), what it cost and how many
    means were withheld; then the noisy counts and Query 2's answer (:func:`measure_queries`). An interval or sum
    a query does not give is NaN for each HAT."""

    mean_speed: np.ndarray
    speed_scales: np.ndarray
    speed_costs: np.ndarray  # per HAT per day (epsilon or rho)
    clamped: np.ndarray
    ci_low: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ci_high: np.ndarray = field(default_factory=lambda: np.zeros(0))
    noisy_sum: np.ndarray = field(default_factory=lambda: np.zeros(0))
    count_low: np.ndarray = field(default_factory=lambda: np.zeros(0))  # 95% interval of N (selection-aware)
    count_high: np.ndarray = field(default_factory=lambda: np.zeros(0))
    withheld: int = 0
    noisy_n: np.ndarray = field(default_factory=lambda: np.zeros(0))
    over_per_day: np.ndarray = field(default_factory=lambda: np.zeros(0))
    over_low: np.ndarray = field(default_factory=lambda: np.zeros(0))
    over_high: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        for name in ("ci_low", "ci_high", "noisy_sum", "count_low", "count_high"):
            size = getattr(self, name).size
            if size == 0:  # not given
                setattr(self, name, np.full(self.mean_speed.size, np.nan))
            elif size != self.mean_speed.size:
                raise ValueError(f"Measured.{name} holds {size} values for {self.mean_speed.size} HATs")


_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _normal_log_sf(z: np.ndarray) -> np.ndarray:
    """log P(Z >= z) of a standard normal, elementwise (math.erfc; the Mills-ratio asymptote beyond z = 30, where
    erfc underflows). NumPy only: scipy.special costs 0.13 s of start-up, a tenth of a release's."""
    z = np.asarray(z, dtype=float)
    out = np.empty_like(z)
    far = z > 30.0
    near = ~far
    out[near] = np.log(0.5 * np.asarray(_ERFC(z[near] / math.sqrt(2.0)), dtype=float))
    out[far] = -0.5 * z[far] ** 2 - np.log(z[far]) - 0.5 * math.log(2.0 * math.pi)
    return out


def _upper_tail(x: np.ndarray, sd: float, gaussian: bool) -> np.ndarray:
    """log P(noise >= x) for the count's noise: Gaussian, or Laplace of that sd (b = sd / sqrt 2)."""
    if gaussian:
        return _normal_log_sf(np.asarray(x, dtype=float) / sd)
    b = sd / math.sqrt(2.0)
    with np.errstate(over="ignore"):
        return np.where(x >= 0, math.log(0.5) - x / b, np.log1p(-0.5 * np.exp(np.minimum(x, 0.0) / b)))


def selected_count_interval(
    noisy_n: np.ndarray, sd: float, threshold: float | None, gaussian: bool, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """The ``level`` interval of a HAT's vehicle-day count N from its noisy count, given that it was released
    because the noisy count passed ``threshold`` (None: released whatever the count, a public domain).

    Conditional (selective) inference after a threshold: given selection the noisy count follows the noise's
    distribution around N truncated to ``[threshold, inf)`` (Lee, Sun, Sun and Taylor 2016, "Exact post-selection
    inference", the truncated-Gaussian pivot). The pivot ``F_N(x) = P(X >= x | X >= t; N)`` increases with N; the
    interval is ``{N : alpha/2 < F_N(n~) < 1 - alpha/2}``, found by bisection (60 halvings of [n~ - 10 sd - |t|,
    n~ + 10 sd]). Without a threshold it is the plain ``n~ -+ z sd`` of the noise. The lower end is clipped at 0:
    an interval that reaches 0 means the HAT may hold no vehicle, and its mean is never shown. Laplace
    counts use the continuous Laplace of the same sd (the discrete one's tail ratio is the same geometric decay).
    """
    a = (1.0 - level) / 2.0
    n = np.asarray(noisy_n, dtype=float)
    if n.size == 0 or sd <= 0:
        return n.copy(), n.copy()
    if threshold is None:  # the noise's own quantiles: Gaussian z sd, Laplace b ln(1 / (2a))
        half = NormalDist().inv_cdf(1.0 - a) * sd if gaussian else sd / math.sqrt(2.0) * math.log(0.5 / a)
        return np.maximum(n - half, 0.0), np.maximum(n + half, 0.0)
    t = float(threshold)

    def pivot(big_n: np.ndarray) -> np.ndarray:
        log_num = _upper_tail(n - big_n, sd, gaussian)
        log_den = _upper_tail(t - big_n, sd, gaussian)
        return np.exp(np.minimum(log_num - log_den, 0.0))

    def solve(target: float) -> np.ndarray:
        lo = n - 10.0 * sd - abs(t)
        hi = n + 10.0 * sd
        for _ in range(60):
            mid = (lo + hi) / 2.0
            below = pivot(mid) < target
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        return (lo + hi) / 2.0

    return np.maximum(solve(a), 0.0), np.maximum(solve(1.0 - a), 0.0)


def fieller_z(noise: Laplace | Gaussian) -> float:
    """The z of Fieller's interval: 1.96 for Gaussian noise; for Laplace the 95% quantile of |Laplace| in units of
    its sd, ln(20) / sqrt(2) = 2.12, conservative for the difference of two Laplace draws (whose 95% quantile in sd
    units lies between 1.96 and 2.12)."""
    return noise.half_width() / noise.std


def fieller_interval(
    s: np.ndarray, n: np.ndarray, sd_s: float, sd_n: float, z: float
) -> tuple[np.ndarray, np.ndarray]:
    """Fieller's confidence set for ``theta = S / N`` from independent noisy ``s ~ (S, sd_s)``, ``n ~ (N, sd_n)``.

    The set ``{theta : (s - theta n)^2 <= z^2 (sd_s^2 + theta^2 sd_n^2)}`` is exact for Gaussian noise (it does
    not linearise the ratio, so the denominator's noise widens it where ``n`` is small next to ``sd_n``). It is a
    bounded interval when ``n^2 > z^2 sd_n^2``; otherwise it is unbounded and (-inf, inf) is returned.
    """
    a = n**2 - z**2 * sd_n**2
    disc = s**2 * sd_n**2 + n**2 * sd_s**2 - z**2 * sd_s**2 * sd_n**2
    with np.errstate(invalid="ignore", divide="ignore"):
        root = z * np.sqrt(np.maximum(disc, 0.0))
        low = np.where(a > 0, (s * n - root) / a, -np.inf)
        high = np.where(a > 0, (s * n + root) / a, np.inf)
    return low, high


def count_intervals(
    noisy_n: np.ndarray, sd: float, threshold: float | None, gaussian: bool, release_all: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The count's 95% interval per released HAT and where a mean may be shown.

    HATs released because their noisy count passed ``threshold`` get the interval conditional on passing it
    (:func:`selected_count_interval`). With a route domain (``release_all``) every domain HAT is released, and
    the same false-positive threshold (an expected 0.05 empty HATs per release, :func:`false_positive_threshold`)
    decides only where a mean is shown: rows below it keep the plain interval and show no mean, rows above it get
    the conditional one. A mean is shown only where the interval's lower end is above 0.
    """
    if release_all and threshold is not None:
        low, high = selected_count_interval(noisy_n, sd, None, gaussian)
        passed = noisy_n >= threshold
        low[passed], high[passed] = selected_count_interval(noisy_n[passed], sd, threshold, gaussian)
        return low, high, passed & (low > 0)
    low, high = selected_count_interval(noisy_n, sd, threshold, gaussian)
    return low, high, low > 0


def _noisy_counts(
    cfg: HatReleaseConfig, plan: ReleasePlan, released: pl.DataFrame, scales: QueryScales, noise: NoiseSource
) -> np.ndarray:
    """N~ of each released HAT: a fresh noisy count when the plan has one (public-threshold selection), else the
    selection's own noisy count under add/remove (the same draw that passed the threshold), else NaN."""
    if scales.count is not None and released.height:
        return plan.noise(scales.count).draw(released["n"].to_numpy().astype(float), noise)
    if "noisy_n" in released.columns and cfg.neighbouring == "add-remove":
        return released["noisy_n"].to_numpy().astype(float)
    return np.full(released.height, np.nan)


def _presence_public_speed(
    cfg: HatReleaseConfig, plan: ReleasePlan, released: pl.DataFrame, scales: QueryScales, noise: NoiseSource
) -> Measured:
    """Query 1 under presence-public: the noisy mean of each HAT (N public, sensitivity U/N), clamped to [0, U],
    with the noise's 95% interval."""
    h = released.height
    u = cfg.speed_max
    n = released["n"].to_numpy().astype(float)
    costs = hat_costs(plan, speed_sensitivities(cfg, n), scales.speed) if h else np.zeros(0)
    s = released["sum_mean_speed"].to_numpy().astype(float)
    raw = plan.noise(scales.speed).draw(s / np.maximum(n, 1.0), noise) if h else np.zeros(0)
    half = plan.noise(scales.speed).half_width() if h else 0.0
    return Measured(
        mean_speed=np.clip(raw, 0, u),
        ci_low=np.clip(raw - half, 0, u),
        ci_high=np.clip(raw + half, 0, u),
        speed_scales=np.full(h, scales.speed),
        speed_costs=costs,
        clamped=(raw < 0.0) | (raw > u),
    )


def _add_remove_speed(
    cfg: HatReleaseConfig,
    plan: ReleasePlan,
    released: pl.DataFrame,
    scales: QueryScales,
    noise: NoiseSource,
    noisy_n: np.ndarray,
    selection: SelectionResult,
) -> Measured:
    """Query 1 under add/remove: ``U/2 + S~ / N~`` (``S~`` the noisy sum centred at U/2), withheld where N~ is
    too small, with Fieller's interval for the ratio and the selection-aware interval of N."""
    h = released.height
    u = cfg.speed_max
    n = released["n"].to_numpy().astype(float)
    costs = hat_costs(plan, speed_sensitivities(cfg, n), scales.speed) if h else np.zeros(0)
    centred = released["sum_mean_speed"].to_numpy().astype(float) - n * (u / 2.0)
    noisy_centred = plan.noise(scales.speed).draw(centred, noise) if h else np.zeros(0)
    count_scale = scales.count if scales.count is not None else selection.scale
    sd_n = plan.noise(count_scale).std if count_scale is not None else 0.0
    sd_s = plan.noise(scales.speed).std if h else 0.0
    # The ratio is meaningless when the noisy denominator is small next to its noise: the mean is withheld
    # (null) unless the noisy count is at least max(1, 2 sd of its noise), and unless the count's 95% interval,
    # conditional on the threshold the count passed (the selection's own draw), excludes 0 (a HAT
    # with no vehicle is never drawn as a value). Where the interval is the noise's plain one, it excludes 0 only
    # above 2.12 sd for Laplace, so the 2 sd rule adds nothing there; for Gaussian (1.96 sd) it withholds the band
    # from 1.96 to 2 sd as well
    count_low, count_high, shown = count_intervals(
        noisy_n,
        sd_n,
        selection.threshold if scales.count is None else None,
        plan.gaussian,
        selection.release_all,
    )
    ok = (noisy_n >= max(1.0, 2.0 * sd_n)) & shown
    denom = np.where(ok, noisy_n, np.nan)
    raw = u / 2.0 + noisy_centred / denom
    z = fieller_z(plan.noise(scales.speed))
    lo_c, hi_c = fieller_interval(noisy_centred, denom, sd_s, sd_n, z)
    return Measured(
        mean_speed=np.clip(raw, 0.0, u),
        ci_low=np.clip(u / 2.0 + lo_c, 0, u),
        ci_high=np.clip(u / 2.0 + hi_c, 0, u),
        noisy_sum=np.maximum(u / 2.0 * noisy_n + noisy_centred, 0.0) if h else np.zeros(0),
        speed_scales=np.full(h, scales.speed),
        speed_costs=costs,
        clamped=ok & ((raw < 0.0) | (raw > u)),
        count_low=count_low,
        count_high=count_high,
        withheld=int((~ok).sum()),
    )


def _speeding_counts(
    plan: ReleasePlan, released: pl.DataFrame, scales: QueryScales, noise: NoiseSource
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query 2: the noisy vehicles over the limit per day of each HAT and its 95% interval, clamped at 0 (NaN
    when the query is not released)."""
    h = released.height
    if not (h and math.isfinite(scales.speeding)):
        return np.full(h, np.nan), np.full(h, np.nan), np.full(h, np.nan)
    per_day = released["n_over_limit"].to_numpy().astype(float) / plan.days
    raw, half = plan.noise(scales.speeding).draw(per_day, noise), plan.noise(scales.speeding).half_width()
    return np.maximum(raw, 0.0), np.maximum(raw - half, 0.0), np.maximum(raw + half, 0.0)


def measure_queries(
    cfg: HatReleaseConfig,
    plan: ReleasePlan,
    released: pl.DataFrame,
    scales: QueryScales,
    noise: NoiseSource,
    contributions: pl.DataFrame,
    slots: SlotSpec,
    k_eff: int,
    selection: SelectionResult,
) -> Measured:
    """Draw the noise of Query 1 (:func:`_add_remove_speed`, :func:`_presence_public_speed` or a user-level
    estimator) and Query 2 once, then post-process: the published ``noisy_sum`` (``U/2 N~ + S~``) and
    ``noisy_vehicle_days`` are clamped at 0, and a mean clamped to 0 or U is flagged (``clamped``): it is not a
    confident value."""
    noisy_n = _noisy_counts(cfg, plan, released, scales, noise)
    if cfg.speed_estimator != "report":
        # no HAT released: nothing to estimate (the estimators refuse an epsilon of 0 per HAT); the user-level
        # means are clamped to [0, U] and have no interval
        budget = scales.speed_budget / max(k_eff, 1)
        mean, costs, speed_scales = (
            user_level_means(contributions, released, cfg, budget, noise, slots)
            if released.height
            else (np.zeros(0), np.zeros(0), np.zeros(0))
        )
        clamped = (mean < 0.0) | (mean > cfg.speed_max)
        speed = Measured(np.clip(mean, 0.0, cfg.speed_max), speed_scales, costs, clamped)
    elif cfg.neighbouring == "presence-public":
        speed = _presence_public_speed(cfg, plan, released, scales, noise)
    else:
        speed = _add_remove_speed(cfg, plan, released, scales, noise, noisy_n, selection)
    speed.noisy_n = np.maximum(noisy_n, 0.0)
    speed.over_per_day, speed.over_low, speed.over_high = _speeding_counts(plan, released, scales, noise)
    return speed


def user_level_means(
    contributions: pl.DataFrame,
    released: pl.DataFrame,
    cfg: HatReleaseConfig,
    epsilon_hat: float,
    noise: NoiseSource,
    slots: SlotSpec,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query 1 by a user-level mean estimator: one "user" = one vehicle-day in the HAT.

    Each released HAT gets ``epsilon_hat``; a vehicle-day is in at most K of them, so the per-day cost is the sum
    of the K largest (basic composition), as for the report's estimator.
    """
    from urbandp.estimators._hat_means import estimate_hat_means

    if "speeds" not in contributions.columns:
        raise InputError("the user-level estimators need contributions computed with keep_speeds=True")
    keys = released.select("cell", "slot")
    labelled = (
        cell_to_string(pl.col("cell")).alias("h3_cell"),
        slots.label_expr(pl.col("slot")).alias("slot"),
    )
    frame = contributions.join(keys, on=["cell", "slot"], how="semi").select(
        *labelled, pl.format("{}|{}", pl.col("vehicle"), pl.col("day")).alias("unit"), pl.col("speeds")
    )
    hats = keys.select(labelled)
    est = estimate_hat_means(
        frame,
        cfg.speed_estimator,
        epsilon_hat,
        cfg.speed_max,
        noise,
        hats=hats if cfg.speed_estimator == "clipped-mean" else None,
    )
    aligned = hats.join(est, on=["h3_cell", "slot"], how="left", maintain_order="left")
    return (
        aligned["mean_speed"].to_numpy().astype(float),
        aligned["epsilon_hat"].to_numpy().astype(float),
        aligned["noise_scale"].to_numpy().astype(float),
    )


# --- clip bound ---------------------------------------------------------------------------------------------

CLIP_CANDIDATES = 130  # public candidates U/130, 2U/130, ..., U (0.5 km/h apart at U = 65)


@dataclass(frozen=True)
class ClipChoice:
    """The DP clip bound U' and what it cost (OpenDP's map, per vehicle-day and over the window)."""

    bound: float
    alpha: float
    scale: float
    cost_day: float  # epsilon (laplace) or rho (gaussian)
    cost_window: float
    d_in: int  # symmetric distance of one vehicle-day on the vector of values
    candidates: int


def clip_statistic(contributions: pl.DataFrame) -> np.ndarray:
    """One value per vehicle-day: its largest HAT mean speed (after truncation to K, clipped to [0, U]).

    Clipping every HAT mean at U' leaves a vehicle-day untouched exactly when this value is <= U', so the
    alpha-quantile of it bounds the share of vehicle-days that lose anything to the clip by 1 - alpha.
    """
    if contributions.height == 0:
        return np.zeros(0)
    return contributions.group_by("vehicle", "day").agg(pl.col("mean_speed").max())["mean_speed"].to_numpy()


def choose_clip_bound(
    contributions: pl.DataFrame, cfg: HatReleaseConfig, plan: ReleasePlan, noise: NoiseSource
) -> ClipChoice:
    """U' <= U: OpenDP's private ``clip_quantile``-quantile of :func:`clip_statistic` over public candidates.

    One vehicle-day adds or removes one value (symmetric distance 1 under add/remove) or changes one (distance 2
    under presence-public); over the window one vehicle moves D (resp. 2D) values. The scale is calibrated so that
    OpenDP's map at that distance spends at most ``plan.clip_budget`` (rho under Gaussian noise, where OpenDP's
    zCDP quantile composes with the rest in rho; epsilon under Laplace).
    """
    from urbandp.estimators._bounds import quantile_bound_scale
    from urbandp.estimators._selection import private_quantile, quantile_measurement

    u = cfg.speed_max
    cands = [u * (i + 1) / CLIP_CANDIDATES for i in range(CLIP_CANDIDATES)]
    d_in = 1 if cfg.neighbouring == "add-remove" else 2
    alpha = cfg.clip_quantile
    scale, cost = quantile_bound_scale(cands, alpha, plan.clip_budget, d_in, gaussian=plan.gaussian)
    meas = quantile_measurement(cands, alpha, scale, gaussian=plan.gaussian)
    window = float(meas.map(d_in * plan.days))
    values = clip_statistic(contributions)
    bound = private_quantile(
        values, cands, alpha, scale, known_size=False, gaussian=plan.gaussian, private=bool(noise.is_private)
    )
    return ClipChoice(min(bound, u), alpha, scale, cost, window, d_in, len(cands))
