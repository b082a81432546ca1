"""The release's public domain of HATs, from whichever source the spec names.

A public domain is chosen without looking at the records: the city's extent (``domain_bbox``), or the agency's
published network, a GTFS feed (``domain_gtfs``: the cells its shapes pass through x the slots with scheduled
service on the public days), a GeoJSON of routes or corridors (``domain_geojson``) or a list of H3 cells
(``domain_cells``); :mod:`urbandp.fleet._domain_files` reads the files. Because the domain is public:

* records outside it are dropped before truncation (a per-record filter on public keys), so a vehicle-day's K
  contributions go to domain HATs only; the records dropped are counted for the data owner, never published;
* every domain HAT gets a noisy count, zeros included, and needs no delta (Desfontaines et al., "Differentially
  private partition selection", 2022, section 2: with public partitions no selection is needed);
* with a route domain every domain HAT is released, and whether a mean is shown is decided after noise
  (:mod:`urbandp.fleet._measure`); an extent, mostly empty, keeps its false-positive threshold on the noisy count.

The loaded domain is cached per (source, file state, resolution, slots, days): ``plan`` and ``release`` of the same
spec read a feed once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import polars_h3 as plh3

from urbandp.errors import InputError
from urbandp.fleet._options import HatReleaseConfig

if TYPE_CHECKING:  # the loaders (GeoJSON, GTFS: 15 ms of start-up) are imported when a route domain is read
    from urbandp.fleet._domain_files import PublicDomain


def load_public_domain(cfg: HatReleaseConfig, days: Sequence[dt.date] | None = None) -> PublicDomain | None:
    """The spec's public domain at its resolution, or None without one.

    ``days``: the public day set (a GTFS feed's service is read on these days; needed for ``domain_gtfs``).
    A file that cannot be read or holds no cell raises :class:`InputError` (one line, exit 2).
    """
    if cfg.domain_bbox is not None:
        return _bbox_domain(cfg.domain_bbox, cfg.resolution)
    path = cfg.domain_gtfs or cfg.domain_geojson or cfg.domain_cells
    if path is None:
        return None
    path = Path(path)
    kind = "gtfs" if cfg.domain_gtfs else "geojson" if cfg.domain_geojson else "cells"
    if not path.exists():
        name = SOURCE_PARAMETER[kind]
        raise InputError(f"{name} {path}: no such file or folder", parameters=name)
    if kind == "gtfs" and not days:
        raise InputError(
            "domain_gtfs needs the public days (start/end or dates) to read the schedule",
            parameters=("domain_gtfs", "start", "end", "dates"),
        )
    schedule = (cfg.slot_minutes, tuple(cfg.hours), tuple(days or ())) if kind == "gtfs" else None
    return _route_domain(kind, path, _file_state(path), cfg.resolution, cfg.domain_ring, schedule)


def domain_grid(domain: PublicDomain, slots: Sequence[int]) -> pl.DataFrame:
    """The domain's HATs (``cell`` UInt64, ``slot`` Int16) in the release's slots; refuses an empty domain."""
    grid = domain.grid(slots).select(pl.col("cell").cast(pl.UInt64), pl.col("slot").cast(pl.Int16))
    if grid.height == 0:
        raise InputError(
            f"the public domain ({domain.kind} {domain.source}) holds no HAT at resolution {domain.resolution} "
            "in the release's hours"
        )
    return grid


SOURCE_PARAMETER = {"geojson": "domain_geojson", "gtfs": "domain_gtfs", "cells": "domain_cells"}
"""The spec's parameter that names a route domain's file, by the domain's kind."""


def restrict_to_domain(
    contributions: pl.DataFrame, grid: pl.DataFrame, domain: PublicDomain | None = None
) -> tuple[pl.DataFrame, int]:
    """Contributions on domain HATs only, and the number of records dropped (for the owner; never published).

    With the ``domain`` of a file (GeoJSON, GTFS, cells), a domain whose latitude and longitude are swapped is
    refused (:func:`check_not_swapped`), as every one of its HATs would be released, empty, far from the records.
    """
    keys = grid.select("cell", "slot")
    cast = contributions.with_columns(pl.col("cell").cast(pl.UInt64), pl.col("slot").cast(pl.Int16))
    kept = cast.join(keys, on=["cell", "slot"], how="semi")
    dropped = (
        int(cast["n_records"].sum()) - int(kept["n_records"].sum()) if "n_records" in cast.columns else 0
    )
    if domain is not None and domain.kind in SOURCE_PARAMETER and dropped:
        check_not_swapped(cast, dropped, domain)
    return kept, dropped


def check_not_swapped(contributions: pl.DataFrame, dropped: int, domain: PublicDomain) -> None:
    """Refuse a route domain whose latitude and longitude are swapped: most records of the window fall outside it,
    and most would fall inside it were each record's latitude and longitude exchanged (the test
    ``--domain-bbox`` makes with its box, :func:`urbandp.fleet._pipeline.swapped_bbox_hint`, here for a file).

    A record is where its H3 cell's centre is. The answer reaches the data owner only (an error, exit 2): nothing
    is released.
    """
    total = int(contributions["n_records"].sum())
    if 2 * dropped <= total:
        return
    per_cell = contributions.group_by("cell").agg(pl.col("n_records").sum())
    centres = per_cell.select(
        plh3.cell_to_lat(pl.col("cell")).alias("lat"),
        plh3.cell_to_lng(pl.col("cell")).alias("lon"),
        "n_records",
    ).filter(pl.col("lon").abs() <= 90)  # swapped, a longitude beyond 90 degrees is no latitude
    if centres.height == 0:
        return
    # a cell's centre is up to a cell from the record: swapped, it lands beside the domain's cell (a degree of
    # longitude shrinks with the latitude), so a swapped record counts when its cell or a neighbour is in the domain
    cell = plh3.latlng_to_cell(pl.col("lon"), pl.col("lat"), domain.resolution).alias("cell")
    swapped = _disk(centres.with_row_index("record").select("record", "n_records", cell), 1)
    inside = swapped.join(pl.DataFrame({"cell": domain.cells.cast(pl.UInt64)}), on="cell", how="semi").unique(
        "record"
    )
    if 2 * int(inside["n_records"].sum()) <= total:
        return
    name = SOURCE_PARAMETER[domain.kind]
    raise InputError(
        f"{name} {domain.source}: most records of the window lie outside the public domain, and with latitude "
        "and longitude swapped it would hold most of them; a GeoJSON position is [longitude, latitude] (RFC "
        "7946), a GTFS stop or shape has stop_lat/stop_lon: check the file",
        parameters=name,
    )


def describe(domain: PublicDomain, grid: pl.DataFrame) -> dict[str, object]:
    """privacy.json's ``domain``: what the public domain is (public: read from the public file only)."""
    return {
        "kind": domain.kind,
        "source": domain.source,
        "source_sha256": domain.source_sha256 or None,
        "resolution": domain.resolution,
        "cells": int(domain.cells.len()),
        "hats": int(grid.height),
        "every_hat_released": domain.kind != "bbox",
        "scheduled_service": domain.scheduled_trips is not None,
    }


def widened(domain: PublicDomain, ring: int) -> PublicDomain:
    """The domain with every cell within ``ring`` H3 steps of it (``grid_disk``), in the same slots.

    A route's own cells miss the records that GPS error or the route's edge put in the neighbouring cell; a ring
    of 1 takes them in. Scheduled trips stay on the route's own cells (the planner's prior reads them there).
    """
    if ring == 0:
        return domain
    cells = _disk(pl.DataFrame({"cell": domain.cells.cast(pl.UInt64)}), ring)["cell"].sort()
    hats = (
        None if domain.hats is None else _disk(domain.hats.select("cell", "slot"), ring).sort("cell", "slot")
    )
    return replace(domain, cells=cells, hats=hats)


def _disk(frame: pl.DataFrame, ring: int) -> pl.DataFrame:
    """``frame`` with each row's ``cell`` replaced by every cell within ``ring`` H3 steps of it (``grid_disk``)."""
    disk = plh3.grid_disk(pl.col("cell"), ring).alias("cell")
    return frame.with_columns(disk).explode("cell").with_columns(pl.col("cell").cast(pl.UInt64)).unique()


def _file_state(path: Path) -> tuple[float, int]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file())
        return (max((p.stat().st_mtime for p in files), default=0.0), sum(p.stat().st_size for p in files))
    st = path.stat()
    return (st.st_mtime, st.st_size)


