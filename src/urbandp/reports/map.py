"""A self-contained HTML map of a HAT (hexagon x time slot) release.

One file, no network: the hexagons are inline SVG paths (boundaries from ``polars_h3.cell_to_boundary``,
equirectangular projection with longitudes scaled by cos(latitude)), the values are embedded as JSON in a
``<script type="application/json" id="hat-data">`` element, and a few lines of inline JavaScript colour the
hexagons for the selected slot, draw the legend and show a tooltip. Nothing is loaded from the internet.

The map only displays what it is given (post-processing of a release): it never reads true data.
"""

from __future__ import annotations

import html
import json
import math
import re
from importlib import resources
from pathlib import Path

import polars as pl

from urbandp.errors import InputError

KM_PER_DEGREE = 111.32
VIEW_WIDTH = 1000.0
PAD = 16.0
SCALE_BAR_SPACE = 36.0
TEMPLATE = "hat_map.html"


def _template() -> str:
    return resources.files("urbandp.reports").joinpath("templates", TEMPLATE).read_text(encoding="utf-8")


def _check_frame(frame: pl.DataFrame, value_col: str) -> pl.DataFrame:
    """Validate the columns and return ``h3_cell, slot, value`` with non-finite values as null."""
    missing = [c for c in ("h3_cell", "slot", value_col) if c not in frame.columns]
    if missing:
        raise InputError(f"map: missing column(s) {', '.join(missing)} (have {', '.join(frame.columns)})")
    if not frame.schema[value_col].is_numeric():
        raise InputError(f"map: column {value_col} must be numeric, got {frame.schema[value_col]}")
    out = frame.select(
        pl.col("h3_cell").cast(pl.String),
        pl.col("slot").cast(pl.String),
        pl.col(value_col).cast(pl.Float64).alias("value"),
    ).with_columns(pl.when(pl.col("value").is_finite()).then(pl.col("value")).alias("value"))
    if out["h3_cell"].null_count() or out["slot"].null_count():
        raise InputError("map: h3_cell and slot must not be null")
    dupes = out.select("h3_cell", "slot").is_duplicated()
    if dupes.any():
        row = out.filter(dupes).row(0)
        raise InputError(f"map: more than one row for cell {row[0]} in slot {row[1]}")
    return out


def _cell_boundaries(cells: list[str]) -> list[list[tuple[float, float]]]:
    """(lat, lon) vertices of each cell, or :class:`InputError` naming the first invalid cell."""
    import polars_h3 as plh3

    if not cells:
        return []
    table = pl.DataFrame({"cell": cells}, schema={"cell": pl.String}).with_columns(
        valid=plh3.is_valid_cell("cell"), boundary=plh3.cell_to_boundary("cell")
    )
    bad = table.filter(~pl.col("valid").fill_null(False) | pl.col("boundary").is_null())
    if bad.height:
        raise InputError(f"map: {bad.height} value(s) of h3_cell are not H3 cells, e.g. {bad['cell'][0]!r}")
    return [[(float(a), float(b)) for a, b in ring] for ring in table["boundary"].to_list()]


def _nice_length(km: float) -> float:
    """The largest 1-2-5 x 10^k length not above ``km``."""
    if km <= 0:
        return 1.0
    base = 10 ** math.floor(math.log10(km))
    return max(m * base for m in (1, 2, 5) if m * base <= km)


