"""A self-contained HTML map of a HAT (hexagon x time slot) release.

One file, no network: the hexagons are inline SVG paths (boundaries from ``polars_h3.cell_to_boundary``,
equirectangular projection with longitudes scaled by cos(latitude)), the values are embedded as strict JSON in a
``<script type="application/json" id="hat-data">`` element, and a few lines of inline JavaScript colour the
hexagons for the selected slot and show a tooltip. Nothing is loaded from the internet.

What an agency needs to read the map honestly:

* a colour scale fixed to the physically possible range [0, U] (U = the release's speed bound), the same for every
  slot, so that noise never stretches the legend;
* cells whose 95% interval (``ci95_low`` .. ``ci95_high``, from the known noise distribution) is wider than a
  threshold (default U/2) hatched grey instead of coloured: their colour would be noise drawn as signal;
* context without a tile server: a light outline of every cell of the public domain
  (:func:`domain_cells_for_bbox`) and, from a GTFS feed (:func:`gtfs_overlay`), the routes and stops;
* cells released at a coarser H3 resolution where data are sparse drawn at their own size.

The map only displays what it is given (post-processing of a release): it never reads true data.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import polars as pl

from urbandp.errors import InputError

KM_PER_DEGREE = 111.32
VIEW_WIDTH = 1000.0
PAD = 16.0
SCALE_BAR_SPACE = 36.0
TEMPLATE = "hat_map.html"
#: Above this many domain cells the outline is drawn from H3's compacted cover (same area, fewer, larger cells).
MAX_DOMAIN_CELLS = 20_000
#: GTFS points closer than this (SVG units, about pixels) to the previous kept point are dropped.
MIN_ROUTE_STEP = 0.75
#: Viridis (perceptually uniform, colour-blind safe), interpolated linearly between these stops.
VIRIDIS = [
    (68, 1, 84),
    (71, 44, 122),
    (59, 81, 139),
    (44, 113, 142),
    (33, 144, 141),
    (39, 173, 129),
    (92, 200, 99),
    (170, 220, 50),
    (253, 231, 37),
]
CI_COLUMNS = ("ci95_low", "ci95_high")

LatLon = tuple[float, float]


@dataclass(frozen=True)
class GtfsOverlay:
    """Routes and stops read from a GTFS feed: public context drawn under the released values.

    ``shapes`` are polylines of (lat, lon) in ``shape_pt_sequence`` order, one per ``shape_id``; ``stops`` are
    (lat, lon) points. ``source`` names the feed directory for the map's attribution line.
    """

    shapes: list[list[LatLon]]
    stops: list[LatLon]
    source: str


def _template() -> str:
    return resources.files("urbandp.reports").joinpath("templates", TEMPLATE).read_text(encoding="utf-8")


def _read_gtfs_table(path: Path, columns: Sequence[str]) -> pl.DataFrame:
    """The named columns of one GTFS text file as strings, or :class:`InputError` in one line."""
    try:
        table = pl.read_csv(path, infer_schema=False, encoding="utf8-lossy")
    except (OSError, pl.exceptions.PolarsError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError(f"gtfs: cannot read {path}: {first}") from None
    table = table.rename({c: c.strip().lstrip("\ufeff") for c in table.columns})
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise InputError(
            f"gtfs: {path.name} lacks column(s) {', '.join(missing)} (has {', '.join(table.columns)})"
        )
    return table.select(pl.col(c).str.strip_chars() for c in columns)


def _coordinates(table: pl.DataFrame, path: Path, *, allow_empty: bool) -> pl.DataFrame:
    """Parse ``lat``/``lon`` as floats in range; empty pairs are dropped where ``allow_empty``, else an error."""
    parsed = table.with_columns(
        lat_f=pl.col("lat").cast(pl.Float64, strict=False), lon_f=pl.col("lon").cast(pl.Float64, strict=False)
    )
    empty = (pl.col("lat").fill_null("") == "") & (pl.col("lon").fill_null("") == "")
    if (
        allow_empty
    ):  # GTFS allows stops without coordinates (generic nodes, boarding areas: location_type 3, 4)
        parsed = parsed.filter(~empty)
    ok = (
        pl.col("lat_f").is_not_null()
        & pl.col("lon_f").is_not_null()
        & pl.col("lat_f").is_between(-90, 90)
        & pl.col("lon_f").is_between(-180, 180)
    )
    bad = parsed.with_row_index("line", offset=2).filter(~ok)
    if bad.height:
        line, lat, lon = bad.select("line", "lat", "lon").row(0)
        raise InputError(
            f"gtfs: {path.name} has {bad.height} row(s) with invalid coordinates, first on line {line}: "
            f"lat={lat!r}, lon={lon!r}"
        )
    return parsed


def gtfs_overlay(gtfs_dir: Path) -> GtfsOverlay:
    """Read routes (``shapes.txt``) and stops (``stops.txt``) of a GTFS feed directory for the map.

    Either file may be absent, not both. ``shapes.txt`` needs ``shape_id, shape_pt_lat, shape_pt_lon,
    shape_pt_sequence``; ``stops.txt`` needs ``stop_lat, stop_lon`` (rows with both empty are skipped, as GTFS
    allows for location types 3 and 4). Any other problem (missing directory or column, unparseable file,
    coordinates that are not numbers in range, a non-integer sequence) raises :class:`InputError` in one line.
    The feed is public information; nothing of the release is read here.
    """
    gtfs_dir = Path(gtfs_dir)
    if not gtfs_dir.is_dir():
        raise InputError(
            f"gtfs: {gtfs_dir} is not a directory (give the folder holding shapes.txt / stops.txt)"
        )
    shapes_path, stops_path = gtfs_dir / "shapes.txt", gtfs_dir / "stops.txt"
    if not shapes_path.is_file() and not stops_path.is_file():
        raise InputError(f"gtfs: {gtfs_dir} holds neither shapes.txt nor stops.txt")
    shapes: list[list[LatLon]] = []
    if shapes_path.is_file():
        cols = ("shape_id", "shape_pt_lat", "shape_pt_lon", "shape_pt_sequence")
        table = _read_gtfs_table(shapes_path, cols).rename({"shape_pt_lat": "lat", "shape_pt_lon": "lon"})
        table = _coordinates(table, shapes_path, allow_empty=False).with_columns(
            seq=pl.col("shape_pt_sequence").cast(pl.Int64, strict=False)
        )
        if table["seq"].null_count() or table["shape_id"].null_count():
            raise InputError(
                f"gtfs: {shapes_path.name} has rows without a shape_id or an integer shape_pt_sequence"
            )
        grouped = (
            table.sort("shape_id", "seq")
            .group_by("shape_id", maintain_order=True)
            .agg(pl.col("lat_f"), pl.col("lon_f"))
        )
        shapes = [
            list(zip(lat, lon, strict=True))
            for lat, lon in zip(grouped["lat_f"], grouped["lon_f"], strict=True)
        ]
    stops: list[LatLon] = []
    if stops_path.is_file():
        table = _read_gtfs_table(stops_path, ("stop_lat", "stop_lon")).rename(
            {"stop_lat": "lat", "stop_lon": "lon"}
        )
        table = _coordinates(table, stops_path, allow_empty=True)
        stops = list(zip(table["lat_f"].to_list(), table["lon_f"].to_list(), strict=True))
    return GtfsOverlay(shapes=shapes, stops=stops, source=gtfs_dir.name)


def domain_cells_for_bbox(bbox: Sequence[float], resolution: int) -> list[str]:
    """The H3 cells whose centroid lies in a public box ``(min_lat, min_lon, max_lat, max_lon)``, sorted.

    The same cells as the fleet release's ``--domain-bbox`` at the release resolution (H3 polygon-to-cells uses
    centroid containment), so the map can outline the whole public domain behind the released cells.
    """
    import polars_h3 as plh3

    if len(bbox) != 4:
        raise InputError("domain bbox must be min_lat,min_lon,max_lat,max_lon")
    a, b, c, d = (float(x) for x in bbox)
    if not (-90 <= a < c <= 90 and -180 <= b < d <= 180):
        raise InputError(
            f"domain bbox {a},{b},{c},{d} must have -90 <= min_lat < max_lat <= 90 and min_lon < max_lon"
        )
    if not 0 <= int(resolution) <= 15:
        raise InputError(f"H3 resolution must be 0..15, got {resolution}")
    wkt = f"POLYGON(({b} {a}, {d} {a}, {d} {c}, {b} {c}, {b} {a}))"
    cells = (
        pl.DataFrame({"g": [wkt]}).select(plh3.polygon_to_cells("g", int(resolution)).alias("c")).explode("c")
    )
    return sorted(cells.select(plh3.int_to_str("c"))["c"].drop_nulls().unique().to_list())


def _check_frame(frame: pl.DataFrame, value_col: str) -> pl.DataFrame:
    """Validate the columns; return ``h3_cell, slot, value`` (+ ``low, high``, ``vehicle_days`` when present).

    Non-finite numbers become null.
    """
    missing = [c for c in ("h3_cell", "slot", value_col) if c not in frame.columns]
    if missing:
        raise InputError(f"map: missing column(s) {', '.join(missing)} (have {', '.join(frame.columns)})")
    numeric = [value_col] + [c for c in (*CI_COLUMNS, "noisy_vehicle_days") if c in frame.columns]
    for col in numeric:
        if not frame.schema[col].is_numeric():
            raise InputError(f"map: column {col} must be numeric, got {frame.schema[col]}")
    names = {value_col: "value", "ci95_low": "low", "ci95_high": "high", "noisy_vehicle_days": "vehicle_days"}
    out = frame.select(
        pl.col("h3_cell").cast(pl.String),
        pl.col("slot").cast(pl.String),
        *(pl.col(c).cast(pl.Float64).alias(names[c]) for c in numeric),
    ).with_columns(
        pl.when(pl.col(names[c]).is_finite()).then(pl.col(names[c])).alias(names[c]) for c in numeric
    )
    if out["h3_cell"].null_count() or out["slot"].null_count():
        raise InputError("map: h3_cell and slot must not be null")
    dupes = out.select("h3_cell", "slot").is_duplicated()
    if dupes.any():
        row = out.filter(dupes).row(0)
        raise InputError(f"map: more than one row for cell {row[0]} in slot {row[1]}")
    return out


def _cell_geometry(cells: list[str], what: str = "h3_cell") -> tuple[list[list[LatLon]], list[int]]:
    """(lat, lon) vertices and H3 resolution of each cell, or :class:`InputError` naming the first invalid one."""
    import polars_h3 as plh3

    if not cells:
        return [], []
    table = pl.DataFrame({"cell": cells}, schema={"cell": pl.String}).with_columns(
        valid=plh3.is_valid_cell("cell"),
        boundary=plh3.cell_to_boundary("cell"),
        res=plh3.get_resolution("cell"),
    )
    bad = table.filter(~pl.col("valid").fill_null(False) | pl.col("boundary").is_null())
    if bad.height:
        raise InputError(f"map: {bad.height} value(s) of {what} are not H3 cells, e.g. {bad['cell'][0]!r}")
    rings = [[(float(a), float(b)) for a, b in ring] for ring in table["boundary"].to_list()]
    return rings, [int(r) for r in table["res"].to_list()]


def _nice_length(km: float) -> float:
    """The largest 1-2-5 x 10^k length not above ``km``."""
    if km <= 0:
        return 1.0
    base = 10 ** math.floor(math.log10(km))
    return max(m * base for m in (1, 2, 5) if m * base <= km)


@dataclass(frozen=True)
class _Projection:
    """Equirectangular projection of the map's extent onto an SVG viewBox VIEW_WIDTH wide."""

    west: float
    north: float
    kx: float
    scale: float
    width: float
    height: float

    @classmethod
    def fit(cls, points: list[LatLon]) -> _Projection | None:
        if not points:
            return None
        lats = [lat for lat, _ in points]
        lons = [lon for _, lon in points]
        kx = math.cos(math.radians((min(lats) + max(lats)) / 2))
        width_deg = max((max(lons) - min(lons)) * kx, 1e-9)
        height_deg = max(max(lats) - min(lats), 1e-9)
        scale = (VIEW_WIDTH - 2 * PAD) / max(width_deg, height_deg * 1.25)
        return cls(
            west=min(lons),
            north=max(lats),
            kx=kx,
            scale=scale,
            width=width_deg * scale + 2 * PAD,
            height=height_deg * scale + 2 * PAD + SCALE_BAR_SPACE,
        )

    def xy(self, lat: float, lon: float) -> tuple[float, float]:
        return PAD + (lon - self.west) * self.kx * self.scale, PAD + (self.north - lat) * self.scale

    def ring_path(self, ring: list[LatLon]) -> str:
        return "M" + "L".join("{:.1f},{:.1f}".format(*self.xy(lat, lon)) for lat, lon in ring) + "Z"

    def inside(self, x: float, y: float) -> bool:
        return -PAD <= x <= self.width + PAD and -PAD <= y <= self.height - SCALE_BAR_SPACE + PAD

    def polyline_paths(self, line: list[LatLon]) -> str:
        """Subpaths of the parts of ``line`` inside the extent, thinned to one point per MIN_ROUTE_STEP."""
        out: list[str] = []
        run: list[tuple[float, float]] = []

        def flush() -> None:
            if len(run) > 1:
                out.append("M" + "L".join(f"{x:.1f},{y:.1f}" for x, y in run))
            run.clear()

        for lat, lon in line:
            x, y = self.xy(lat, lon)
            if not self.inside(x, y):
                flush()
            elif not run or abs(x - run[-1][0]) + abs(y - run[-1][1]) >= MIN_ROUTE_STEP:
                run.append((x, y))
        flush()
        return "".join(out)

    def scale_bar(self) -> str:
        km_per_unit = KM_PER_DEGREE / self.scale
        bar_km = _nice_length(0.25 * self.width * km_per_unit)
        bar_len = bar_km / km_per_unit
        y = self.height - 14
        return (
            f'    <g class="scale"><path d="M{PAD:.1f},{y:.1f}h{bar_len:.1f}" stroke="#3d4753" stroke-width="2"/>'
            f'<path d="M{PAD:.1f},{y - 5:.1f}v10M{PAD + bar_len:.1f},{y - 5:.1f}v10" stroke="#3d4753"/>'
            f'<text x="{PAD + bar_len + 6:.1f}" y="{y + 4:.1f}">{bar_km:g} km</text>'
            f'<text x="{self.width - PAD:.1f}" y="{y + 4:.1f}" text-anchor="end">north is up</text></g>'
        )


