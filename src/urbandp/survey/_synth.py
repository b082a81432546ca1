"""Synthetic household travel survey (Twin Cities-like, report section 2) for the demo and the tests.

Writes ``vehicles.csv`` (household, fuel, model with messy names), ``models.csv`` (declared ``fuel,model`` list),
``aliases.csv`` (``Chevy ...`` -> ``Chevrolet ...``), ``homes.csv`` (household locations clustered on the metro
centre, a few far outside the report's bounding box), ``trips.csv`` (origin/destination among 19 counties, with the household that made each trip) and
``trajectories.csv`` (short GPS trips). numpy randomness: simulation input, never a release.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

CENTRE = (44.97, -93.22)  # Minneapolis-Saint Paul
TWIN_CITIES_BBOX = "44.1,-94.3,46.1,-91.0"  # report section 2.2
MODELS = {
    "gas": ["Toyota Camry", "Honda Civic", "Ford F-150", "Chevrolet Malibu", "Subaru Outback", "Lotus Evora"],
    "diesel": ["Ford F-250", "Ram 2500", "Volkswagen Jetta TDI"],
    "hybrid": ["Toyota Prius", "Honda Insight", "Ford Fusion Hybrid"],
    "electric": ["Tesla Model 3", "Nissan Leaf", "Chevrolet Bolt"],
}
FUEL_SHARE = {"gas": 0.86, "diesel": 0.04, "hybrid": 0.07, "electric": 0.03}
TRAJECTORY_STEP_M = 100.0
"""Metres between consecutive points of a synthetic trajectory."""


def write_survey(out: Path, households: int, seed: int = 0) -> dict[str, int]:
    """Write the synthetic survey files into directory ``out``; returns row counts."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    # vehicles: 1-3 per household, fuel by share, model by a Zipf-like popularity inside the fuel
    n_veh = rng.integers(1, 4, households)
    hh = np.repeat(np.arange(1, households + 1), n_veh)
    fuels = list(FUEL_SHARE)
    fuel = rng.choice(fuels, hh.size, p=list(FUEL_SHARE.values()))
    model = np.empty(hh.size, dtype=object)
    for f in fuels:
        idx = np.flatnonzero(fuel == f)
        w = 1.0 / np.arange(1, len(MODELS[f]) + 1)
        model[idx] = rng.choice(MODELS[f], idx.size, p=w / w.sum())
    chevy = np.flatnonzero(np.char.startswith(model.astype(str), "Chevrolet") & (rng.random(hh.size) < 0.4))
    model[chevy] = [m.replace("Chevrolet", "Chevy") for m in model[chevy]]
    junk = rng.choice(hh.size, max(1, hh.size // 500), replace=False)
    model[junk] = "Delorean DMC-12"  # not in the declared list: must be quarantined
    pl.DataFrame({"household": hh, "fuel": fuel, "model": model.astype(str)}).write_csv(out / "vehicles.csv")
    (out / "models.csv").write_text("".join(f"{f},{m}\n" for f, ms in MODELS.items() for m in ms))
    (out / "aliases.csv").write_text(
        "".join(
            f"{m.replace('Chevrolet', 'Chevy')},{m}\n"
            for ms in MODELS.values()
            for m in ms
            if "Chevrolet" in m
        )
    )
    # homes: metro cluster (~15 km) with a few far outliers
    lat = CENTRE[0] + rng.normal(0, 0.12, households)
    lon = CENTRE[1] + rng.normal(0, 0.17, households)
    far = rng.choice(households, max(1, households // 200), replace=False)
    lat[far] += 5.0
    pl.DataFrame(
        {"household": np.arange(1, households + 1), "lat": lat.round(6), "lon": lon.round(6)}
    ).write_csv(out / "homes.csv")
    # trips between 19 counties, gravity-like: most within the home county or a neighbour
    n_trips = households * 4
    o = np.minimum(rng.geometric(0.25, n_trips), 19)
    d = np.clip(o + rng.integers(-2, 3, n_trips), 1, 19)
    # each trip's household (its person): uniform over households, so some make many more trips than others; drawn
    # from its own generator so that the other files stay as they were
    person = np.random.default_rng([seed, 1]).integers(1, households + 1, n_trips)
    pl.DataFrame(
        {"trip": np.arange(1, n_trips + 1), "household": person, "from_county": o, "to_county": d}
    ).write_csv(out / "trips.csv")
    rows = _trajectories(rng, trips=5, points=60, step_m=TRAJECTORY_STEP_M)
    pl.DataFrame(rows, schema=["trip", "seq", "lat", "lon"], orient="row").write_csv(out / "trajectories.csv")
    return {"vehicles": int(hh.size), "homes": households, "trips": n_trips, "trajectory_points": len(rows)}


def _trajectories(
    rng: np.random.Generator, *, trips: int, points: int, step_m: float
) -> list[tuple[int, int, float, float]]:
    """Smooth trips near the centre: each step ``step_m`` metres along the geodesic (:func:`urbandp._geodesy.shift`,
    WGS 84) at a heading that turns by a N(0, 0.2 rad) step; rows (trip, seq, lat, lon)."""
    from urbandp._geodesy import shift

    rows = []
    for t in range(1, trips + 1):
        heading = rng.uniform(0, 2 * np.pi)  # radians from east, counter-clockwise
        la, lo = CENTRE[0] + rng.normal(0, 0.03), CENTRE[1] + rng.normal(0, 0.04)
        for s in range(points):
            heading += rng.normal(0, 0.2)
            new_lat, new_lon = shift(
                np.array([la]),
                np.array([lo]),
                np.array([step_m * np.cos(heading)]),
                np.array([step_m * np.sin(heading)]),
            )
            la, lo = float(new_lat[0]), float(new_lon[0])
            rows.append((t, s, round(la, 6), round(lo, 6)))
    return rows
