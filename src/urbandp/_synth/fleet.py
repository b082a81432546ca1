"""Synthetic bus-fleet GPS records in the IUDX ITMS shape (the data of the ITMS report, section II A).

The generator drives the demo, the tests and the benchmarks. It is built to look like the data the report
describes (section V): buses on fixed routes through a city, a high variation in the number of records reported
by different vehicles and by the same vehicle on different days, many more vehicles in the centre than in the
suburbs, slower traffic at peak hours, a few speeders, and a small share of dirty rows.

Everything is vectorised with numpy over all the vehicles of one day; a day is generated from its own random
stream (``SeedSequence(seed, spawn_key=(day + 1,))``), so the output is deterministic by seed and the first days
of a long fleet equal a shorter fleet with the same seed and vehicles.

Columns (exactly these, in this order)::

    id                   str   city feed id, e.g. "surat-itms-live-eta"
    license_plate        str   the vehicle id, e.g. "GJ05BX1234"
    trip_id              str
    route_id             str
    trip_direction       str   "UP" / "DN"
    observationDateTime  str   ISO 8601 local time with offset, e.g. "2021-11-15T09:15:03+05:30"
    location             struct{type: str = "Point", coordinates: list[f64] = [longitude, latitude]}
    speed                f64   km/h

Dirty rows (Bernoulli per row with probability ``dirty_fraction``, kind drawn uniformly from
:data:`DIRTY_KINDS`): unparseable timestamps, missing coordinates (``coordinates`` null), out-of-range
coordinates, negative / NaN / absurd (> 200 km/h) speeds, and exact duplicates of the previous row of the same
vehicle (same ``license_plate`` and ``observationDateTime``, every column equal).
"""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from urbandp._geodesy import PlanarProjection
from urbandp._release_options import ReleaseOptions, option
from urbandp.errors import InputError, InvalidParameterError

#: Kinds of dirty rows, drawn uniformly for each dirty row.
DIRTY_KINDS: tuple[str, ...] = (
    "unparseable_timestamp",
    "missing_coordinates",
    "out_of_range_coordinates",
    "negative_speed",
    "nan_speed",
    "absurd_speed",
    "duplicate",
)

#: Timestamps that no ISO 8601 parser accepts (month 13, 31 November, free text).
BAD_TIMESTAMPS: tuple[str, ...] = (
    "not-a-timestamp",
    "2021-13-45T25:61:00+05:30",
    "2021-11-31T09:00:00+05:30",
    "??:??:??",
)

#: Supported output formats, by file extension.
FLEET_FORMATS: tuple[str, ...] = (".csv", ".jsonl", ".json", ".parquet")

SECONDS_PER_DAY = 86_400
#: Non-speeding vehicles never report more than this (km/h); speeders reach 60-85 km/h off-peak.
NORMAL_SPEED_CAP = 55.0
PEAK_HOURS: tuple[tuple[int, int], ...] = ((8, 10), (17, 20))
PEAK_SPEED_FACTOR = 0.6
DAY_OFF_PROBABILITY = 0.05
"""Chance that a vehicle takes a day off."""


@dataclass(frozen=True)
class City:
    """Where the fleet runs: centre, radius of the suburbs, local UTC offset and the feed's identifiers."""

    name: str = "surat"
    feed_id: str = "surat-itms-live-eta"
    centre_lat: float = 21.17
    centre_lon: float = 72.83
    radius_km: float = 7.5
    utc_offset: str = "+05:30"
    plate_prefix: str = "GJ05"
    timezone: str = "Asia/Kolkata"

    def plane(self) -> PlanarProjection:
        """The plane its routes are laid out on, in metres from the centre
        (:meth:`urbandp._geodesy.PlanarProjection.synthetic_plane`)."""
        return PlanarProjection.synthetic_plane(self.centre_lat, self.centre_lon)


SURAT = City()


MAX_DAYS = 3_660
"""Longest synthetic fleet (ten years of days)."""
MAX_RECORDS = 200_000_000
"""Most records one synthetic file may hold (the Spark benchmark's largest input is 20 M)."""


class FleetSpec(ReleaseOptions):
    """Parameters of a synthetic fleet, each declared once (:func:`urbandp._release_options.option`: the flags and
    ``--help`` of ``urbandp synth fleet`` are built from these fields); bad values raise :class:`InputError`
    naming the parameter."""

    vehicles: int = option(help="Number of vehicles (buses) in the fleet.", ge=1)
    days: int = option(help="Number of consecutive days.", ge=1, le=MAX_DAYS, why="ten years")
    seed: int = option(0, help="Random seed; the same seed gives the same file.", ge=0)
    start: dt.date = option(dt.date(2021, 11, 15), help="First day (YYYY-MM-DD), local time.", cli_type=str)
    records_per_vehicle_day: float = option(
        1300.0, help="Mean records per vehicle per day (varies by vehicle and day).", ge=2, le=20_000
    )
    dirty_fraction: float = option(
        0.002, help="Share of dirty rows (bad timestamps, coordinates, speeds, duplicates).", ge=0, le=0.5
    )
    routes: int = option(28, help="Number of fixed bus routes through the city.", ge=1, le=200)
    speeder_fraction: float = option(0.03, help="Share of vehicles that speed off-peak.", ge=0, le=1)

    def model_post_init(self, context: Any, /) -> None:
        expected = self.vehicles * self.days * self.records_per_vehicle_day
        if expected > MAX_RECORDS:
            raise InvalidParameterError(
                f"vehicles x days x records_per_vehicle_day asks for about {expected:,.0f} records; at most "
                f"{MAX_RECORDS:,} are generated in one file (about 20 GB of CSV)",
                parameters=("vehicles", "days", "records_per_vehicle_day"),
            )


