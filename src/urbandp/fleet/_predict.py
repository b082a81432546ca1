"""The planner's prediction: the release's own code run on fleets drawn from public or paid-for inputs
(docs/fleet.md, "Planner and guardrails", says which input gives which profile and how well it predicted).

``urbandp plan`` does not restate the release in a second set of formulas. It draws a synthetic fleet matching what
is known before any record is read (a :class:`FleetProfile`: vehicle-days expected per HAT and HATs per
vehicle-day), runs the release itself on it (:func:`urbandp.fleet._hat_release._release_hats` and, with
``borrow_strength``, :func:`urbandp.fleet._postprocess_pooling.with_pooled_means`) ``runs`` times, each with a fresh
fleet and fresh noise, and reports the mean and the 2.5% and 97.5% quantiles of what the release would show.

Speeds are not known before the release and do not change which HATs are released: the synthetic means are drawn
around :data:`TYPICAL_SPEED` with the public spreads below, stated in plan.json. The fleet is synthetic, so running
the release on it spends nothing (the noise drawn here is never published as a release).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass

import h3
import numpy as np
import polars as pl
import polars_h3 as plh3

from urbandp._contributions.base import CONTRIBUTION_SCHEMA
from urbandp.fleet._domain import domain_grid
from urbandp.fleet._domain_files import PublicDomain
from urbandp.fleet._options import HatReleaseConfig

TYPICAL_SPEED = 25.0
"""km/h: the centre of the synthetic HAT means (public assumption, stated in plan.json)."""
PARENT_SPEED_SD = 6.0
"""km/h: spread of the synthetic means of H3 parents (one level up) around :data:`TYPICAL_SPEED`."""
HAT_SPEED_SD = 4.0
"""km/h: spread of a synthetic HAT mean around its parent's (what pooling borrows across)."""
VEHICLE_DAY_SPEED_SD = 12.0
"""km/h: spread of a vehicle-day's mean speed around its HAT's mean."""
RUNS = 12
"""Releases simulated per prediction (each with a fresh fleet and fresh noise)."""
M_HISTOGRAM_SHARE = 0.2
"""Under L2 weights, the share of ``--histogram-epsilon`` spent on the histogram of HATs per vehicle-day."""
M_EDGES = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
"""Bins of the DP histogram of HATs per vehicle-day (the last bin is open)."""


@dataclass(frozen=True)
class FleetProfile:
    """What is known of the fleet before a release, as a sampler of synthetic fleets.

    ``sample(rng)`` gives the HATs ``(cell UInt64, slot Int16, per_day Float64)``, the expected vehicle-days per
    day of each (before any bounding), and a sample of HATs per vehicle-day ``m``; a profile read from DP
    histograms draws their noise afresh each time, so the prediction's interval holds the inputs' uncertainty.
    """

    source: str
    sample: Callable[[np.random.Generator], tuple[pl.DataFrame, np.ndarray]]
    assumptions: str


@dataclass(frozen=True)
class Prediction:
    """Counts over the simulated releases: mean and 2.5% / 97.5% quantiles."""

    runs: int
    counts: dict[str, list[float]]

    def summary(self, key: str) -> dict[str, float]:
        v = np.asarray(self.counts[key], dtype=float)
        return {
            "mean": round(float(v.mean()), 2),
            "low": round(float(np.percentile(v, 2.5)), 2),
            "high": round(float(np.percentile(v, 97.5)), 2),
            "sd": round(float(v.std(ddof=1)) if v.size > 1 else 0.0, 2),
        }

    def to_json(self) -> dict[str, object]:
        return {"runs": self.runs, **{key: self.summary(key) for key in self.counts}}