@lru_cache(maxsize=8)
def _bbox_domain(bbox: tuple[float, float, float, float], resolution: int) -> PublicDomain:
    from urbandp.fleet._domain_files import PublicDomain
    from urbandp.fleet._measure_selection import domain_cells

    cells = domain_cells(bbox, resolution).cast(pl.UInt64)
    if cells.len() == 0:
        raise InputError("domain_bbox holds no H3 cell centroid at this resolution")
    return PublicDomain(
        kind="bbox",
        source=",".join(f"{v:g}" for v in bbox),
        source_sha256="",
        resolution=resolution,
        cells=cells,
    )


@lru_cache(maxsize=8)
def _route_domain(
    kind: str,
    path: Path,
    _stamp: tuple[float, int],
    resolution: int,
    ring: int,
    schedule: tuple[int, tuple[int, int], tuple[dt.date, ...]] | None,
) -> PublicDomain:
    """A domain read from a file (cached per file state), widened by ``ring``; ``schedule`` (slot minutes, hours,
    public days) for a GTFS feed."""
    from urbandp.fleet._domain_files import domain_from_cells, domain_from_geojson, domain_from_gtfs

    if kind == "cells":
        return domain_from_cells(path, resolution)
    if kind == "geojson":
        return widened(domain_from_geojson(path, resolution), ring)
    assert schedule is not None
    return widened(domain_from_gtfs(path, resolution, *schedule), ring)


def domain_cell_strings(cfg: HatReleaseConfig) -> list[str] | None:
    """The public extent's H3 cells as strings (the map outlines the domain), or None without an extent."""
    if cfg.domain_bbox is None:
        return None
    from urbandp._grid.h3cells import cell_to_string
    from urbandp.fleet._measure_selection import domain_cells

    cells = domain_cells(cfg.domain_bbox, cfg.resolution)
    return pl.DataFrame({"c": cells}).select(cell_to_string(pl.col("c")))["c"].to_list()