@dataclass(frozen=True)
class _Fleet:
    """The fixed part of a fleet: routes (polylines in km around the centre) and vehicles."""

    route_ids: list[str]
    route_length_km: np.ndarray  # (routes,)
    route_base_km: np.ndarray  # (routes,) offset of each route on one concatenated distance axis
    axis_km: np.ndarray  # concatenated cumulative distance of all route vertices
    axis_x_km: np.ndarray  # east offset of each vertex from the centre
    axis_y_km: np.ndarray  # north offset of each vertex from the centre
    plates: list[str]
    vehicle_route: np.ndarray  # (vehicles,) route index
    cruise_kmh: np.ndarray  # (vehicles,) free-flow speed
    rate_weight: np.ndarray  # (vehicles,) records-per-day multiplier, mean 1 (lognormal)
    speeder: np.ndarray  # (vehicles,) bool


def _route_polyline(rng: np.random.Generator, radius_km: float) -> np.ndarray:
    """One route: suburb -> near the centre -> suburb on the other side, with wiggles. Returns (k, 2) km."""
    theta = rng.uniform(0.0, 2.0 * np.pi)
    r_a, r_b = rng.uniform(0.55 * radius_km, radius_km, size=2)
    end_a = r_a * np.array([np.cos(theta), np.sin(theta)])
    theta_b = theta + np.pi + rng.normal(0.0, 0.5)
    end_b = r_b * np.array([np.cos(theta_b), np.sin(theta_b)])
    hub = rng.normal(0.0, 0.7, size=2)  # every route passes within ~1-2 km of the centre
    n_half = 6
    legs = []
    for a, b in ((end_a, hub), (hub, end_b)):
        f = np.linspace(0.0, 1.0, n_half + 1)[:, None]
        pts = a + f * (b - a)
        direction = (b - a) / max(np.linalg.norm(b - a), 1e-9)
        normal = np.array([-direction[1], direction[0]])
        wiggle = rng.normal(0.0, 0.35, size=n_half + 1)
        wiggle[0] = wiggle[-1] = 0.0
        legs.append(pts + wiggle[:, None] * normal)
    return np.vstack([legs[0], legs[1][1:]])


def _build_fleet(spec: FleetSpec) -> _Fleet:
    rng = np.random.default_rng(np.random.SeedSequence(spec.seed, spawn_key=(0,)))
    axis, xs, ys, bases, lengths = [], [], [], [], []
    base = 0.0
    for _ in range(spec.routes):
        poly = _route_polyline(rng, SURAT.radius_km)
        seg = np.hypot(np.diff(poly[:, 0]), np.diff(poly[:, 1]))
        cum = np.concatenate([[0.0], np.cumsum(seg)])
        axis.append(base + cum)
        xs.append(poly[:, 0])
        ys.append(poly[:, 1])
        bases.append(base)
        lengths.append(cum[-1])
        base += cum[-1] + 100.0  # a gap so that no interpolation ever crosses two routes
    v = spec.vehicles
    codes = rng.choice(26 * 26 * 10_000, size=v, replace=False)
    letters = codes // 10_000
    plates = [
        f"{SURAT.plate_prefix}{chr(65 + ab // 26)}{chr(65 + ab % 26)}{c % 10_000:04d}"
        for ab, c in zip(letters.tolist(), codes.tolist(), strict=True)
    ]
    # Uneven reporting rates: lognormal per vehicle, normalised to mean 1 (report section V).
    rate = rng.lognormal(0.0, 0.45, size=v)
    rate = rate / rate.mean()
    # Some routes get many buses, others few (lognormal popularity): the suburbs of quiet routes stay sparse.
    popularity = rng.lognormal(0.0, 0.8, size=spec.routes)
    popularity = popularity / popularity.sum()
    n_speeders = min(v, max(1, round(spec.speeder_fraction * v))) if spec.speeder_fraction > 0 else 0
    speeder = np.zeros(v, dtype=bool)
    speeder[rng.choice(v, size=n_speeders, replace=False)] = True
    return _Fleet(
        route_ids=[f"R{r + 101:03d}" for r in range(spec.routes)],
        route_length_km=np.array(lengths),
        route_base_km=np.array(bases),
        axis_km=np.concatenate(axis),
        axis_x_km=np.concatenate(xs),
        axis_y_km=np.concatenate(ys),
        plates=plates,
        vehicle_route=rng.choice(spec.routes, size=v, p=popularity),
        cruise_kmh=np.clip(rng.normal(30.0, 4.0, size=v), 18.0, 42.0),
        rate_weight=rate,
        speeder=speeder,
    )


