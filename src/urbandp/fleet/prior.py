"""The agency's GTFS schedule as the planner's prior: useful HATs predicted without reading data.

A GTFS feed is public: it says how many trips are scheduled through each H3 cell in each slot of each public day
(:class:`~urbandp.fleet.domain.PublicDomain`, ``scheduled_trips``) and, with ``block_id``, how many HATs one
vehicle's day passes (``hats_per_vehicle_day``, m). The planner turns these into the release's figures, charging
nothing:

* expected vehicle-days of a HAT over the window: ``N = vehicles_per_day x D x share``, the distinct blocks
  scheduled through the HAT (distinct trips when the feed has no ``block_id``; ``share``, public, default 1: the
  share of scheduled vehicles that report);
* the weight a vehicle-day keeps in a HAT: ``min(1, K / m)`` under truncation to K (a share of its m HATs kept)
  or ``1 / sqrt(m)`` under L2-normalised contributions, so the noisy count is ``n~ ~ Normal(w N, sd_n)``;
* the released mean's 95% interval is about ``2 z sqrt(sd_sum^2 + (mu - U/2)^2 sd_n^2) / n~`` wide (Fieller's
  interval to first order, ``mu`` a typical speed), so a HAT is useful when ``n~`` reaches
  ``n* = 2 z sqrt(...) / target_width`` and the display threshold; its probability is ``1 - Phi((t* - w N) /
  sd_n)`` with ``t* = max(n*, threshold)``;
* the expected number of useful HATs is the sum of these probabilities, its sd ``sqrt(sum p (1 - p))``.

The prediction is as good as the schedule's match to the vehicles that report; ``benchmarks/bench_useful.py``
compares it with releases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from urbandp.fleet.config import HatReleaseConfig
from urbandp.fleet.domain import PublicDomain

Z95 = NormalDist().inv_cdf(0.975)


@dataclass(frozen=True)
class UsefulPrediction:
    """Expected useful HATs (and its sd) at one epsilon, from the schedule."""

    epsilon_per_day: float
    expected_useful: float
    sd: float
    scheduled_hats: int
    expected_vehicle_days_median: float


def vehicle_day_weight(cfg: HatReleaseConfig, m: float) -> float:
    """The weight one vehicle-day of ``m`` HATs keeps in each of them: ``1/sqrt(m)`` (L2) or ``min(1, K/m)``."""
    m = max(m, 1.0)
    if cfg.contribution_bounding == "l2":
        return 1.0 / math.sqrt(m)
    k = 96 if cfg.max_hats_per_vehicle_day == "observed" else int(cfg.max_hats_per_vehicle_day)
    return min(1.0, k / m)


def scheduled_vehicle_days(domain: PublicDomain) -> np.ndarray:
    """Expected vehicle-days per HAT per day: distinct blocks (``scheduled_vehicles``) when the feed has
    ``block_id``, else distinct trips. A vehicle passing a cell out and back within one slot is two trips but one
    vehicle-day: on the synthetic fleet the trips overstate vehicle-days about 2x (median true/trips 0.46), the
    blocks do not (0.93; ``benchmarks/bench_schedule_prior.py``)."""
    if domain.scheduled_vehicles is not None:
        return domain.scheduled_vehicles["vehicles_per_day"].to_numpy().astype(float)
    assert domain.scheduled_trips is not None
    return domain.scheduled_trips["trips_per_day"].to_numpy().astype(float)


def predict_useful(
    cfg: HatReleaseConfig,
    days: int,
    domain: PublicDomain,
    sd_sum: float,
    sd_count: float,
    threshold: float | None,
    typical_speed: float,
    reporting_share: float = 1.0,
) -> UsefulPrediction:
    """Expected useful HATs of a release of ``cfg`` over ``domain``'s schedule (see the module docstring)."""
    if domain.scheduled_trips is None:
        raise ValueError("the domain has no schedule (a GTFS feed with stop_times gives one)")
    m = domain.hats_per_vehicle_day or float(
        cfg.max_hats_per_vehicle_day if cfg.max_hats_per_vehicle_day != "observed" else 96
    )
    w = vehicle_day_weight(cfg, float(m))
    per_day = scheduled_vehicle_days(domain)
    n = per_day * days * reporting_share
    centre = min(cfg.speed_max, typical_speed) - cfg.speed_max / 2
    n_star = 2.0 * Z95 * math.sqrt(sd_sum**2 + centre**2 * sd_count**2) / cfg.target_width
    t_star = max(n_star, threshold if threshold is not None else -math.inf, 1.0)
    if sd_count > 0:
        z = (t_star - w * n) / sd_count
        p = np.array([1.0 - NormalDist().cdf(float(v)) for v in z])
    else:
        p = (w * n >= t_star).astype(float)
    return UsefulPrediction(
        epsilon_per_day=float(cfg.epsilon_per_day or math.nan),
        expected_useful=float(p.sum()),
        sd=float(math.sqrt(float((p * (1 - p)).sum()))),
        scheduled_hats=int(per_day.size),
        expected_vehicle_days_median=float(np.median(n)) if n.size else 0.0,
    )
