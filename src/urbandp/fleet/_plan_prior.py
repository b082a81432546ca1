"""The agency's GTFS schedule as the planner's prior: the vehicle-days it expects per HAT, read without any data.

A GTFS feed is public: it says how many trips are scheduled through each H3 cell in each slot of each public day
(:class:`~urbandp.fleet._domain_files.PublicDomain`, ``scheduled_trips``) and, with ``block_id``, how many vehicles
(blocks) and how many HATs one vehicle's day passes (``hats_per_vehicle_day``, m). The planner draws fleets from
these (:func:`urbandp.fleet._predict.schedule_profile`) and runs the release itself on them
(:func:`urbandp.fleet._predict.simulate`), charging nothing; there is no second formula for the release's noise,
threshold, weights or intervals here.

The prediction is as good as the schedule's match to the vehicles that report; ``benchmarks/bench_plan_accuracy.py``
compares it with releases.
"""

from __future__ import annotations

import numpy as np

from urbandp.fleet._domain_files import PublicDomain


def scheduled_vehicle_days(domain: PublicDomain) -> np.ndarray:
    """Expected vehicle-days per HAT per day: distinct blocks (``scheduled_vehicles``) when the feed has
    ``block_id``, else distinct trips. A vehicle passing a cell out and back within one slot is two trips but one
    vehicle-day: on the synthetic fleet the trips overstate vehicle-days about 2x (median true/trips 0.46), the
    blocks do not (0.93; ``benchmarks/bench_schedule_prior.py``)."""
    if domain.scheduled_vehicles is not None:
        return domain.scheduled_vehicles["vehicles_per_day"].to_numpy().astype(float)
    assert domain.scheduled_trips is not None
    return domain.scheduled_trips["trips_per_day"].to_numpy().astype(float)