def _group_cumsum(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Cumulative sum restarting at each group (groups are contiguous, given by start index and size)."""
    total = np.cumsum(values)
    before = np.concatenate([[0.0], total])[starts]
    return total - np.repeat(before, counts)


def _in_peak(hour: np.ndarray) -> np.ndarray:
    peak = np.zeros(hour.shape, dtype=bool)
    for lo, hi in PEAK_HOURS:
        peak |= (hour >= lo) & (hour < hi)
    return peak


@dataclass(frozen=True)
class _Shifts:
    """The shifts of one day's working vehicles, one entry per vehicle, in seconds: the start (after local
    midnight), the two break lengths, the active (driving) time and where in the active time each break falls."""

    start: np.ndarray
    gap1: np.ndarray
    gap2: np.ndarray
    active: np.ndarray
    brk1: np.ndarray
    brk2: np.ndarray


@dataclass
class _Records:
    """One day's records as parallel arrays (one entry per record, vehicle-day by vehicle-day, in time order).

    ``owner`` is the record's vehicle-day (index into the day's working vehicles), ``veh`` its vehicle, ``route``
    its route, ``seconds`` its second of the local day, ``leg`` the number of route ends passed and ``up`` its
    direction. The dirty-row step changes ``seconds``, ``speed``, ``lon``, ``lat``, ``leg`` and ``up`` in place.
    """

    owner: np.ndarray
    veh: np.ndarray
    route: np.ndarray
    seconds: np.ndarray
    speed: np.ndarray
    lon: np.ndarray
    lat: np.ndarray
    leg: np.ndarray
    up: np.ndarray


def _working_vehicles(rng: np.random.Generator, spec: FleetSpec) -> np.ndarray:
    """The vehicles that work today: each takes the day off with ``DAY_OFF_PROBABILITY``; at least one works."""
    n_veh = spec.vehicles
    working = np.flatnonzero(rng.random(n_veh) >= DAY_OFF_PROBABILITY)
    if working.size == 0:
        working = np.array([int(rng.integers(n_veh))])
    return working


def _draw_shifts(rng: np.random.Generator, m: int) -> _Shifts:
    """Shifts of ``m`` vehicles: :data:`SHIFT_START_S` to :data:`SHIFT_END_S` local with two breaks of
    :data:`BREAK_S` each, placed at :data:`BREAK_AT` of the active time."""
    shift_start = SHIFT_START_S[0] + rng.uniform(0, SHIFT_START_S[1] - SHIFT_START_S[0], m)
    shift_end = SHIFT_END_S[1] - rng.uniform(0, SHIFT_END_S[1] - SHIFT_END_S[0], m)
    gap1 = rng.uniform(*BREAK_S, m)
    gap2 = rng.uniform(*BREAK_S, m)
    active = shift_end - shift_start - gap1 - gap2
    brk1 = active * rng.uniform(*BREAK_AT[0], m)
    brk2 = active * rng.uniform(*BREAK_AT[1], m)
    return _Shifts(start=shift_start, gap1=gap1, gap2=gap2, active=active, brk1=brk1, brk2=brk2)


def _record_counts(
    rng: np.random.Generator, spec: FleetSpec, fleet: _Fleet, working: np.ndarray, active: np.ndarray
) -> np.ndarray:
    """Records per vehicle-day: vehicle rate x day factor (both lognormal, mean 1); at least 5 s apart on
    average and at least 2."""
    day_factor = rng.lognormal(-0.5 * 0.25**2, 0.25, working.size)
    target = spec.records_per_vehicle_day * fleet.rate_weight[working] * day_factor
    counts = np.clip(np.rint(target), 2, np.floor(active / 5.0))
    return counts.astype(np.int64)


def _record_times(
    rng: np.random.Generator, shifts: _Shifts, starts: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(active seconds, clock seconds after midnight) of each record: jittered intervals, rescaled so that each
    vehicle-day fills its active time, the breaks inserted after their active time."""
    jitter = rng.lognormal(0.0, 0.2, int(counts.sum()))
    cum = _group_cumsum(jitter, starts, counts)
    total = cum[starts + counts - 1]
    active = shifts.active
    t_active = cum / np.repeat(total, counts) * np.repeat(active, counts)
    t_active -= 0.5 * np.repeat(active / counts, counts)  # first fix half an interval after the shift starts
    clock = (
        np.repeat(shifts.start, counts)
        + t_active
        + np.repeat(shifts.gap1, counts) * (t_active > np.repeat(shifts.brk1, counts))
        + np.repeat(shifts.gap2, counts) * (t_active > np.repeat(shifts.brk2, counts))
    )
    return t_active, clock


def _record_speeds(rng: np.random.Generator, fleet: _Fleet, veh: np.ndarray, clock: np.ndarray) -> np.ndarray:
    """Speed of each record (km/h): free-flow cruise x peak slow-down x noise, capped; stops at 0; speeders
    sometimes 60-85 km/h off-peak."""
    n = clock.size
    peak = _in_peak(clock / 3600.0)
    noise = rng.lognormal(0.0, SPEED_NOISE_SIGMA, n)
    speed = np.minimum(
        fleet.cruise_kmh[veh] * np.where(peak, PEAK_SPEED_FACTOR, 1.0) * noise, NORMAL_SPEED_CAP
    )
    speed[rng.random(n) < np.where(peak, STOPPED_SHARE[1], STOPPED_SHARE[0])] = 0.0
    speeding = fleet.speeder[veh] & ~peak & (rng.random(n) < SPEEDING_SHARE)
    speed[speeding] = rng.uniform(*SPEEDING_KMH, int(speeding.sum()))
    return np.asarray(speed)