def synthetic_contributions(
    hats: pl.DataFrame, m: np.ndarray, days: int, rng: np.random.Generator, speed_max: float
) -> pl.DataFrame:
    """A fleet's contributions (one row per vehicle-day and HAT) with the expected vehicle-days of ``hats``.

    Each day a HAT gets ``per_day`` vehicle-days rounded at random (its floor, plus one with the fraction's
    probability); the visits are dealt to vehicle-days whose sizes are drawn from ``m``, so the L2 weights
    ``1/sqrt(m)`` follow ``m``'s distribution, each vehicle-day's places spread evenly over the day so that a HAT's
    visits go to distinct vehicle-days (one dealt the same HAT twice would keep it once).
    """
    per_day = hats["per_day"].to_numpy().astype(float)
    cells = hats["cell"].to_numpy()
    slots = hats["slot"].to_numpy()
    mu = np.clip(_hat_means(hats, rng), 2.0, speed_max - 2.0)
    sizes_pool = np.maximum(np.asarray(m, dtype=float).round().astype(int), 1)
    frames = []
    base = dt.date(2000, 1, 3)
    for d in range(days):
        counts = np.floor(per_day).astype(int) + (rng.random(per_day.size) < per_day % 1.0)
        visits = np.repeat(np.arange(per_day.size), counts)
        if visits.size == 0:
            continue
        sizes = rng.choice(sizes_pool, size=visits.size // max(int(sizes_pool.min()), 1) + 1)
        sizes = sizes[: int(np.searchsorted(np.cumsum(sizes), visits.size)) + 1]
        # a vehicle-day of m HATs takes m places evenly spread over the day's visits (systematic, random start),
        # so a HAT's visits (consecutive) go to distinct vehicle-days
        place = (np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)).astype(float)
        place = (place + np.repeat(rng.random(sizes.size), sizes)) / np.repeat(sizes, sizes)
        owner = np.repeat(np.arange(sizes.size), sizes)[np.argsort(place, kind="stable")][: visits.size]
        speed = np.clip(mu[visits] + rng.normal(0.0, VEHICLE_DAY_SPEED_SD, visits.size), 0.0, speed_max)
        day = [base + dt.timedelta(days=d)] * visits.size
        values = (cells[visits], slots[visits], day, owner.astype(str), np.ones(visits.size), speed, speed)
        frames.append(
            pl.DataFrame(dict(zip(CONTRIBUTION_SCHEMA, values, strict=True)), schema=CONTRIBUTION_SCHEMA)
        )
    if not frames:
        return pl.DataFrame(schema=CONTRIBUTION_SCHEMA)
    return pl.concat(frames).unique(["cell", "slot", "day", "vehicle"], keep="first")


def _hat_means(hats: pl.DataFrame, rng: np.random.Generator) -> np.ndarray:
    """Synthetic true HAT means: :data:`TYPICAL_SPEED`, plus an effect of the H3 parent (:data:`PARENT_SPEED_SD`),
    plus the HAT's own (:data:`HAT_SPEED_SD`)."""
    if hats.height == 0:
        return np.zeros(0)
    res = h3.get_resolution(h3.int_to_str(int(hats["cell"][0])))
    parent = hats.select(plh3.cell_to_parent("cell", max(res - 1, 0)).alias("p"))["p"]
    codes = parent.rank("dense").to_numpy().astype(int) - 1
    effect = rng.normal(0.0, PARENT_SPEED_SD, int(codes.max()) + 1)
    return TYPICAL_SPEED + effect[codes] + rng.normal(0.0, HAT_SPEED_SD, hats.height)


def simulate(
    cfg: HatReleaseConfig, days: int, profile: FleetProfile, domain: PublicDomain | None, runs: int = RUNS
) -> Prediction:
    """Run the release of ``cfg`` over ``days`` public days ``runs`` times on fleets drawn from ``profile``.

    Counted per run: HATs released, means shown, useful HATs (privacy.json's ``usefulness``) and, with
    ``borrow_strength``, pooled useful HATs. (The selection threshold and the noise sds are the release's
    calibration, which plan.json states once from :func:`urbandp.fleet._plan_forecast.predict_noise`.)
    """
    from urbandp._privacy.noise import OpenDPNoise
    from urbandp.fleet._hat_release import _release_hats
    from urbandp.fleet._postprocess_pooling import with_pooled_means

    rng = np.random.default_rng()
    counts: dict[str, list[float]] = {"released": [], "shown": [], "useful": []}
    pooling = cfg.borrow_strength != "none"
    if pooling:
        counts["useful_pooled"] = []
    for _ in range(max(runs, 2)):
        hats, m = profile.sample(rng)
        contributions = synthetic_contributions(hats, m, days, rng, cfg.speed_max)
        release = _release_hats(contributions, cfg, days, OpenDPNoise(), slots=cfg.slot_spec, domain=domain)
        speed, p = release.speed, release.privacy
        use = p["usefulness"]
        assert isinstance(use, dict)
        counts["released"].append(float(use["hats_released"]))
        counts["shown"].append(float(use["means_shown"]))
        counts["useful"].append(float(use["useful_hats"]))
        if pooling:
            pooled = 0.0
            if speed.height:
                speed, report = with_pooled_means(speed, p, cfg.speed_max, cfg.target_width, cfg.precision)
                pooled = float(report["useful_hats_pooled"])  # type: ignore[arg-type]
            counts["useful_pooled"].append(pooled)
    return Prediction(max(runs, 2), counts)