def _json_for_script(payload: dict[str, object]) -> str:
    """Strict JSON (no NaN/Infinity) that is safe inside a <script> element (no "</" sequence can close it)."""
    text = json.dumps(payload, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _ticks(lo: float, hi: float) -> list[float]:
    """Round tick values from ``lo`` to ``hi`` (4 to 8 of them on a 1-2-5 step), ends included."""
    if hi <= lo:
        return [lo]
    step = _nice_length((hi - lo) / 4)
    first = math.ceil(lo / step) * step
    ticks = [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]
    ticks = [t for t in ticks if abs(t - lo) > 0.5 * step and abs(t - hi) > 0.5 * step]
    return [lo, *ticks, hi]


def _unit(legend: str) -> str:
    """The unit written in parentheses at the end of a legend, e.g. "km/h" in "mean speed (km/h)"."""
    match = re.search(r"\(([^()]+)\)\s*$", legend)
    return f" {match.group(1)}" if match else ""


def write_hat_map(
    frame: pl.DataFrame,
    path: Path,
    *,
    value_col: str = "mean_speed",
    title: str,
    legend: str,
    subtitle: str = "",
    speed_max: float | None = None,
    interval_threshold: float | None = None,
    domain_cells: Sequence[str] | None = None,
    gtfs_dir: Path | None = None,
) -> None:
    """Write one self-contained HTML page showing ``value_col`` per hexagon, with a slot selector.

    ``frame`` has columns ``h3_cell`` (H3 index as hex string, any resolution: each cell is drawn at its own),
    ``slot`` (e.g. "09:00-10:00") and ``value_col`` (float; null, NaN or a missing row means "not released" and
    is drawn grey); optionally ``ci95_low``/``ci95_high`` (the 95% interval) and ``noisy_vehicle_days``, shown in
    the tooltip. ``subtitle`` carries the privacy statement shown in the header.

    ``speed_max`` (U) fixes the colour scale to [0, U] for every slot; without it the scale spans the data (only
    for old callers: a scale that follows noisy values is itself noise). Cells whose interval is wider than
    ``interval_threshold`` (default U/2 when U is given; no hatching without the interval columns) are hatched grey.
    ``domain_cells`` (e.g. :func:`domain_cells_for_bbox`) are outlined lightly behind the release; ``gtfs_dir``
    adds routes and stops (:func:`gtfs_overlay`). Slots are ordered by their text, which is chronological for
    "HH:MM-HH:MM" labels. Raises :class:`InputError` on missing columns, invalid cells, duplicate (cell, slot) rows
    or an unusable GTFS feed.
    """
    data = _check_frame(frame, value_col)
    if speed_max is not None and not (math.isfinite(speed_max) and speed_max > 0):
        raise InputError(f"map: speed_max must be a positive number, got {speed_max}")
    if interval_threshold is not None and not (math.isfinite(interval_threshold) and interval_threshold > 0):
        raise InputError(f"map: interval_threshold must be a positive number, got {interval_threshold}")
    has_ci = "low" in data.columns and "high" in data.columns
    threshold = (
        interval_threshold if interval_threshold is not None else (speed_max / 2 if speed_max else None)
    )
    if not has_ci:
        threshold = None
    overlay = gtfs_overlay(gtfs_dir) if gtfs_dir is not None else None

    cells = sorted(data["h3_cell"].unique().to_list())
    slots = sorted(data["slot"].unique().to_list())
    rings, resolutions = _cell_geometry(cells)
    if "resolution" in frame.columns:
        stated = frame.select(
            pl.col("h3_cell").cast(pl.String), pl.col("resolution").cast(pl.Int64, strict=False)
        )
        actual = pl.DataFrame(
            {"h3_cell": cells, "actual": resolutions}, schema={"h3_cell": pl.String, "actual": pl.Int64}
        )
        wrong = stated.join(actual, on="h3_cell").filter(pl.col("resolution").ne_missing(pl.col("actual")))
        if wrong.height:
            cell, res, act = wrong.row(0)
            raise InputError(f"map: cell {cell} is at H3 resolution {act}, but its row says resolution {res}")
    # H3 indexes as 64-bit integers (what polygon-to-cells gives) are accepted too.
    given = {c if isinstance(c, str) else format(int(c), "x") for c in (domain_cells or ())}
    domain = sorted(given - set(cells))
    if len(domain) > MAX_DOMAIN_CELLS:
        import polars_h3 as plh3

        domain = pl.DataFrame({"c": [domain]}).select(plh3.compact_cells("c")).explode("c")["c"].to_list()
    domain_rings, _ = _cell_geometry(domain, "domain_cells")
    extent = [p for ring in rings + domain_rings for p in ring]
    if overlay is not None and not extent:
        extent = [p for line in overlay.shapes for p in line] + overlay.stops
    proj = _Projection.fit(extent)

    cell_index = {c: i for i, c in enumerate(cells)}
    slot_index = {s: i for i, s in enumerate(slots)}
    grids: dict[str, list[list[float | None]]] = {
        name: [[None] * len(cells) for _ in slots] for name in data.columns[2:]
    }
    for row in data.iter_rows(named=True):
        i, j = slot_index[row["slot"]], cell_index[row["h3_cell"]]
        for name, grid in grids.items():
            grid[i][j] = row[name]
    finite = [v for row in grids["value"] for v in row if v is not None]
    lo, hi = (0.0, float(speed_max)) if speed_max else ((min(finite), max(finite)) if finite else (0.0, 1.0))
    payload: dict[str, object] = {
        "cells": cells,
        "resolutions": resolutions,
        "slots": slots,
        "values": grids["value"],
        "low": grids.get("low"),
        "high": grids.get("high"),
        "vehicle_days": grids.get("vehicle_days"),
        "min": lo,
        "max": hi,
        "fixed_scale": speed_max is not None,
        "interval_threshold": threshold,
        "legend": legend,
        "unit": _unit(legend).strip(),
        "value_col": value_col,
        "colours": VIRIDIS,
    }

    # Coarser cells first, so that finer ones released beside them are drawn on top.
    order = sorted(range(len(cells)), key=lambda j: (resolutions[j], cells[j]))
    layers: list[str] = []
    if proj is not None and domain_rings:
        outline = "".join(proj.ring_path(r) for r in domain_rings)
        layers.append(f'      <path class="domain" d="{outline}"/>')
    if proj is not None:
        layers.extend(
            f'      <path class="hex off" data-i="{j}" data-cell="{cells[j]}" data-res="{resolutions[j]}" '
            f'd="{proj.ring_path(rings[j])}"/>'
            for j in order
        )
    if proj is not None and overlay is not None:
        routes = "".join(proj.polyline_paths(line) for line in overlay.shapes)
        if routes:
            layers.append(f'      <path class="route" d="{routes}"/>')
        dots = "".join(
            f"M{x:.1f},{y:.1f}h0"
            for x, y in (proj.xy(lat, lon) for lat, lon in overlay.stops)
            if proj.inside(x, y)
        )
        if dots:
            layers.append(f'      <path class="stop" d="{dots}"/>')

    unit = _unit(legend)
    ramp = ", ".join(
        f"rgb({r},{g},{b}) {100 * k / (len(VIRIDIS) - 1):.1f}%" for k, (r, g, b) in enumerate(VIRIDIS)
    )
    tick_html = "".join(
        f'<span style="left:{100 * (t - lo) / (hi - lo) if hi > lo else 0:.2f}%">{_fmt(t)}</span>'
        for t in _ticks(lo, hi)
    )
    if speed_max:
        scale_note = (
            f"Colours run from 0 to U = {_fmt(hi)}{unit}, the release's bound on speeds, the same in every slot; "
            "released values never leave this range."
        )
    else:
        scale_note = (
            f"Colours span the released values ({_fmt(lo)} to {_fmt(hi)}{unit}), the same in every slot."
        )
    keys = ['<li><span class="swatch off"></span>released cell, nothing released in this slot</li>']
    if threshold is not None:
        keys.insert(
            0,
            '<li><svg class="swatch" viewBox="0 0 14 14"><rect width="14" height="14" fill="url(#wide-hatch)"/></svg>'
            f"95% interval wider than {_fmt(threshold)}{unit}: too uncertain to colour (hover for the value)</li>",
        )
    if domain_rings:
        keys.append('<li><span class="swatch domain"></span>public domain: no value released</li>')
    if overlay is not None and overlay.shapes:
        keys.append('<li><span class="swatch route"></span>routes (GTFS shapes)</li>')
    if overlay is not None and overlay.stops:
        keys.append('<li><span class="swatch stop"></span>stops (GTFS stops)</li>')
    distinct = sorted(set(resolutions))
    if len(distinct) > 1:
        keys.append(
            "<li>Larger hexagons: released at a coarser H3 resolution where data are sparse (resolutions "
            + ", ".join(str(r) for r in distinct)
            + ")</li>"
        )
    sources = f"Cells: H3 resolution {', '.join(str(r) for r in distinct) or '-'}."
    if overlay is not None:
        sources += f" Routes and stops: GTFS feed {html.escape(overlay.source)} (public timetable data)."
    interval_note = (
        "The 95% interval of a value comes from the known distribution of the noise added to it."
        if has_ci
        else ""
    )
    fills = {
        "TITLE": html.escape(title),
        "SUBTITLE": f"<br>{html.escape(subtitle)}" if subtitle else "",
        "LEGEND": html.escape(legend),
        "VIEWBOX": f"0 0 {proj.width:.0f} {proj.height:.0f}" if proj else f"0 0 {VIEW_WIDTH:.0f} 300",
        "PATHS": "\n".join(layers),
        "SCALEBAR": proj.scale_bar() if proj else "",
        "RAMP": ramp,
        "TICKS": tick_html,
        "SCALENOTE": html.escape(scale_note),
        "KEYS": "\n      ".join(keys),
        "INTERVALNOTE": html.escape(interval_note),
        "SOURCES": sources,
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