def _drive(
    rng: np.random.Generator,
    spec: FleetSpec,
    fleet: _Fleet,
    shifts: _Shifts,
    working: np.ndarray,
    counts: np.ndarray,
) -> _Records:
    """One day's clean records: times, speeds, and positions from the distance driven along the route (back and
    forth) at those speeds over the active time, with GPS noise of about 8 m."""
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    owner = np.repeat(np.arange(working.size), counts)
    veh = working[owner]
    t_active, clock = _record_times(rng, shifts, starts, counts)
    speed = _record_speeds(rng, fleet, veh, clock)
    dt_active = np.diff(t_active, prepend=0.0)
    dt_active[starts] = 0.0
    driven = _group_cumsum(speed / 3600.0 * dt_active, starts, counts)
    route = fleet.vehicle_route[veh]
    length = fleet.route_length_km[route]
    along = np.repeat(rng.uniform(0.0, 2.0, working.size), counts) * length + driven
    leg = np.floor(along / length).astype(np.int64)
    frac = along - leg * length
    up = leg % 2 == 0
    pos = np.where(up, frac, length - frac) + fleet.route_base_km[route]
    n = clock.size
    x = np.interp(pos, fleet.axis_km, fleet.axis_x_km) + rng.normal(0.0, 0.008, n)
    y = np.interp(pos, fleet.axis_km, fleet.axis_y_km) + rng.normal(0.0, 0.008, n)
    lat, lon = SURAT.plane().to_degrees(np.column_stack([x, y]) * 1000.0)
    return _Records(
        owner=owner,
        veh=veh,
        route=route,
        seconds=np.floor(clock).astype(np.int64),
        speed=speed,
        lon=lon,
        lat=lat,
        leg=leg,
        up=up,
    )


