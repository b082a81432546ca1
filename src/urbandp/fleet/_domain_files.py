"""Public domains from published route data (what one does to a release: :mod:`urbandp.fleet._domain`), read from
public files only, nothing charged: :func:`domain_from_cells`, :func:`domain_from_geojson` and
:func:`domain_from_gtfs` (which adds the HATs with scheduled service and the planner's priors, :class:`PublicDomain`).

Lines are walked, not guessed: each segment is sampled at a spacing of :data:`EDGE_FRACTION` of H3's mean edge
length at the resolution (a line can then only miss a cell whose piece on it is shorter than that spacing), and
consecutive samples in cells that are not neighbours are joined with H3's ``grid_path_cells``, so a line's cells are
a connected path. RFC 7946 (section 3.1.1) reads a segment as a straight line in longitude/latitude, which is how
the samples are interpolated; lines crossing the antimeridian are not supported.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import h3
import numpy as np
import polars as pl
import polars_h3 as plh3
from h3.api import basic_int as h3_int

from urbandp._geodesy import WGS84, PlanarProjection
from urbandp._grid.slots import SlotSpec
from urbandp._records.geojson import read_geojson
from urbandp._records.gtfs_schedule import FeedTables, read_feed, read_public_file, read_tables
from urbandp.errors import InputDataError, InvalidParameterError
from urbandp.fleet._options import MAX_DOMAIN_CELLS

EDGE_FRACTION = 0.05
"""Sample spacing along a line, as a share of H3's mean edge length at the resolution (70 m at resolution 7)."""

MAX_LINE_SAMPLES = 50_000_000
"""Most samples the lines of one domain may need (routes of a large city at resolution 10 are a few million)."""

PROJECTION_TOLERANCE_M = 25.0
"""When a stop is projected onto its trip's shape, the first pass within this distance of the nearest one wins, so
a stop on a loop route is placed on the pass its order says, not on a later pass that happens to be closer."""

CELLS_COLUMNS = ("h3_cell", "cell")


@dataclass(frozen=True)
class PublicDomain:
    """The public cells (and, from a schedule, the HATs) of a release, read from public files only.

    ``hats`` lists the (cell, slot) pairs with scheduled service on the public days (GTFS), ``None`` where every slot
    of every cell is in the domain. ``scheduled_trips`` gives, per HAT with service, the mean over the public days of
    the distinct scheduled trips in the cell during the slot (a day without service counts as 0); ``None`` without a
    schedule. ``source_sha256`` is of the file, or for a GTFS folder of its GTFS text files (see :func:`urbandp._records.gtfs_schedule.read_feed`).

    From a schedule whose trips carry ``block_id`` (a block is one vehicle's day of work), two priors for the
    planner: ``scheduled_vehicles`` gives per HAT the mean over the public days of the distinct blocks in the cell
    during the slot (a vehicle that passes a cell twice in one slot, e.g. out and back, is one trip-pair but one
    vehicle, as it is one vehicle-day in the records); ``hats_per_vehicle_day`` is the mean, over the public days
    and the blocks in the window that day, of the distinct HATs a block passes through within the window. Both are
    ``None`` without a schedule or when no trip has a ``block_id``.

    ``route_km`` (a GeoJSON): ``(cell, route_km)``, the kilometres of its lines in each cell (empty without lines),
    the planner's prior with a fleet size.
    """

    kind: str
    source: str
    source_sha256: str
    resolution: int
    cells: pl.Series
    hats: pl.DataFrame | None = None
    scheduled_trips: pl.DataFrame | None = None
    hats_per_vehicle_day: float | None = None
    scheduled_vehicles: pl.DataFrame | None = None
    route_km: pl.DataFrame | None = None

    def grid(self, slots: Sequence[int]) -> pl.DataFrame:
        """The domain's HATs ``(cell UInt64, slot Int16)`` in ``slots``, sorted: cells x slots without a schedule."""
        wanted = pl.Series("slot", sorted(set(slots)), dtype=pl.Int16)
        if self.hats is None:
            return (
                self.cells.cast(pl.UInt64)
                .to_frame("cell")
                .join(wanted.to_frame(), how="cross")
                .sort("cell", "slot")
            )
        return self.hats.filter(pl.col("slot").is_in(wanted.implode())).sort("cell", "slot")


# --------------------------------------------------------------------------------------------------- checks, hashes


def _cells_series(cells: np.ndarray | pl.Series, what: str) -> pl.Series:
    """Unique sorted UInt64 cells; an empty or oversized domain is refused in one line."""
    series = pl.Series("cell", cells, dtype=pl.UInt64).unique().sort()
    if series.len() == 0:
        raise InputDataError(f"{what}: no H3 cell in the domain")
    if series.len() > MAX_DOMAIN_CELLS:
        raise InvalidParameterError(
            f"{what}: {series.len():,} H3 cells, more than {MAX_DOMAIN_CELLS:,} (choose a coarser resolution)"
        )
    return series


def _file_domain(
    kind: str, path: Path, raw: bytes, resolution: int, cells: np.ndarray | pl.Series, what: str
) -> PublicDomain:
    """The domain of a file's cells (no schedule), named by the file and the sha256 of its bytes."""
    sha = hashlib.sha256(raw).hexdigest()
    return PublicDomain(kind, path.name, sha, resolution, _cells_series(cells, what))


# --------------------------------------------------------------------------------------------------------- cells


