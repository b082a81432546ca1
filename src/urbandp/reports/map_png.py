"""A PNG per time slot of a HAT release, for reports (matplotlib, no basemap: tiles need the network).

The same encoding as the web map (:mod:`urbandp.reports.map`): viridis on the fixed range [0, U]; hatched where the
95% interval is wider than the release's usefulness target (U/2 without one); dashed and uncoloured where the count was released but the mean withheld or
clamped; light grey where the cell was released in another slot only. The header's privacy statement is the
figure's title (red for a NOT-DP release), so a PNG never travels without it.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from urbandp.reports.map import (
    CLAMPED,
    OFF,
    VALUE,
    WITHHELD,
    MapHeader,
    _cell_geometry,
    _check_frame,
    gtfs_overlay,
)

NOT_DP_RED = "#c62828"


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


def write_slot_pngs(
    frame: pl.DataFrame,
    folder: Path,
    *,
    header: MapHeader,
    speed_max: float,
    value_col: str = "mean_speed",
    gtfs: Path | None = None,
    legend: str = "mean speed (km/h)",
    interval_threshold: float | None = None,
) -> list[Path]:
    """One PNG per slot in ``folder`` (created); returns their paths, in slot order (none for an empty release).

    Hatched: a 95% interval wider than ``interval_threshold`` (default U/2; a fleet release passes its public
    usefulness target, ``target_width``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import Normalize

    data = _check_frame(frame, value_col)
    if data.height == 0:
        return []
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cells = sorted(data["h3_cell"].unique().to_list())
    rings, _ = _cell_geometry(cells)
    lat0 = sum(lat for ring in rings for lat, _ in ring) / sum(len(r) for r in rings)
    kx = math.cos(math.radians(lat0))
    polys = [[(lon * kx, lat) for lat, lon in ring] for ring in rings]
    overlay = gtfs_overlay(gtfs) if gtfs is not None else None
    norm = Normalize(0.0, speed_max if speed_max > 0 else 1.0)
    cmap = plt.get_cmap("viridis")
    threshold = interval_threshold or (speed_max / 2 if speed_max > 0 else math.inf)
    index = {c: j for j, c in enumerate(cells)}
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
        if overlay is not None:
            for line in overlay.shapes:
                ax.plot(
                    [lon * kx for _, lon in line],
                    [lat for lat, _ in line],
                    color="#19202c",
                    lw=0.7,
                    alpha=0.6,
                )
        xs = [x for p in polys for x, _ in p]
        ys = [y for p in polys for _, y in p]
        pad = 0.05 * max(max(xs) - min(xs), max(ys) - min(ys), 1e-3)
        ax.set_xlim(min(xs) - pad, max(xs) + pad)
        ax.set_ylim(min(ys) - pad, max(ys) + pad)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"{slot}: {legend}", fontsize=12)
        fig.suptitle(
            title, fontsize=8, color="white" if header.kind == "notdp" else "#1f2933",
            backgroundcolor=NOT_DP_RED if header.kind == "notdp" else "none", y=0.995,
        )  # fmt: skip
        sm = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
        fig.colorbar(sm, ax=ax, fraction=0.035, pad=0.02, label=legend)
        n = len(index)
        note = (
            f"{len(rows)} of {n} released hexagons in this slot. Hatched: 95% interval wider than {threshold:g} km/h. Dashed: count "
            "released, mean withheld or clamped. Grey: released in another slot. No basemap in this image."
        )
        fig.text(0.01, 0.01, textwrap.fill(note, 150), fontsize=7, color="#52606d")
        path = folder / _slot_file(slot)
        fig.savefig(path)
        plt.close(fig)
        paths.append(path)
    return paths


__all__: Sequence[str] = ("write_slot_pngs",)