def _dirty_rows(
    rng: np.random.Generator, spec: FleetSpec, owner: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(row indices, kind index into :data:`DIRTY_KINDS`) of the dirty rows: Bernoulli per row, kind uniform.

    A duplicate copies the previous row of the same vehicle-day; where that row is itself dirty or belongs to
    another vehicle-day, the row gets an absurd speed instead.
    """
    n = owner.size
    dirty = np.flatnonzero(rng.random(n) < spec.dirty_fraction)
    kind = rng.integers(0, len(DIRTY_KINDS), dirty.size)
    is_dirty = np.zeros(n, dtype=bool)
    is_dirty[dirty] = True
    dup_kind = DIRTY_KINDS.index("duplicate")
    dup = dirty[kind == dup_kind]
    ok = (dup > 0) & (owner[np.maximum(dup - 1, 0)] == owner[dup]) & ~is_dirty[np.maximum(dup - 1, 0)]
    kind[(kind == dup_kind)] = np.where(ok, dup_kind, DIRTY_KINDS.index("absurd_speed"))
    return dirty, kind


def _make_dirty(
    rng: np.random.Generator, records: _Records, dirty: np.ndarray, kind: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Spoil the dirty rows of ``records`` in place (all kinds but the unparseable timestamp); returns which rows
    keep their coordinates and the rows whose timestamp is to be made unparseable."""

    def rows(name: str) -> np.ndarray:
        return dirty[kind == DIRTY_KINDS.index(name)]

    dup = rows("duplicate")
    for arr in (records.seconds, records.speed, records.lon, records.lat, records.leg, records.up):
        arr[dup] = arr[dup - 1]
    has_coords = np.ones(records.owner.size, dtype=bool)
    has_coords[rows("missing_coordinates")] = False
    far = rows("out_of_range_coordinates")
    which = rng.integers(0, 3, far.size)  # 0: latitude, 1: longitude, 2: both out of range
    bad_lat, bad_lon = far[which != 1], far[which != 0]
    records.lat[bad_lat] = rng.uniform(90.5, 120.0, bad_lat.size) * rng.choice([-1.0, 1.0], bad_lat.size)
    records.lon[bad_lon] = rng.uniform(180.5, 360.0, bad_lon.size) * rng.choice([-1.0, 1.0], bad_lon.size)
    neg = rows("negative_speed")
    records.speed[neg] = -rng.uniform(0.5, 60.0, neg.size)
    records.speed[rows("nan_speed")] = np.nan
    absurd = rows("absurd_speed")
    records.speed[absurd] = rng.uniform(200.5, 999.0, absurd.size)
    return has_coords, rows("unparseable_timestamp")


def _observation_times(
    rng: np.random.Generator, date: dt.date, utc_offset: str, seconds: np.ndarray, bad_ts: np.ndarray
) -> pl.Series:
    """The ``observationDateTime`` text of each record, the rows ``bad_ts`` replaced by unparseable text."""
    observation = _day_stamps(date, utc_offset).gather(seconds)
    if bad_ts.size:
        observation = observation.scatter(
            bad_ts, [BAD_TIMESTAMPS[i] for i in rng.integers(0, len(BAD_TIMESTAMPS), bad_ts.size).tolist()]
        )
    return observation


def _itms_frame(
    fleet: _Fleet,
    date: dt.date,
    records: _Records,
    has_coords: np.ndarray,
    observation: pl.Series,
) -> pl.DataFrame:
    """The day's records in the ITMS shape (the module docstring's columns, in order); trip ids are
    route-date-vehicle-leg."""
    # An (n, 2) array becomes a fixed-size list column and is cast to list<f64> (much faster than concat_list).
    coordinates = pl.Series(
        "coordinates", np.column_stack([np.round(records.lon, 6), np.round(records.lat, 6)])
    )
    frame = pl.DataFrame(
        {
            "license_plate": pl.Series(fleet.plates, dtype=pl.String).gather(records.veh),
            "route_id": pl.Series(fleet.route_ids, dtype=pl.String).gather(records.route),
            "veh": records.veh.astype(np.uint32),
            "leg": records.leg.astype(np.uint32),
            "up": records.up,
            "observationDateTime": observation,
            "coordinates": coordinates.cast(pl.List(pl.Float64)),
            "has_coords": has_coords,
            "speed": np.round(records.speed, 2),
        }
    )
    return frame.select(
        pl.lit(SURAT.feed_id).alias("id"),
        pl.col("license_plate"),
        pl.concat_str(
            pl.col("route_id"),
            pl.lit(f"-{date:%Y%m%d}-"),
            pl.col("veh").cast(pl.String),
            pl.lit("-"),
            pl.col("leg").cast(pl.String),
        ).alias("trip_id"),
        pl.col("route_id"),
        pl.when(pl.col("up")).then(pl.lit("UP")).otherwise(pl.lit("DN")).alias("trip_direction"),
        pl.col("observationDateTime"),
        pl.struct(
            type=pl.lit("Point"),
            coordinates=pl.when(pl.col("has_coords")).then(pl.col("coordinates")),
        ).alias("location"),
        pl.col("speed"),
    )


def _generate_day(spec: FleetSpec, fleet: _Fleet, day: int) -> pl.DataFrame:
    """All the records of one day, every vehicle at once, from the day's own random stream (the draws in this
    order: working vehicles, shifts, record counts, times, speeds, positions, dirty rows)."""
    rng = np.random.default_rng(np.random.SeedSequence(spec.seed, spawn_key=(day + 1,)))
    working = _working_vehicles(rng, spec)
    shifts = _draw_shifts(rng, working.size)
    counts = _record_counts(rng, spec, fleet, working, shifts.active)
    records = _drive(rng, spec, fleet, shifts, working, counts)
    dirty, kind = _dirty_rows(rng, spec, records.owner)
    has_coords, bad_ts = _make_dirty(rng, records, dirty, kind)
    date = spec.start + dt.timedelta(days=day)
    observation = _observation_times(rng, date, SURAT.utc_offset, records.seconds, bad_ts)
    return _itms_frame(fleet, date, records, has_coords, observation)


def _day_stamps(date: dt.date, utc_offset: str) -> pl.Series:
    """The 86,400 local timestamps of one day as ISO 8601 text with offset, indexed by second of the day."""
    midnight = int(dt.datetime(date.year, date.month, date.day, tzinfo=dt.UTC).timestamp())
    return pl.select(
        pl.from_epoch(pl.int_range(midnight, midnight + SECONDS_PER_DAY), time_unit="s").dt.strftime(
            f"%Y-%m-%dT%H:%M:%S{utc_offset}"
        )
    ).to_series()


def iter_fleet_days(spec: FleetSpec, progress: Callable[[int], None] | None = None) -> Iterator[pl.DataFrame]:
    """Yield the records of each day in turn (day-major, then vehicle, then time); ``progress`` (optional) is
    called with the number of records of each day once the caller has taken it."""
    fleet = _build_fleet(spec)
    for day in range(spec.days):
        frame = _generate_day(spec, fleet, day)
        yield frame
        if progress is not None:
            progress(frame.height)


def generate_fleet(vehicles: int, days: int, seed: int, **options: Any) -> pl.DataFrame:
    """Generate a synthetic bus fleet in the ITMS shape (see the module docstring for the columns): the records of
    ``FleetSpec(vehicles, days, seed, **options)``, ``options`` being its other fields (:class:`FleetSpec`).

    >>> df = generate_fleet(vehicles=5, days=1, seed=1, records_per_vehicle_day=50)
    >>> df.columns[:3]
    ['id', 'license_plate', 'trip_id']
    """
    spec = FleetSpec(vehicles=vehicles, days=days, seed=seed, **options)
    return pl.concat(iter_fleet_days(spec), rechunk=False)


def fleet_format(path: Path) -> str:
    """The output format for ``path`` by its extension, or :class:`InputError`."""
    suffix = Path(path).suffix.lower()
    if suffix not in FLEET_FORMATS:
        raise InputError(f"cannot tell the format of {path}: use one of {', '.join(FLEET_FORMATS)}")
    return suffix


def flatten_for_csv(df: pl.DataFrame) -> pl.DataFrame:
    """Replace the nested ``location`` by a ``location.coordinates`` text column "[lon, lat]" (null if missing)."""
    coords = pl.col("location").struct.field("coordinates")
    text = pl.format("[{}, {}]", coords.list.get(0), coords.list.get(1))
    return df.with_columns(text.alias("location")).rename({"location": "location.coordinates"})


def write_fleet(df: pl.DataFrame, path: Path | str) -> Path:
    """Write ``df`` (the ITMS shape) to ``path`` in the format given by its extension.

    ``.csv`` flattens the location to a ``location.coordinates`` column "[lon, lat]"; ``.jsonl`` and ``.json``
    keep the nested ``location`` object (JSON has no NaN: NaN speeds are written as null); ``.parquet`` keeps
    ``location`` as a struct{type, coordinates: list<f64>}. Returns the path written.
    """
    path = Path(path)
    fleet_format(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_frames([df], path)
    return path


def write_fleet_days(
    spec: FleetSpec, path: Path | str, *, progress: Callable[[int], None] | None = None
) -> tuple[Path, int]:
    """Generate ``spec`` day by day and stream it to ``path`` (format by extension); keeps one day in memory.

    The file holds the same rows as ``write_fleet(generate_fleet(...), path)``. ``progress`` is called with the
    number of records after each day. Returns the path and the number of records written. The file is written
    under a temporary sibling name and renamed into place at the end: an interrupted run leaves no partial file.
    """
    path = Path(path)
    fleet_format(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}{path.suffix}"
    try:
        written = _write_frames(iter_fleet_days(spec, progress), tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path, written


def _write_frames(frames: Iterable[pl.DataFrame], path: Path) -> int:
    """Write ``frames`` one after the other to ``path`` (format by extension); returns the number of records."""
    suffix = fleet_format(path)
    written = 0
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        writer: pq.ParquetWriter | None = None
        try:
            for frame in frames:
                table = frame.to_arrow()
                if writer is None:
                    writer = pq.ParquetWriter(path, table.schema, compression="zstd")
                writer.write_table(table)
                written += frame.height
        finally:
            if writer is not None:
                writer.close()
        return written
    with path.open("wb") as out:
        if suffix == ".json":
            out.write(b"[")
        for day, frame in enumerate(frames):
            if suffix == ".csv":
                flatten_for_csv(frame).write_csv(out, include_header=day == 0)
            elif suffix == ".jsonl":
                frame.write_ndjson(out)
            else:
                text = frame.write_json().strip()
                body = text[1:-1]  # drop the enclosing [ ]
                if body:
                    out.write((b"," if written else b"") + body.encode())
            written += frame.height
        if suffix == ".json":
            out.write(b"]\n")
    return written


# ------------------------------------------------------------------------------------------ public schedule (GTFS)
#
# The generator plans no timetable; the schedule below is the *expected* service of its process (docs/fleet.md).

STOP_SPACING_KM = 0.4
"""Stops of the schedule: evenly along each route, about this far apart (ends included)."""

SHIFT_START_S = (6 * 3600, 6 * 3600 + 5400)
"""Shift start: uniform between 06:00 and 07:30 (as drawn in :func:`_draw_shifts`)."""
SHIFT_END_S = (22 * 3600 - 5400, 22 * 3600)
"""Shift end: uniform between 20:30 and 22:00."""
BREAK_S = (900.0, 3600.0)
"""Each of the two breaks lasts uniform 15-60 minutes."""
BREAK_AT = ((0.2, 0.45), (0.55, 0.8))
"""Where the breaks fall, as shares of the active (driving) time, uniform within each range."""
SPEED_NOISE_SIGMA = 0.25
"""Sigma of the lognormal factor on each record's speed."""
STOPPED_SHARE = (0.1, 0.2)
"""Share of records at 0 km/h: off-peak, peak."""
SPEEDING_SHARE = 0.15
SPEEDING_KMH = (60.0, 85.0)
"""Speeders report 60-85 km/h on this share of their off-peak records."""
SCHEDULE_STEP_S = 10.0
"""Time step of the schedule's integration of the expected speed."""


def _expected_speed_kmh(cruise: float, speeder: bool, peak: np.ndarray) -> np.ndarray:
    """The mean speed a vehicle's records report at each instant: cruise x peak factor x E[lognormal], the stopped
    records counted as 0 and a speeder's off-peak records at the mean of 60-85 km/h (the cap at 55 km/h cuts
    less than 1% of a normal vehicle's records and is left out)."""
    noise = math.exp(SPEED_NOISE_SIGMA**2 / 2)
    off = cruise * noise * (1 - STOPPED_SHARE[0])
    if speeder:
        off = (1 - SPEEDING_SHARE) * off + SPEEDING_SHARE * sum(SPEEDING_KMH) / 2
    on = cruise * PEAK_SPEED_FACTOR * noise * (1 - STOPPED_SHARE[1])
    return np.where(peak, on, off)


@dataclass(frozen=True)
class _Block:
    """One vehicle's expected day: shift start and end, breaks (start of each, seconds after midnight, with its
    length), the cycle position at the start (km along UP then DN) and its cruise speed."""

    route: int
    index: int
    start_s: float
    end_s: float
    breaks: tuple[tuple[float, float], ...]
    phase_km: float
    cruise_kmh: float
    speeder: bool


def _quantile(k: int, n: int, shift: float = 0.0) -> float:
    """The k-th of n evenly spread quantiles in (0, 1), rotated by ``shift`` (so that blocks do not all take the
    earliest start together with the earliest end)."""
    return ((k + 0.5) / n + shift) % 1.0


def _blocks(spec: FleetSpec, fleet: _Fleet) -> list[_Block]:
    """Every vehicle's expected block: its shift start, end, break lengths and break positions at evenly spread
    quantiles of the generator's uniform draws, and its route's vehicles evenly spread over the route's cycle
    (departures in each direction every cycle time / vehicles)."""
    out = []
    golden = (math.sqrt(5) - 1) / 2
    for route in range(len(fleet.route_ids)):
        members = np.flatnonzero(fleet.vehicle_route == route)
        n = members.size
        for k, v in enumerate(members.tolist()):
            start = SHIFT_START_S[0] + _quantile(k, n) * (SHIFT_START_S[1] - SHIFT_START_S[0])
            end = SHIFT_END_S[0] + _quantile(k, n, golden) * (SHIFT_END_S[1] - SHIFT_END_S[0])
            gaps = [
                BREAK_S[0] + _quantile(k, n, golden * (i + 2)) * (BREAK_S[1] - BREAK_S[0]) for i in range(2)
            ]
            active = end - start - sum(gaps)
            at = [lo + _quantile(k, n, golden * (i + 4)) * (hi - lo) for i, (lo, hi) in enumerate(BREAK_AT)]
            out.append(
                _Block(
                    route=route,
                    index=k,
                    start_s=start,
                    end_s=end,
                    breaks=tuple((a * active, g) for a, g in zip(at, gaps, strict=True)),
                    phase_km=2.0 * float(fleet.route_length_km[route]) * k / n,
                    cruise_kmh=float(fleet.cruise_kmh[v]),
                    speeder=bool(fleet.speeder[v]),
                )
            )
    return out


def _block_motion(block: _Block) -> tuple[np.ndarray, np.ndarray]:
    """(active seconds, km driven) at every :data:`SCHEDULE_STEP_S` of the block's active time, km by the
    expected speed at the clock time each active second falls on (breaks stop the clock of driving, as in the
    generator, where a vehicle does not move between the records around a break)."""
    active = block.end_s - block.start_s - sum(g for _, g in block.breaks)
    tau = np.arange(0.0, active + SCHEDULE_STEP_S, SCHEDULE_STEP_S)
    clock = _clock(block, tau)
    speed = _expected_speed_kmh(block.cruise_kmh, block.speeder, _in_peak(clock / 3600.0))
    driven = np.concatenate([[0.0], np.cumsum(speed[:-1] * np.diff(tau) / 3600.0)])
    return tau, driven


def _clock(block: _Block, tau: np.ndarray) -> np.ndarray:
    """Seconds after midnight of active second ``tau`` (breaks inserted after their active time)."""
    clock = block.start_s + tau
    for at, gap in block.breaks:
        clock = clock + gap * (tau > at)
    return np.asarray(clock, dtype=np.float64)


def _route_stops(length_km: float) -> np.ndarray:
    """Km along the route (UP direction) of its stops: evenly spaced about :data:`STOP_SPACING_KM` apart."""
    m = max(1, round(length_km / STOP_SPACING_KM))
    return np.asarray(np.linspace(0.0, length_km, m + 1), dtype=np.float64)


def _block_trips(
    block: _Block, length_km: float, stops_km: np.ndarray
) -> list[tuple[bool, np.ndarray, np.ndarray]]:
    """The block's trips: (UP?, stop indices, clock seconds at each), one per leg between the route's ends, cut
    at each break: the trip ends at the last stop before the break and the next one leaves that stop after it, at
    the time that brings it to the following stop when the vehicle gets there. The generator's vehicle reports
    nothing during a break, so no trip covers one. A piece that would pass fewer than two stops is left out."""
    tau, driven = _block_motion(block)
    reach = block.phase_km + driven
    first, last = float(reach[0]), float(reach[-1])
    cuts = np.array([at for at, _ in block.breaks])
    order = np.arange(stops_km.size)
    trips: list[tuple[bool, np.ndarray, np.ndarray]] = []
    for leg in range(math.floor(first / length_km), math.floor(last / length_km) + 1):
        up = leg % 2 == 0  # leg l covers [l L, (l + 1) L] of the unrolled cycle, UP when l is even
        along = leg * length_km + (stops_km if up else length_km - stops_km[::-1])
        keep = (along >= first) & (along <= last)
        stops = (order if up else order[::-1])[keep]
        t_active = np.interp(along[keep], reach, tau)
        clock = _clock(block, t_active)
        piece = np.searchsorted(cuts, t_active, side="left")
        for p in np.unique(piece).tolist():
            rows = np.flatnonzero(piece == p)
            times = clock[rows]
            if rows[0] > 0:  # resume from the stop before the break
                prev = rows[0] - 1
                rows = np.r_[prev, rows]
                times = np.r_[clock[rows[1]] - (t_active[rows[1]] - t_active[prev]), times]
            if rows.size >= 2:
                trips.append((up, stops[rows], times))
    return trips


def _latlon(x_km: np.ndarray, y_km: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Degrees of km offsets from the centre, as the generator places its records."""
    lat, lon = SURAT.plane().to_degrees(np.column_stack([x_km, y_km]) * 1000.0)
    return np.round(lat, 6), np.round(lon, 6)


def _hms(seconds: np.ndarray) -> list[str]:
    s = np.rint(seconds).astype(np.int64)
    return [f"{v // 3600:02d}:{v // 60 % 60:02d}:{v % 60:02d}" for v in s.tolist()]


_GTFS_ROUTE_COLUMNS = ["route_id", "agency_id", "route_short_name", "route_long_name", "route_type"]
_GTFS_TRIP_COLUMNS = ["route_id", "service_id", "trip_id", "direction_id", "shape_id", "block_id"]
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _route_shapes(fleet: _Fleet, r: int) -> list[pl.DataFrame]:
    """``shapes.txt`` rows of route ``r``: its vertices UP and then DN (shape ids ``<route>-UP``/``-DN``), with
    ``shape_dist_traveled`` in metres from the start of each direction."""
    route_id = fleet.route_ids[r]
    length = float(fleet.route_length_km[r])
    base = float(fleet.route_base_km[r])
    on = (fleet.axis_km >= base - 1e-9) & (fleet.axis_km <= base + length + 1e-9)
    cum = fleet.axis_km[on] - base
    lat, lon = _latlon(fleet.axis_x_km[on], fleet.axis_y_km[on])
    return [
        pl.DataFrame(
            {
                "shape_id": f"{route_id}-{direction}",
                "shape_pt_lat": lat[order],
                "shape_pt_lon": lon[order],
                "shape_pt_sequence": np.arange(1, cum.size + 1),
                "shape_dist_traveled": np.round(dist[order] * 1000.0, 1),
            }
        )
        for direction, order, dist in (("UP", slice(None), cum), ("DN", slice(None, None, -1), length - cum))
    ]


def _route_stops_table(fleet: _Fleet, r: int, at: np.ndarray) -> pl.DataFrame:
    """``stops.txt`` rows of route ``r``: a stop at each km ``at`` along it (UP direction), ids ``<route>-Snnn``."""
    route_id = fleet.route_ids[r]
    base = float(fleet.route_base_km[r])
    s_lat, s_lon = _latlon(
        np.interp(base + at, fleet.axis_km, fleet.axis_x_km),
        np.interp(base + at, fleet.axis_km, fleet.axis_y_km),
    )
    return pl.DataFrame(
        {
            "stop_id": [f"{route_id}-S{j:03d}" for j in range(at.size)],
            "stop_name": [f"{route_id} stop {j}" for j in range(at.size)],
            "stop_lat": s_lat,
            "stop_lon": s_lon,
        }
    )


def _block_tables(
    fleet: _Fleet, block: _Block, at: np.ndarray
) -> tuple[list[tuple[str, str, str, int, str, str]], list[pl.DataFrame]]:
    """``trips.txt`` rows and ``stop_times.txt`` tables of one block (trip ids ``<block>-nnn``, service
    ``DAILY``); ``at`` holds the km of its route's stops."""
    route_id = fleet.route_ids[block.route]
    length = float(fleet.route_length_km[block.route])
    block_id = f"{route_id}-B{block.index:03d}"
    trips: list[tuple[str, str, str, int, str, str]] = []
    stop_times = []
    for i, (up, idx, times) in enumerate(_block_trips(block, length, at)):
        trip_id = f"{block_id}-{i:03d}"
        direction = "UP" if up else "DN"
        trips.append((route_id, "DAILY", trip_id, 0 if up else 1, f"{route_id}-{direction}", block_id))
        clock = _hms(times)
        dist = at[idx] if up else length - at[idx]
        stop_times.append(
            pl.DataFrame(
                {
                    "trip_id": trip_id,
                    "arrival_time": clock,
                    "departure_time": clock,
                    "stop_id": [f"{route_id}-S{j:03d}" for j in idx.tolist()],
                    "stop_sequence": np.arange(1, idx.size + 1),
                    "shape_dist_traveled": np.round(dist * 1000.0, 1),
                }
            )
        )
    return trips, stop_times


def _agency_table() -> pl.DataFrame:
    """``agency.txt``: one synthetic agency ``SYN`` in the city's time zone."""
    return pl.DataFrame(
        {
            "agency_id": ["SYN"],
            "agency_name": [f"Synthetic {SURAT.name} fleet (urbandp synth, not a real agency)"],
            "agency_url": ["https://example.invalid"],
            "agency_timezone": [SURAT.timezone],
        }
    )


def _calendar_table(spec: FleetSpec) -> pl.DataFrame:
    """``calendar.txt``: the one service ``DAILY``, every weekday, from the fleet's first day to its last."""
    last = spec.start + dt.timedelta(days=spec.days - 1)
    return pl.DataFrame(
        {
            "service_id": ["DAILY"],
            **{d: [1] for d in _WEEKDAYS},
            "start_date": [f"{spec.start:%Y%m%d}"],
            "end_date": [f"{last:%Y%m%d}"],
        }
    )


def fleet_schedule(spec: FleetSpec) -> dict[str, pl.DataFrame]:
    """The fleet's public schedule as GTFS tables (file name -> table), the expected service of the generator.

    Derived from the parameters and the route layout only, never from generated records; docs/fleet.md, section
    "The synthetic fleet's public schedule", says how (one block per vehicle, every day; shifts and breaks at
    evenly spread quantiles of the generator's draws; running times from :func:`_expected_speed_kmh`). A route
    without vehicles is left out.
    """
    fleet = _build_fleet(spec)
    routes, stops, shapes, trips, stop_times = [], [], [], [], []
    stops_of = []
    served = set(fleet.vehicle_route.tolist())
    for r, route_id in enumerate(fleet.route_ids):
        if r not in served:  # a route without a vehicle has no service: not in the feed
            stops_of.append(np.zeros(0))
            continue
        shapes.extend(_route_shapes(fleet, r))
        at = _route_stops(float(fleet.route_length_km[r]))
        stops_of.append(at)
        stops.append(_route_stops_table(fleet, r, at))
        routes.append((route_id, "SYN", route_id, f"Synthetic route {route_id}", 3))
    for block in _blocks(spec, fleet):
        block_trips, block_stop_times = _block_tables(fleet, block, stops_of[block.route])
        trips.extend(block_trips)
        stop_times.extend(block_stop_times)
    return {
        "agency.txt": _agency_table(),
        "routes.txt": pl.DataFrame(routes, schema=_GTFS_ROUTE_COLUMNS, orient="row"),
        "stops.txt": pl.concat(stops),
        "shapes.txt": pl.concat(shapes),
        "trips.txt": pl.DataFrame(trips, schema=_GTFS_TRIP_COLUMNS, orient="row"),
        "stop_times.txt": pl.concat(stop_times),
        "calendar.txt": _calendar_table(spec),
    }


def write_fleet_gtfs(spec: FleetSpec, folder: Path | str) -> dict[str, int]:
    """Write :func:`fleet_schedule` as GTFS text files into ``folder`` (created if needed); rows per file."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name, table in fleet_schedule(spec).items():
        table.write_csv(folder / name)
        counts[name] = table.height
    return counts
