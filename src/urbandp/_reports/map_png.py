"""A PNG per time slot of a HAT release, for reports (matplotlib, no basemap: tiles need the network).

The same encoding as the web map (:mod:`urbandp._reports.map`): viridis on the fixed range [0, U]; hatched where the
95% interval is wider than the release's usefulness target (U/2 without one); dashed and uncoloured where the count
was released but the mean withheld or clamped; light grey where the cell was released in another slot only. The
header's privacy statement is the figure's title (red for a NOT-DP release), so a PNG never travels without it.

The route context the web map draws comes too, in place of the basemap: a GTFS feed's shapes (``gtfs``) and the
lines and outlines of GeoJSON context files (``context``), in light grey under the hexagons, over the whole frame.
The figure is drawn in kilometres on the release's plane (:func:`urbandp._geodesy.box_projection`), so distances
and shapes are true in every direction (not stretched east-west as a longitude/latitude plot is).
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from urbandp._geodesy import PlanarProjection, box_projection
from urbandp._records.geojson import geojson_parts
from urbandp._reports.map import (
    CLAMPED,
    OFF,
    VALUE,
    WITHHELD,
    LatLon,
    MapHeader,
    _cell_geometry,
    _check_frame,
    gtfs_overlay,
    read_context,
)

NOT_DP_RED = "#c62828"
ROUTE_GREY = "#b8bec6"
"""The route context's colour: light grey, under the hexagons (their colours stay the only strong ink)."""


def _slot_file(slot: str) -> str:
    return "slot_" + re.sub(r"[^0-9A-Za-z]+", "-", slot).strip("-") + ".png"


def _look(row: dict[str, Any] | None, threshold: float, cmap: Any, norm: Any) -> tuple[Any, str, str, str]:
    """(face colour, edge colour, hatch, line style) of one hexagon, as the web map draws it."""
    state = OFF if row is None else int(row["state"])
    if row is None or state == OFF:
        return "#e3e6ea", "white", "", "solid"
    if state in (WITHHELD, CLAMPED):
        return "white", "#4a5561", "", "dashed"
    low, high = row.get("low"), row.get("high")
    if state == VALUE and low is not None and high is not None and high - low > threshold:
        return "#eceff2", "white", "////", "solid"
    return cmap(norm(row["value"])), "white", "", "solid"


def context_lines(gtfs: Path | None, context: Sequence[Path] = ()) -> list[list[LatLon]]:
    """The route context as (lat, lon) polylines: the feed's shapes, then every line and polygon outline of the
    GeoJSON files (points are left out: the web map's stop markers would be specks here)."""
    lines = list(gtfs_overlay(gtfs).shapes) if gtfs is not None else []
    for path in context:
        parts = geojson_parts(read_context(path)["geojson"], f"context {path}")[0]  # rings included
        lines.extend([(float(lat), float(lon)) for lon, lat in part] for part in parts)
    return lines


def _km(plane: PlanarProjection, points: Sequence[LatLon]) -> np.ndarray:
    """(x, y) kilometres on the plane of (lat, lon) points."""
    lat, lon = np.array(points, dtype=float).reshape(-1, 2).T
    return plane.to_metres(lat, lon) / 1000.0


def write_slot_pngs(
    frame: pl.DataFrame,
    folder: Path,
    *,
    header: MapHeader,
    speed_max: float,
    gtfs: Path | None = None,
    context: Sequence[Path] = (),
    legend: str = "mean speed (km/h)",
    interval_threshold: float | None = None,
) -> list[Path]:
    """One PNG per slot in ``folder`` (created); returns their paths, in slot order (none for an empty release).

    Hatched: a 95% interval wider than ``interval_threshold`` (default U/2; a fleet release passes its public
    usefulness target, ``target_width``). ``gtfs`` (a feed folder or zip) and ``context`` (GeoJSON files): the
    route context, as on the web map (:func:`context_lines`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.colors import Normalize

    data = _check_frame(frame, "mean_speed")
    if data.height == 0:
        return []
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cells = sorted(data["h3_cell"].unique().to_list())
    rings, _ = _cell_geometry(cells)
    vertices = np.array([v for ring in rings for v in ring])
    plane = box_projection(*vertices.min(axis=0), *vertices.max(axis=0))
    polys = [_km(plane, ring) for ring in rings]
    routes = [_km(plane, line) for line in context_lines(gtfs, context)]
    norm = Normalize(0.0, speed_max if speed_max > 0 else 1.0)
    cmap = plt.get_cmap("viridis")
    threshold = interval_threshold or (speed_max / 2 if speed_max > 0 else math.inf)
    prefix = "Differentially private: " if header.kind == "dp" else ""
    title = textwrap.fill(prefix + header.statement, 110)
    paths: list[Path] = []
    for slot in sorted(data["slot"].unique().to_list()):
        rows = {r["h3_cell"]: r for r in data.filter(pl.col("slot") == slot).iter_rows(named=True)}
        looks = [_look(rows.get(c), threshold, cmap, norm) for c in cells]
        fig, ax = plt.subplots(figsize=(9, 7.5), dpi=110)
        for poly, (face, edge, hatch, style) in zip(polys, looks, strict=True):
            col = PolyCollection(
                [poly], facecolors=[face], edgecolors=[edge], linewidths=0.8, linestyles=style
            )
            if hatch:
                col.set_hatch(hatch)
            ax.add_collection(col)
        if routes:
            ax.add_collection(LineCollection(routes, colors=ROUTE_GREY, linewidths=0.9, zorder=0.5))
        lo, hi = np.vstack(polys).min(axis=0), np.vstack(polys).max(axis=0)
        pad = 0.05 * max(*(hi - lo), 0.1)
        ax.set_xlim(lo[0] - pad, hi[0] + pad)
        ax.set_ylim(lo[1] - pad, hi[1] + pad)
        ax.set_aspect("equal", adjustable="datalim")  # the frame fills the axes: more context, same scale
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"{slot}: {legend}", fontsize=12)
        fig.suptitle(
            title,
            fontsize=8,
            color="white" if header.kind == "notdp" else "#1f2933",
            backgroundcolor=NOT_DP_RED if header.kind == "notdp" else "none",
            y=0.995,
        )
        sm = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
        fig.colorbar(sm, ax=ax, fraction=0.035, pad=0.02, label=legend)
        note = (
            f"{len(rows)} of {len(cells)} released hexagons in this slot. Hatched: 95% interval wider than {threshold:g} km/h. Dashed: count "
            "released, mean withheld or clamped. Grey: released in another slot. No basemap in this image"
            + (": light grey lines are the public routes." if routes else ".")
        )
        fig.text(0.01, 0.01, textwrap.fill(note, 150), fontsize=7, color="#52606d")
        path = folder / _slot_file(slot)
        fig.savefig(path)
        plt.close(fig)
        paths.append(path)
    return paths