def domain_from_cells(path: Path, resolution: int) -> PublicDomain:
    """A domain from a list of H3 cells: text with one hex id a line, or CSV with an ``h3_cell`` or ``cell`` column.

    Blank lines are skipped. A cell finer than ``resolution`` stands for its parent at ``resolution``, a coarser one
    for all its children there. An id that is not a valid H3 cell raises :class:`InputDataError` naming its line.
    """
    path = Path(path)
    raw = read_public_file(path, "cells")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputDataError(f"cells {path}: not UTF-8 text") from None
    ids, lines = _cell_ids(text, path)
    if not ids:
        raise InputDataError(f"cells {path}: no H3 cell id in the file")
    cells = pl.DataFrame({"id": ids, "line": lines}).with_columns(
        cell=plh3.str_to_int(pl.col("id").str.to_lowercase())
    )
    bad = cells.filter(~plh3.is_valid_cell(pl.col("cell")).fill_null(False))
    if bad.height:
        value, line = bad.row(0)[:2]
        raise InputDataError(
            f"cells {path}: line {line}: {value!r} is not an H3 cell id ({bad.height} invalid line(s) in all)"
        )
    return _file_domain(
        "cells", path, raw, resolution, _at_resolution(cells["cell"], resolution), f"cells {path}"
    )


def _cell_ids(text: str, path: Path) -> tuple[list[str], list[int]]:
    """The cell ids of a cells file with their 1-based line numbers (a header line names the column)."""
    rows = [(i + 1, line.strip()) for i, line in enumerate(text.splitlines()) if line.strip()]
    if not rows:
        return [], []
    first = rows[0][1]
    if "," not in first and first.strip('"').lower() not in CELLS_COLUMNS:
        return [r[1].strip('"') for r in rows], [r[0] for r in rows]
    try:
        table = pl.read_csv(io.StringIO(text), infer_schema=False)
    except pl.exceptions.PolarsError as err:
        raise InputDataError(f"cells {path}: not readable CSV ({str(err).strip().splitlines()[0]})") from None
    columns = {c.strip().lower(): c for c in table.columns}
    name = next((columns[c] for c in CELLS_COLUMNS if c in columns), None)
    if name is None:
        raise InputDataError(
            f"cells {path}: CSV without an h3_cell or cell column (has {', '.join(table.columns)})"
        )
    # CSV rows follow the header; blank lines are skipped by the reader, so number the non-blank lines after it
    numbers = [r[0] for r in rows[1:]]
    values = [(v or "").strip() for v in table[name].to_list()]
    return values, numbers[: len(values)]


def _at_resolution(cells: pl.Series, resolution: int) -> pl.Series:
    """Each cell at ``resolution``: a finer one as its parent, a coarser one as its children."""
    frame = cells.to_frame("cell").with_columns(res=plh3.get_resolution("cell"))
    finer = frame.filter(pl.col("res") >= resolution).select(plh3.cell_to_parent("cell", resolution))
    coarser = frame.filter(pl.col("res") < resolution)
    n_children = sum(7 ** (resolution - int(r)) for r in coarser["res"])
    if n_children > MAX_DOMAIN_CELLS:
        raise InvalidParameterError(
            f"the coarser cells of the list hold about {n_children:,} cells at resolution {resolution} "
            f"(at most {MAX_DOMAIN_CELLS:,}); choose a coarser resolution"
        )
    children = coarser.select(plh3.cell_to_children("cell", resolution)).explode("cell")
    return pl.concat([finer["cell"], children["cell"]]).cast(pl.UInt64)


# ------------------------------------------------------------------------------------------------ lines to cells


@dataclass(frozen=True)
class _Runs:
    """Where paths run through cells: run i is cell ``cell[i]`` on path ``path[i]`` from ``start[i]`` to ``end[i]``
    metres along it (sorted by path, then start; consecutive runs of a path are in neighbouring cells)."""

    path: np.ndarray
    cell: np.ndarray
    start: np.ndarray
    end: np.ndarray


def _path_lengths(lat: np.ndarray, lon: np.ndarray, path: np.ndarray) -> np.ndarray:
    """Metres along its path of each vertex (vertices grouped by path, in order), along the WGS 84 geodesic
    (:data:`urbandp._geodesy.WGS84`, pyproj)."""
    seg = np.zeros(lat.size)
    if lat.size > 1:
        _, _, metres = WGS84.inv(lon[:-1], lat[:-1], lon[1:], lat[1:])
        seg[1:] = np.where(path[1:] == path[:-1], np.asarray(metres, dtype=np.float64), 0.0)
    along = pl.DataFrame({"seg": seg, "path": path}).select(pl.col("seg").cum_sum().over("path"))
    return along["seg"].to_numpy().astype(np.float64)