def _project(rings: list[list[tuple[float, float]]]) -> tuple[list[str], str, str]:
    """SVG path strings, the viewBox and a scale bar for the given (lat, lon) rings."""
    if not rings:
        return [], f"0 0 {VIEW_WIDTH:.0f} 300", ""
    lats = [lat for ring in rings for lat, _ in ring]
    lons = [lon for ring in rings for _, lon in ring]
    lat0 = (min(lats) + max(lats)) / 2
    kx = math.cos(math.radians(lat0))
    width_deg = max((max(lons) - min(lons)) * kx, 1e-9)
    height_deg = max(max(lats) - min(lats), 1e-9)
    scale = (VIEW_WIDTH - 2 * PAD) / max(width_deg, height_deg * 1.25)
    width = width_deg * scale + 2 * PAD
    height = height_deg * scale + 2 * PAD + SCALE_BAR_SPACE
    west, north = min(lons), max(lats)

    def xy(lat: float, lon: float) -> str:
        return f"{PAD + (lon - west) * kx * scale:.1f},{PAD + (north - lat) * scale:.1f}"

    paths = ["M" + "L".join(xy(lat, lon) for lat, lon in ring) + "Z" for ring in rings]
    km_per_unit = KM_PER_DEGREE / scale
    bar_km = _nice_length(0.25 * width * km_per_unit)
    bar_len = bar_km / km_per_unit
    y = height - 14
    label = f"{bar_km:g} km"
    scale_bar = (
        f'    <g class="scale"><path d="M{PAD:.1f},{y:.1f}h{bar_len:.1f}" stroke="#5f6b7a" stroke-width="2"/>'
        f'<path d="M{PAD:.1f},{y - 5:.1f}v10M{PAD + bar_len:.1f},{y - 5:.1f}v10" stroke="#5f6b7a"/>'
        f'<text x="{PAD + bar_len + 6:.1f}" y="{y + 4:.1f}">{label}</text></g>'
    )
    return paths, f"0 0 {width:.0f} {height:.0f}", scale_bar


def _json_for_script(payload: dict[str, object]) -> str:
    """JSON that is safe inside a <script> element (no "</" sequence can close it)."""
    text = json.dumps(payload, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def write_hat_map(
    frame: pl.DataFrame,
    path: Path,
    *,
    value_col: str = "mean_speed",
    title: str,
    legend: str,
    subtitle: str = "",
) -> None:
    """Write one self-contained HTML page showing ``value_col`` per hexagon, with a slot selector.

    ``frame`` has columns ``h3_cell`` (H3 index as hex string), ``slot`` (e.g. "09:00-10:00") and ``value_col``
    (float; null, NaN or a missing row means "not released" and is drawn grey). ``subtitle`` carries the privacy
    statement shown in the header (e.g. "epsilon per day 15.2 (speed 12.4, speeding 2.9), noise scale B = 1").
    Slots are ordered by their text, which is chronological for "HH:MM-HH:MM" labels. Raises
    :class:`InputError` on missing columns, invalid cells or duplicate (cell, slot) rows.
    """
    data = _check_frame(frame, value_col)
    cells = sorted(data["h3_cell"].unique().to_list())
    slots = sorted(data["slot"].unique().to_list())
    paths, view_box, scale_bar = _project(_cell_boundaries(cells))
    cell_index = {c: i for i, c in enumerate(cells)}
    slot_index = {s: i for i, s in enumerate(slots)}
    values: list[list[float | None]] = [[None] * len(cells) for _ in slots]
    for cell, slot, value in data.iter_rows():
        values[slot_index[slot]][cell_index[cell]] = value
    finite = [v for row in values for v in row if v is not None]
    payload: dict[str, object] = {
        "cells": cells,
        "slots": slots,
        "values": values,
        "min": min(finite) if finite else 0.0,
        "max": max(finite) if finite else 1.0,
        "legend": legend,
        "value_col": value_col,
    }
    path_elements = "\n".join(
        f'      <path class="hex off" data-i="{i}" data-cell="{cell}" d="{d}"/>'
        for i, (cell, d) in enumerate(zip(cells, paths, strict=True))
    )
    sub = f"<br>{html.escape(subtitle)}" if subtitle else ""
    fills = {
        "TITLE": html.escape(title),
        "SUBTITLE": sub,
        "LEGEND": html.escape(legend),
        "VIEWBOX": view_box,
        "PATHS": path_elements,
        "SCALEBAR": scale_bar,
        "DATA": _json_for_script(payload),
    }
    # One pass, so that text filled in is never scanned for placeholders again.
    page = re.sub(r"__([A-Z]+)__", lambda m: fills.get(m.group(1), m.group(0)), _template())
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page, encoding="utf-8")
    except OSError as err:
        raise InputError(f"map: cannot write {path}: {err.strerror or err}") from None