# --- profiles ---------------------------------------------------------------------------------------------------


def schedule_profile(domain: PublicDomain, cfg: HatReleaseConfig) -> FleetProfile:
    """From a GTFS schedule, public and read without any data: distinct blocks per HAT and day (trips without
    ``block_id``) and the HATs a block passes (K without ``block_id``). Nothing is drawn but the fleet itself.

    Blocks, not trips, where the feed has them: a vehicle passing a cell out and back within one slot is two trips
    but one vehicle-day. On the synthetic fleet the trips overstate vehicle-days about 2x (median true/trips 0.46),
    the blocks do not (0.93; ``benchmarks/bench_schedule_prior.py``); ``benchmarks/bench_plan_accuracy.py`` compares
    the prediction with releases."""
    blocks = domain.scheduled_vehicles is not None
    frame = domain.scheduled_vehicles if blocks else domain.scheduled_trips
    assert frame is not None
    hats = frame.select(
        pl.col("cell").cast(pl.UInt64),
        pl.col("slot").cast(pl.Int16),
        pl.col("vehicles_per_day" if blocks else "trips_per_day").cast(pl.Float64).alias("per_day"),
    )
    m = np.array([domain.hats_per_vehicle_day or cfg_k(cfg)], dtype=float)
    by = "blocks" if blocks else "trips (the feed has no block_id)"
    return FleetProfile(
        "schedule",
        lambda _rng: (hats, m),
        f"every scheduled vehicle reports; vehicle-days per HAT and day: distinct {by} of the schedule; "
        f"HATs per vehicle-day {float(m[0]):.1f} from the schedule",
    )


def cfg_k(cfg: HatReleaseConfig) -> int:
    """K of a config (96 when it is read from the data, as the histograms assume)."""
    return 96 if cfg.max_hats_per_vehicle_day == "observed" else int(cfg.max_hats_per_vehicle_day)


def _bin_values(bins: list[dict[str, float]], rng: np.random.Generator) -> np.ndarray:
    """Whole values drawn from a DP histogram (:func:`urbandp.fleet._plan_forecast.paid_pilot`'s): each bin's
    count redrawn with the bin's own noise (the count is the noisy one plus a fresh draw of that noise: its
    uncertainty), clamped at 0, and that many values spread log-uniformly over the bin (the open last bin: up to
    twice its start)."""
    out = []
    for b in bins:
        sd = float(b["noise_sd"])
        # NumPy, not OpenDP, on purpose: this redraws the uncertainty of a count already published with OpenDP
        # noise (post-processing); it feeds a prediction (plan.json, the advice's text), never a released value
        # (pinned by the guard test that re-seeds NumPy under a release whose advice runs this simulation)
        noisy = b["noisy_vehicle_days_unclamped"] + (rng.laplace(0.0, sd / math.sqrt(2.0)) if sd > 0 else 0.0)
        lo = float(b["from"])
        hi = float(b["to"]) if math.isfinite(float(b["to"])) else 2.0 * lo
        out.append(np.floor(np.exp(rng.uniform(math.log(lo), math.log(hi), max(0, round(noisy))))))
    return np.concatenate(out) if out else np.zeros(0)