def _runs(lat: np.ndarray, lon: np.ndarray, path: np.ndarray, resolution: int) -> _Runs:
    """The cells that polylines pass through, as runs along each path (vertices grouped by ``path``, in order):
    sampled and joined as the module docstring says, consecutive samples in different cells bounding a run at their
    midpoint."""
    lat, lon = np.asarray(lat, dtype=np.float64), np.asarray(lon, dtype=np.float64)
    path = np.asarray(path, dtype=np.int64)
    dist = _path_lengths(lat, lon, path)
    spacing = EDGE_FRACTION * float(h3.average_hexagon_edge_length(resolution, unit="m"))
    is_last = np.r_[path[1:] != path[:-1], True]
    seg_len = np.where(is_last, 0.0, np.r_[dist[1:], 0.0] - dist)
    n = np.where(is_last, 1, np.maximum(1, np.ceil(seg_len / spacing))).astype(np.int64)
    if int(n.sum()) > MAX_LINE_SAMPLES:
        raise InvalidParameterError(
            f"the lines need {int(n.sum()):,} samples at H3 resolution {resolution} (at most "
            f"{MAX_LINE_SAMPLES:,}); choose a coarser resolution"
        )
    vertex = np.repeat(np.arange(lat.size), n)
    step = np.arange(vertex.size) - np.repeat(np.cumsum(n) - n, n)
    frac = step / n[vertex]
    nxt = np.minimum(vertex + 1, lat.size - 1)
    s_lat = lat[vertex] + frac * (lat[nxt] - lat[vertex])
    s_lon = lon[vertex] + frac * (lon[nxt] - lon[vertex])
    s_dist = dist[vertex] + frac * seg_len[vertex]
    s_path = path[vertex]
    cells = _point_cells(s_lat, s_lon, resolution)
    new = np.r_[True, (cells[1:] != cells[:-1]) | (s_path[1:] != s_path[:-1])]
    idx = np.flatnonzero(new)
    r_path, r_cell = s_path[idx], cells[idx]
    first_of_path = np.r_[True, r_path[1:] != r_path[:-1]]
    prev_d = s_dist[np.maximum(idx - 1, 0)]
    r_start = np.where(first_of_path, 0.0, (prev_d + s_dist[idx]) / 2)
    extra = _gap_runs(r_path, r_cell, r_start, first_of_path, prev_d, s_dist[idx])
    if extra is not None:
        r_path = np.r_[r_path, extra[0]]
        r_cell = np.r_[r_cell, extra[1]]
        r_start = np.r_[r_start, extra[2]]
        order = np.lexsort((r_start, r_path))
        r_path, r_cell, r_start = r_path[order], r_cell[order], r_start[order]
    path_end = np.zeros(int(path.max()) + 1 if path.size else 0)
    np.maximum.at(path_end, path, dist)
    last_of_path = np.r_[r_path[1:] != r_path[:-1], True]
    r_end = np.where(last_of_path, path_end[r_path], np.r_[r_start[1:], 0.0])
    return _Runs(path=r_path, cell=r_cell, start=r_start, end=r_end)


def _gap_runs(
    r_path: np.ndarray,
    r_cell: np.ndarray,
    r_start: np.ndarray,
    first_of_path: np.ndarray,
    prev_d: np.ndarray,
    here_d: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Runs for the cells between consecutive samples in non-neighbouring cells (``grid_path_cells``); the later
    run's start is moved so that the inserted runs share the gap evenly. ``None`` when no gap."""
    if r_cell.size < 2:
        return None
    pairs = pl.DataFrame({"a": r_cell[:-1], "b": r_cell[1:]}, schema={"a": pl.UInt64, "b": pl.UInt64})
    neighbour = pairs.select(plh3.are_neighbor_cells("a", "b").fill_null(False))["a"].to_numpy()
    gaps = np.flatnonzero(~neighbour & ~first_of_path[1:]) + 1
    if gaps.size == 0:
        return None
    ends = pl.DataFrame({"a": r_cell[gaps - 1], "b": r_cell[gaps]}, schema={"a": pl.UInt64, "b": pl.UInt64})
    walk = ends.select(plh3.grid_path_cells("a", "b").alias("p"))
    # the cells strictly between; null across a pentagon's distortion: that gap keeps the two samples' cells only
    inner = walk.select(pl.col("p").list.slice(1, pl.col("p").list.len() - 2))["p"]
    ok = inner.is_not_null()
    gaps, inner = gaps[ok.to_numpy()], inner.filter(ok)
    m = inner.list.len().to_numpy()
    width = (here_d[gaps] - prev_d[gaps]) / (m + 2)
    r_start[gaps] = prev_d[gaps] + (m + 1) * width
    g = np.repeat(np.arange(gaps.size), m)
    i = np.arange(g.size) - np.repeat(np.cumsum(m) - m, m) + 1
    cells = inner.explode().drop_nulls().to_numpy().astype(np.uint64)
    return r_path[gaps][g], cells, prev_d[gaps][g] + i * width[g]


# ------------------------------------------------------------------------------------------------------- GeoJSON


def domain_from_geojson(path: Path, resolution: int) -> PublicDomain:
    """A domain from a GeoJSON file (RFC 7946, longitude/latitude WGS84): the cells its geometries cover.

    LineString and MultiLineString: every cell the line passes through (see the module docstring). Polygon and
    MultiPolygon: the cells whose centre is inside (H3 ``polygon_to_cells``) and the cells the rings pass through.
    Point and MultiPoint: their cells. Feature, FeatureCollection and GeometryCollection are walked; features with a
    null geometry are skipped.
    """
    path = Path(path)
    what = f"GeoJSON {path}"
    raw, lines, points, polygons = read_geojson(path)
    for polygon in polygons:  # before any cell is made, from the rings' lines or the fill
        _check_polygon_cells(polygon, resolution, what)
    found: list[np.ndarray] = []
    km = pl.DataFrame(schema={"cell": pl.UInt64, "route_km": pl.Float64})
    if lines:
        runs = line_runs(lines, resolution)
        found.append(np.unique(runs.cell))
        km = pl.DataFrame({"cell": runs.cell, "route_km": (runs.end - runs.start) / 1000.0})
        km = km.group_by("cell", maintain_order=True).agg(pl.col("route_km").sum()).cast({"cell": pl.UInt64})
    if points:
        pts = np.vstack(points)
        found.append(_point_cells(pts[:, 1], pts[:, 0], resolution))
    found.extend(np.array(h3_int.geo_to_cells(polygon, resolution), dtype=np.uint64) for polygon in polygons)
    if not found:
        raise InputDataError(f"{what}: no geometry (Point, LineString, Polygon or their Multi- forms)")
    domain = _file_domain("geojson", path, raw, resolution, np.unique(np.concatenate(found)), what)
    return replace(domain, route_km=km)


def _check_polygon_cells(polygon: dict[str, Any], resolution: int, what: str) -> None:
    """Refuse a polygon whose cells at ``resolution`` would exceed :data:`MAX_DOMAIN_CELLS`, before H3 fills it
    (a world-sized polygon would take minutes and gigabytes): its outer rings' area over H3's mean cell area.

    A ring spanning more than 180 degrees of longitude is counted as the whole band of latitudes it spans (H3
    then reads it as crossing the antimeridian), so the estimate never falls short of what the fill would make.
    """
    rings = polygon["coordinates"] if polygon["type"] == "MultiPolygon" else [polygon["coordinates"]]
    area_m2 = 0.0
    for outer in (np.array([p[:2] for p in shape[0]], dtype=np.float64) for shape in rings if shape):
        lon, lat = outer[:, 0], outer[:, 1]
        if float(lon.max() - lon.min()) > 180:
            r = 6_371_007.2  # the authalic radius: a band of latitudes on a sphere of the ellipsoid's area
            lo, hi = np.radians(float(lat.min())), np.radians(float(lat.max()))
            area_m2 += 2 * np.pi * r * r * abs(np.sin(hi) - np.sin(lo))
        else:
            ring_area, _ = WGS84.polygon_area_perimeter(lon, lat)
            area_m2 += abs(ring_area)
    cells = area_m2 / 1e6 / float(h3.average_hexagon_area(resolution, unit="km^2"))
    if cells > MAX_DOMAIN_CELLS:
        raise InvalidParameterError(
            f"{what}: a {polygon['type']} covers about {area_m2 / 1e6:,.0f} km2, about {cells:,.0f} H3 cells at "
            f"resolution {resolution}, more than {MAX_DOMAIN_CELLS:,}; give the routes or corridors of the "
            "release, not a region (or choose a coarser resolution)",
            parameters="resolution",
        )


def _point_cells(lat: np.ndarray, lon: np.ndarray, resolution: int) -> np.ndarray:
    """The H3 cell (UInt64) of each point at ``resolution``."""
    frame = pl.DataFrame({"lat": lat, "lon": lon}, schema={"lat": pl.Float64, "lon": pl.Float64})
    return frame.select(plh3.latlng_to_cell("lat", "lon", resolution))["lat"].to_numpy().astype(np.uint64)


def line_runs(lines: list[np.ndarray], resolution: int) -> _Runs:
    """Where a set of [lon, lat] polylines run through cells (:func:`_runs`, line i is path i)."""
    coords = np.vstack(lines)
    path = np.repeat(np.arange(len(lines)), [len(a) for a in lines])
    return _runs(coords[:, 1], coords[:, 0], path, resolution)


# ---------------------------------------------------------------------------------------------------------- GTFS


def domain_from_gtfs(
    path: Path,
    resolution: int,
    slot_minutes: int,
    hours: tuple[int, int],
    days: Sequence[dt.date],
) -> PublicDomain:
    """A domain and a schedule prior from a GTFS feed (a ``.zip`` or a folder); public data only, no charge.

    Cells: every cell the feed's shapes (``shapes.txt``) pass through; a trip without a shape adds the straight
    lines between its consecutive stops. HATs: the (cell, slot) pairs in the window ``hours`` where a trip is
    scheduled on one of the public ``days``. A trip runs on the service days of its ``service_id``
    (``calendar.txt`` weekdays within start..end, then ``calendar_dates.txt``: 1 adds a day, 2 removes it); its
    times count from the service day's midnight and may pass 24:00:00, which falls on the next calendar day
    (daylight-saving days are not corrected). ``frequencies.txt`` trips run once per headway from each start time.

    Where a trip is at each moment: linear in time between consecutive timed stops (a stop's arrival to departure
    is spent at the stop; stops without times are skipped) along its shape, the stops placed by
    ``shape_dist_traveled`` where the trip and its shape both give it, else projected onto the shape in order
    (:data:`PROJECTION_TOLERANCE_M`), else along straight lines between the stops. The trip is in a cell during a
    slot when any moment of its time in the cell falls in the slot (cells as for lines, so none is skipped).

    The planner's priors ``scheduled_trips`` (a trip: a trip id, or one departure of a frequency trip),
    ``scheduled_vehicles`` and ``hats_per_vehicle_day``: see :class:`PublicDomain` and :func:`_block_priors`.
    """
    spec = SlotSpec(slot_minutes, *hours)  # the spec's own checks ran where it was read
    public_days = sorted(set(days))
    path = Path(path)
    what = f"gtfs {path.name}"
    files = read_feed(path)
    feed = read_tables(files)
    plan = _trip_paths(feed, what)
    runs = _runs(plan.lat, plan.lon, plan.path, resolution)
    occupancy = _occupancy(plan, runs, spec.slot_minutes * 60)
    trips = _scheduled_trips(occupancy, plan.trips, feed, spec, public_days, what)
    vehicles, hats_per_block = _block_priors(occupancy, plan, feed, spec, public_days)
    return PublicDomain(
        kind="gtfs",
        source=path.name,
        source_sha256=str(files.sha256),
        resolution=resolution,
        cells=_cells_series(runs.cell, what),
        hats=trips.select("cell", "slot"),
        scheduled_trips=trips,
        hats_per_vehicle_day=hats_per_block,
        scheduled_vehicles=vehicles,
    )


@dataclass(frozen=True)
class _TripPaths:
    """Every path (shapes, then stop-to-stop lines of shapeless trips) as vertices, and every scheduled trip (a
    trip id, or one departure of a frequency trip) as anchors: metres along its path and times, in order."""

    lat: np.ndarray
    lon: np.ndarray
    path: np.ndarray  # path index of each vertex
    trip_path: np.ndarray  # per trip
    trips: pl.DataFrame  # trip (Int64 index), service_id, block_id (null where the feed gives none)
    anchor_trip: np.ndarray  # per anchor, sorted by trip then order
    anchor_d: np.ndarray
    anchor_arr: np.ndarray
    anchor_dep: np.ndarray


def _stop_times_by_pattern(feed: FeedTables, what: str, shape_ids: list[str]) -> pl.DataFrame:
    """The timed stop times of the trips with two or more, each with its stop's position, its trip's shape index
    (null without one), its trip's stop pattern (trips alike in shape, stops and shape_dist_traveled share one),
    a row index and its trip's stop count. No such trip, or a stop without coordinates, is an InputDataError."""
    st = (
        feed.stop_times.filter(pl.col("arr").is_not_null())
        .join(feed.trips, on="trip_id", how="inner")
        .sort("trip_id", "seq")
    )
    shape = pl.col("shape_id").replace_strict(
        shape_ids, range(len(shape_ids)), default=None, return_dtype=pl.Int64
    )
    st = st.with_columns(shape.alias("shape"))  # null without a shape (or without shapes.txt)
    st = st.filter(pl.len().over("trip_id") >= 2)
    if st.height == 0:
        raise InputDataError(f"{what}: no trip with two timed stops in stop_times.txt")
    missing = st.join(feed.stops, on="stop_id", how="anti")
    if missing.height:
        raise InputDataError(
            f"{what}: stop_times.txt names stop {missing['stop_id'][0]!r} without coordinates in stops.txt"
        )
    st = st.join(feed.stops, on="stop_id", how="left")
    patterns = st.group_by("trip_id", maintain_order=True).agg(
        pl.col("shape").first(),
        pl.col("stop_id").str.join("\x1f").alias("stops"),
        pl.col("sdt").cast(pl.String).fill_null("").str.join("\x1f").alias("sdts"),
    )
    patterns = patterns.with_columns(
        pattern=pl.struct("shape", "stops", "sdts").rank("dense").cast(pl.Int64) - 1
    )
    st = st.join(patterns.select("trip_id", "pattern"), on="trip_id").sort("trip_id", "seq")
    return st.with_row_index("row").with_columns(n=pl.len().over("trip_id"))


@dataclass(frozen=True)
class _PatternPaths:
    """Where each stop pattern runs: its path index, the metres along it of each of its stops (never
    decreasing), and the vertices of the new paths (one per shapeless pattern, numbered after the shapes)."""

    path: np.ndarray
    d: list[np.ndarray]
    extra_lat: list[np.ndarray]
    extra_lon: list[np.ndarray]


def _pattern_paths(
    st: pl.DataFrame,
    vertices: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    n_shapes: int,
) -> _PatternPaths:
    """Place the stops of each pattern (its first trip's) on its path: a shapeless pattern gets the stop-to-stop
    line as a new path; on a shape, by shape_dist_traveled where both give it, else by projection."""
    first = st.unique("pattern", keep="first", maintain_order=True).sort("pattern")  # st is in row order
    all_lat, all_lon, all_sdt = (st[c].fill_null(np.nan).to_numpy() for c in ("lat", "lon", "sdt"))
    shape_lat, shape_lon, shape_path, shape_cum, shape_sdt = vertices
    bounds = np.searchsorted(shape_path, np.arange(n_shapes + 1))
    extra_lat: list[np.ndarray] = []
    extra_lon: list[np.ndarray] = []
    pattern_path = np.zeros(first.height, dtype=np.int64)
    pattern_d: list[np.ndarray] = []
    next_path = n_shapes
    for pattern, row, n, shape in first.select("pattern", "row", "n", "shape").iter_rows():
        lat, lon, sdt = all_lat[row : row + n], all_lon[row : row + n], all_sdt[row : row + n]
        if shape is None:
            pattern_path[pattern] = next_path
            next_path += 1
            extra_lat.append(lat)
            extra_lon.append(lon)
            d = _path_lengths(lat, lon, np.zeros(lat.size, dtype=np.int64))
        else:
            a, b = bounds[shape], bounds[shape + 1]
            pattern_path[pattern] = shape
            if not np.isnan(sdt).any() and not np.isnan(shape_sdt[a:b]).any():
                d = np.interp(sdt, shape_sdt[a:b], shape_cum[a:b])
            else:
                d = _project(lat, lon, shape_lat[a:b], shape_lon[a:b], shape_cum[a:b])
        pattern_d.append(np.maximum.accumulate(d))
    return _PatternPaths(path=pattern_path, d=pattern_d, extra_lat=extra_lat, extra_lon=extra_lon)


def _trip_paths(feed: FeedTables, what: str) -> _TripPaths:
    """Paths and anchors of the feed's trips (see :func:`domain_from_gtfs` for how stops are placed)."""
    shape_ids = [] if feed.shapes is None else feed.shapes["shape_id"].unique(maintain_order=True).to_list()
    st = _stop_times_by_pattern(feed, what, shape_ids)
    vertices = _shape_vertices(feed.shapes)
    paths = _pattern_paths(st, vertices, len(shape_ids))
    # each trip's pattern, in st's order
    patterns = st.unique("trip_id", keep="first", maintain_order=True)["pattern"]
    st = st.drop("row", "n").with_columns(d=pl.Series(np.concatenate([paths.d[p] for p in patterns])))
    st = _instances(st, feed.frequencies)
    per_trip = st.unique("trip", keep="first").sort("trip")
    arr = st["arr"].to_numpy().astype(np.float64)
    dep = np.maximum(st["dep"].to_numpy().astype(np.float64), arr)
    trip = st["trip"].to_numpy()
    arr, dep = _monotone_times(trip, arr, dep)
    n_shapes = len(shape_ids)
    extra_path = np.repeat(
        np.arange(n_shapes, n_shapes + len(paths.extra_lat)), [a.size for a in paths.extra_lat]
    )
    shape_lat, shape_lon, shape_path, _, _ = vertices
    return _TripPaths(
        lat=np.concatenate([shape_lat, *paths.extra_lat]),
        lon=np.concatenate([shape_lon, *paths.extra_lon]),
        path=np.concatenate([shape_path, extra_path]).astype(np.int64),
        trip_path=paths.path[per_trip["pattern"].to_numpy()],
        trips=per_trip.select("trip", "service_id", "block_id"),
        anchor_trip=trip,
        anchor_d=st["d"].to_numpy(),
        anchor_arr=arr,
        anchor_dep=dep,
    )


def _shape_vertices(
    shapes: pl.DataFrame | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """lat, lon, path index, metres along the shape and shape_dist_traveled (NaN where absent) of every vertex."""
    if shapes is None or shapes.height == 0:
        empty = np.zeros(0)
        return empty, empty, np.zeros(0, dtype=np.int64), empty, empty
    # shapes are sorted by shape_id, and the ids were numbered in that order (unique(maintain_order=True))
    path = shapes.select(pl.col("shape_id").rank("dense").cast(pl.Int64) - 1)["shape_id"].to_numpy()
    lat, lon = shapes["lat"].to_numpy(), shapes["lon"].to_numpy()
    sdt = shapes["sdt"].fill_null(np.nan).to_numpy().astype(np.float64)
    return lat, lon, path, _path_lengths(lat, lon, path), sdt


def _project(
    lat: np.ndarray, lon: np.ndarray, s_lat: np.ndarray, s_lon: np.ndarray, s_cum: np.ndarray
) -> np.ndarray:
    """Metres along a shape of each stop, in order: the nearest point at or after the previous stop's, the first
    pass within :data:`PROJECTION_TOLERANCE_M` of the nearest winning (a transverse Mercator plane centred on the shape, :mod:`urbandp._geodesy`)."""
    if s_lat.size < 2:
        return np.zeros(lat.size)
    plane = PlanarProjection.transverse_mercator(float(np.mean(s_lat)), float(np.mean(s_lon)))
    shape_xy, stop_xy = plane.to_metres(s_lat, s_lon), plane.to_metres(lat, lon)
    sx, sy = shape_xy[:, 0], shape_xy[:, 1]
    ax, ay, dx, dy = sx[:-1], sy[:-1], np.diff(sx), np.diff(sy)
    length2 = np.maximum(dx * dx + dy * dy, 1e-12)
    seg = np.diff(s_cum)
    out = np.zeros(lat.size)
    previous = 0.0
    for i, (px, py) in enumerate(zip(stop_xy[:, 0], stop_xy[:, 1], strict=True)):
        t = np.clip(((px - ax) * dx + (py - ay) * dy) / length2, 0.0, 1.0)
        along = s_cum[:-1] + t * seg
        gap = np.where(along >= previous - 1e-9, np.hypot(ax + t * dx - px, ay + t * dy - py), np.inf)
        if not np.isfinite(gap).any():
            out[i] = previous
            continue
        near = gap <= gap.min() + PROJECTION_TOLERANCE_M
        start = int(np.argmax(near))
        stop = start + (int(np.argmin(near[start:])) if not near[start:].all() else near.size - start)
        best = start + int(np.argmin(gap[start:stop]))
        previous = out[i] = max(previous, float(along[best]))
    return out


def _instances(st: pl.DataFrame, frequencies: pl.DataFrame | None) -> pl.DataFrame:
    """Anchors per scheduled trip: one per trip id, or one per departure of a ``frequencies.txt`` trip (its stop
    times shifted so its first departure is the start time plus whole headways, while before the end time)."""
    if frequencies is None or frequencies.height == 0:
        return st.with_columns(trip=pl.col("trip_id").rank("dense").cast(pl.Int64) - 1)
    first_dep = st.group_by("trip_id").agg(pl.col("dep").first().alias("first_dep"))
    departures = (
        frequencies.with_columns(
            n=((pl.col("end") - pl.col("start") + pl.col("headway") - 1) // pl.col("headway")).clip(0)
        )
        .filter(pl.col("n") > 0)
        .with_columns(k=pl.int_ranges(0, pl.col("n")))
        .explode("k")
        .join(first_dep, on="trip_id")
        .select(
            "trip_id",
            (pl.col("start") + pl.col("k") * pl.col("headway") - pl.col("first_dep")).alias("shift"),
        )
    )
    timed = st.join(frequencies.select("trip_id").unique(), on="trip_id", how="anti").with_columns(
        shift=pl.lit(0, pl.Int64)
    )
    shifted = st.join(departures, on="trip_id", how="inner")
    out = pl.concat([timed, shifted]).with_columns(
        pl.col("arr") + pl.col("shift"), pl.col("dep") + pl.col("shift")
    )
    return out.with_columns(trip=pl.struct("trip_id", "shift").rank("dense").cast(pl.Int64) - 1).sort(
        "trip", "seq"
    )


def _monotone_times(trip: np.ndarray, arr: np.ndarray, dep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Times that never go back within a trip, arrival <= departure <= next arrival (a feed's error would
    otherwise run a vehicle backwards): the running maximum of the interleaved times, trip by trip."""
    if trip.size == 0:
        return arr, dep
    both = np.empty(2 * trip.size)
    both[0::2], both[1::2] = arr, dep
    big = float(both.max()) + 1.0
    offset = np.repeat(trip.astype(np.float64) * big, 2)
    both = np.maximum.accumulate(both + offset) - offset
    return both[0::2], both[1::2]


def _occupancy(plan: _TripPaths, runs: _Runs, slot_seconds: int) -> pl.DataFrame:
    """``(trip, cell, slot_abs)``, unique: the trip is in the cell at some moment of slot ``slot_abs`` (slots
    counted from the service day's midnight, so a trip past 24:00 has slot_abs >= slots per day).

    Vectorised over all trips: each trip's stretch [first stop, last stop] is cut by the runs of its path, and the
    time it enters and leaves each run read off its anchors (arrival when entering at a stop, departure when
    leaving one), both by one ``searchsorted`` on keys ``trip x W + metres`` (W longer than any path).
    """
    n_trips = plan.trip_path.size
    starts = np.r_[0, np.flatnonzero(np.diff(plan.anchor_trip)) + 1]
    ends = np.r_[starts[1:], plan.anchor_trip.size] - 1
    first_d, last_d = plan.anchor_d[starts], plan.anchor_d[ends]
    width = float(max(runs.end.max(initial=0.0), plan.anchor_d.max(initial=0.0))) + 1.0
    run_key = runs.path * width + runs.start
    trips = np.arange(n_trips)
    lo = np.searchsorted(run_key, plan.trip_path * width + first_d, side="right") - 1
    hi = np.maximum(np.searchsorted(run_key, plan.trip_path * width + last_d, side="right") - 1, lo)
    count = hi - lo + 1
    e_trip = np.repeat(trips, count)
    e_run = np.repeat(lo, count) + np.arange(e_trip.size) - np.repeat(np.cumsum(count) - count, count)
    d_in = np.maximum(runs.start[e_run], first_d[e_trip])
    d_out = np.minimum(runs.end[e_run], last_d[e_trip])
    xs = np.repeat(plan.anchor_trip * width + plan.anchor_d, 2)
    ts = np.empty(xs.size)
    ts[0::2], ts[1::2] = plan.anchor_arr, plan.anchor_dep
    t_in = _time_at(xs, ts, e_trip * width + d_in, earliest=True)
    t_out = _time_at(xs, ts, e_trip * width + np.maximum(d_out, d_in), earliest=False)
    s_in = np.floor(t_in / slot_seconds).astype(np.int64)
    s_out = np.maximum(np.ceil(t_out / slot_seconds).astype(np.int64) - 1, s_in)
    n_slots = s_out - s_in + 1
    f_row = np.repeat(np.arange(e_trip.size), n_slots)
    slot_abs = (
        np.repeat(s_in, n_slots) + np.arange(f_row.size) - np.repeat(np.cumsum(n_slots) - n_slots, n_slots)
    )
    return pl.DataFrame(
        {"trip": e_trip[f_row], "cell": runs.cell[e_run][f_row], "slot_abs": slot_abs},
        schema={"trip": pl.Int64, "cell": pl.UInt64, "slot_abs": pl.Int64},
    ).unique()


def _time_at(xs: np.ndarray, ts: np.ndarray, q: np.ndarray, *, earliest: bool) -> np.ndarray:
    """The piecewise-linear time at keys ``q`` through breakpoints ``(xs, ts)`` (xs non-decreasing; a repeated x is
    a stop's arrival then departure): at a breakpoint, its first time if ``earliest`` else its last."""
    if earliest:
        k = np.minimum(np.searchsorted(xs, q, side="left"), xs.size - 1)
        j = np.maximum(k - 1, 0)
    else:
        j = np.maximum(np.searchsorted(xs, q, side="right") - 1, 0)
        k = np.minimum(j + 1, xs.size - 1)
    exact = xs[k] == q if earliest else xs[j] == q
    span = xs[k] - xs[j]
    frac = np.where(span > 0, (q - xs[j]) / np.where(span > 0, span, 1.0), 0.0)
    value = ts[j] + np.clip(frac, 0.0, 1.0) * (ts[k] - ts[j])
    return np.asarray(np.where(exact, ts[k] if earliest else ts[j], value), dtype=np.float64)


def _service_days(feed: FeedTables, dates: list[dt.date]) -> pl.DataFrame:
    """``(service_id, date)`` for the dates a service runs (calendar.txt weekdays in range, then the exceptions of
    calendar_dates.txt: 1 adds the date, 2 removes it)."""
    candidates = pl.DataFrame({"date": dates}, schema={"date": pl.Date})
    base = pl.DataFrame(schema={"service_id": pl.String, "date": pl.Date})
    if feed.calendar is not None:
        base = (
            feed.calendar.join(candidates, how="cross")
            .filter(
                pl.col("date").is_between(pl.col("start"), pl.col("end"))
                & pl.col("week").list.get(pl.col("date").dt.weekday().cast(pl.Int64) - 1)
            )
            .select("service_id", "date")
        )
    if feed.calendar_dates is not None:
        exceptions = feed.calendar_dates.join(candidates, on="date", how="semi")
        added = exceptions.filter(pl.col("exception_type")).select("service_id", "date")
        removed = exceptions.filter(~pl.col("exception_type")).select("service_id", "date")
        base = pl.concat([base, added]).join(removed, on=["service_id", "date"], how="anti")
    return base.unique()


def _in_window(occupancy: pl.DataFrame, spec: SlotSpec) -> pl.DataFrame:
    """The occupancy in the window's slots, each row's ``slot_abs`` as its ``slot`` of the day and its ``offset``,
    the days after its service day."""
    per_day = 1440 // spec.slot_minutes
    window = pl.Series(spec.slots, dtype=pl.Int64).implode()
    return occupancy.with_columns(
        offset=pl.col("slot_abs") // per_day, slot=pl.col("slot_abs") % per_day
    ).filter(pl.col("slot").is_in(window))


def _on_public_days(frame: pl.DataFrame, feed: FeedTables, days: list[dt.date]) -> pl.DataFrame:
    """``frame`` (with ``service_id`` and ``offset``) once per date its service runs, with the calendar ``day`` it
    falls on (the service date plus the offset), kept where that is a public day."""
    max_offset = int(frame.select(pl.col("offset").max()).item() or 0) if frame.height else 0
    dates = sorted({d - dt.timedelta(days=k) for d in days for k in range(max_offset + 1)})
    public = pl.Series(days, dtype=pl.Date).implode()
    return (
        frame.join(_service_days(feed, dates), on="service_id")
        .with_columns(day=pl.col("date") + pl.duration(days=pl.col("offset")))
        .filter(pl.col("day").is_in(public))
    )


def _scheduled_trips(
    occupancy: pl.DataFrame,
    trips: pl.DataFrame,
    feed: FeedTables,
    spec: SlotSpec,
    days: list[dt.date],
    what: str,
) -> pl.DataFrame:
    """``(cell, slot, trips_per_day)`` for the HATs with service: distinct trips per HAT and public day, averaged."""
    counts = (
        _in_window(occupancy, spec)
        .join(trips, on="trip")
        .group_by("service_id", "offset", "cell", "slot")
        .agg(pl.col("trip").n_unique().alias("n"))
    )
    out = (
        _on_public_days(counts, feed, days)
        .group_by("cell", "slot")
        .agg((pl.col("n").sum() / len(days)).alias("trips_per_day"))
    )
    if out.height == 0:
        raise InputDataError(
            f"{what}: no trip is scheduled in the window {spec.label(spec.slots[0])[:5]}-"
            f"{spec.label(spec.slots[-1])[6:]} on the {len(days)} public day(s)"
        )
    return _per_hat(out, "trips_per_day")


def _per_hat(frame: pl.DataFrame, value: str) -> pl.DataFrame:
    """``(cell UInt64, slot Int16, value Float64)`` of ``frame``, sorted by HAT."""
    return frame.select(
        pl.col("cell").cast(pl.UInt64), pl.col("slot").cast(pl.Int16), pl.col(value).cast(pl.Float64)
    ).sort("cell", "slot")


def _block_priors(
    occupancy: pl.DataFrame,
    plan: _TripPaths,
    feed: FeedTables,
    spec: SlotSpec,
    days: list[dt.date],
) -> tuple[pl.DataFrame | None, float | None]:
    """Per-vehicle priors from ``block_id``: ``(cell, slot, vehicles_per_day)`` and the mean HATs per block-day.

    A block-day is a block on a calendar day (a block past midnight is, like a vehicle in the records, on the next
    calendar day from then on). ``vehicles_per_day``: distinct block-days per HAT of the window, summed over the
    public days and divided by their number. HATs per block-day: the distinct window HATs of each block-day on a
    public day, averaged over the block-days with at least one HAT in the window (a vehicle-day out of the window
    leaves no record in a release). Trips without a ``block_id`` are left out; ``(None, None)`` when no trip on the
    public days has one.
    """
    blocked = plan.trips.filter(pl.col("block_id").is_not_null())
    if blocked.height == 0:
        return None, None
    dated = _in_window(occupancy.join(blocked, on="trip"), spec)
    hats = _on_public_days(dated, feed, days).select("block_id", "day", "cell", "slot").unique()
    if hats.height == 0:
        return None, None
    per_day = hats.group_by("cell", "slot").agg((pl.len() / len(days)).alias("vehicles_per_day"))
    vehicles = _per_hat(per_day, "vehicles_per_day")
    per_block = hats.group_by("block_id", "day").len()
    return vehicles, float(per_block["len"].mean())  # type: ignore[arg-type]