def pilot_profile(
    pilot: pl.DataFrame, sd: float, m_bins: list[dict[str, float]] | None, days: int, cfg: HatReleaseConfig
) -> FleetProfile:
    """From the pilot's noisy counts of every domain HAT (:func:`urbandp.fleet._plan_forecast.dp_pilot`), smoothed as a
    cell's total spread over the slots by the day's profile (:func:`cell_by_slot`): a HAT's own noisy count is
    too noisy at an affordable pilot, a cell's total over its slots and a slot's total over the cells are not.
    Each run redraws the pilot's noise around the smoothed counts (a parametric bootstrap) and smooths again, so
    the prediction holds the pilot's uncertainty. The pilot's L2-weighted counts become vehicle-days per day by the
    mean weight of a HAT visit ``sum sqrt(m) / sum m`` over the histogram of HATs per vehicle-day (the release run
    on them truncates to K where it truncates)."""
    keys = pilot.select("cell", "slot")
    smoothed = cell_by_slot(keys, pilot["noisy_n"].to_numpy().astype(float), sd)

    def sample(rng: np.random.Generator) -> tuple[pl.DataFrame, np.ndarray]:
        # HATs per vehicle-day before any bounding (the release itself truncates to K where it truncates): drawn
        # from their DP histogram, K without one
        m = _bin_values(m_bins, rng) if m_bins else np.zeros(0)
        m = m if m.size else np.array([float(cfg_k(cfg))])
        weight = float(np.sqrt(m).sum() / m.sum())  # the pilot's counts are L2-weighted
        count = cell_by_slot(keys, smoothed + rng.normal(0.0, sd, smoothed.size), sd) / weight
        hats = keys.with_columns(pl.Series("per_day", count / days, dtype=pl.Float64))
        return hats.filter(pl.col("per_day") > 0), m

    return FleetProfile(
        "pilot",
        sample,
        "the pilot's noisy counts of every domain HAT smoothed as cell total x the day's slot profile (redrawn "
        "with the pilot's noise each run)"
        + (
            "; the L2 weights and HATs per vehicle-day from the DP histogram of HATs per vehicle-day"
            if m_bins
            else ""
        ),
    )


def cell_by_slot(keys: pl.DataFrame, noisy: np.ndarray, sd: float) -> np.ndarray:
    """Noisy HAT counts smoothed to ``cell total x slot share``: each cell's sum over its slots (kept where it
    passes 2 sd of its noise, else 0) times each slot's share of the sum over all cells, plus the HAT's own
    departure from that shrunk by its share of signal (a James-Stein step). Post-processing of the noisy counts."""
    frame = keys.with_columns(pl.Series("x", noisy, dtype=pl.Float64))
    cells = frame.group_by("cell").agg(pl.col("x").sum().alias("cell_total"), pl.len().alias("slots"))
    slots = frame.group_by("slot").agg(pl.col("x").sum().clip(0.0).alias("slot_total"))
    joined = frame.join(cells, on="cell", how="left", maintain_order="left").join(
        slots, on="slot", how="left", maintain_order="left"
    )
    total = float(slots["slot_total"].sum())
    if total <= 0:
        return np.zeros(noisy.size)
    cell_total = joined["cell_total"].to_numpy()
    kept = np.where(cell_total > 2.0 * sd * np.sqrt(joined["slots"].to_numpy()), cell_total, 0.0)
    smooth = kept * joined["slot_total"].to_numpy() / total
    # each HAT's own departure from it, shrunk by its share of signal: tau^2 / (tau^2 + sd^2), tau^2 the spread
    # of the departures beyond the noise (method of moments over the HATs of the cells kept)
    departure = noisy - smooth
    busy = kept > 0
    tau2 = max(float(np.mean(departure[busy] ** 2)) - sd**2, 0.0) if busy.any() else 0.0
    shrunk = smooth + (tau2 / (tau2 + sd**2)) * departure
    return np.asarray(np.where(busy, np.maximum(shrunk, 0.0), 0.0), dtype=float)


def route_profile(
    grid: pl.DataFrame, lengths: pl.DataFrame, cfg: HatReleaseConfig, fleet_size: float
) -> FleetProfile:
    """From the route length in each cell: a day's HAT visits shared over the domain's HATs in proportion to their
    cell's route length (0 for a cell only the domain's ring added), evenly over the slots: a public
    ``fleet_size`` of vehicles a day, each through the hours passing :func:`hats_per_slot` HATs per slot."""
    w = grid.join(lengths, on="cell", how="left", maintain_order="left")["route_km"].fill_null(0.0).to_numpy()
    share = w / w.sum() if w.sum() > 0 else np.full(w.size, 1.0 / max(w.size, 1))
    slots = max(int(grid["slot"].n_unique()), 1)
    m_one = float(slots * hats_per_slot(cfg))
    hats = grid.with_columns(pl.Series("per_day", fleet_size * m_one * share, dtype=pl.Float64))
    return FleetProfile(
        "route-length",
        lambda _rng: (hats, np.array([m_one])),
        "HAT visits shared over the domain's cells in proportion to their route length, evenly over slots; "
        f"a public fleet of {fleet_size:g} vehicles a day, each through all {slots} slots passing "
        f"{hats_per_slot(cfg):.1f} HATs per slot (m = {m_one:.0f})",
    )


def hats_per_slot(cfg: HatReleaseConfig) -> float:
    """Cells a bus passes in one slot at :data:`TYPICAL_SPEED` / 2 (stops included) along a route: the distance
    over the spacing of H3 cell centres (sqrt 3 x the mean edge length), at least 1."""
    spacing = math.sqrt(3.0) * h3.average_hexagon_edge_length(cfg.resolution, unit="km")
    return max(1.0, TYPICAL_SPEED / 2.0 * cfg.slot_minutes / 60.0 / spacing)


def predict_release(
    cfg: HatReleaseConfig,
    days: int,
    domain: PublicDomain | None,
    *,
    m_histogram: list[dict[str, float]] | None = None,
    fleet_size: float | None = None,
    pilot: tuple[pl.DataFrame, float] | None = None,
    runs: int = RUNS,
) -> dict[str, object]:
    """plan.json's ``prediction``: the release of ``cfg`` run ``runs`` times (:func:`simulate`) on fleets of the
    best profile the inputs allow, or why there is none. The profile: the pilot (the data's own, with
    ``m_histogram``, its histogram of HATs per vehicle-day), else the schedule, else a GeoJSON route domain's
    lengths with a fleet size."""
    if cfg.epsilon_per_day is None:
        return {
            "prediction": None,
            "prediction_reason": "needs epsilon_per_day (a noise scale alone is not planned)",
        }
    if domain is None:
        return {
            "prediction": None,
            "prediction_reason": "needs a public domain (domain_bbox, domain_gtfs, domain_geojson or domain_cells): "
            "the planner runs the release over the domain's HATs",
        }
    if pilot is not None:
        profile = pilot_profile(pilot[0], pilot[1], m_histogram, days, cfg)
    elif domain.scheduled_trips is not None:
        profile = schedule_profile(domain, cfg)
    elif domain.route_km is not None and fleet_size is not None:
        profile = route_profile(domain_grid(domain, cfg.slot_spec.slots), domain.route_km, cfg, fleet_size)
    else:
        return {
            "prediction": None,
            "prediction_reason": "needs what the fleet looks like: a schedule (domain_gtfs with stop_times), "
            "histogram_epsilon (a DP histogram of the data), or with domain_geojson a fleet_size (vehicles a day)",
        }
    got = simulate(cfg, days, profile, domain, runs).to_json()
    return {
        "prediction": {
            **got,
            "source": profile.source,
            "assumptions": (
                f"{profile.assumptions}; synthetic speeds: HAT means {TYPICAL_SPEED:g} km/h +- {PARENT_SPEED_SD:g} "
                f"(H3 parent) +- {HAT_SPEED_SD:g} (HAT), vehicle-days +- {VEHICLE_DAY_SPEED_SD:g} around them"
            ),
            "method": (
                "the release itself (bounding, domain, selection threshold, noise scales, intervals, useful label"
                + (", pooling" if cfg.borrow_strength != "none" else "")
                + f") run {got['runs']} times on synthetic fleets drawn from the profile; mean and 2.5%-97.5% "
                "quantiles over the runs; spends nothing beyond the histograms"
            ),
        }
    }
