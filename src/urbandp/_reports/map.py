"""The HAT map: one HTML file an agency can publish, on a real basemap, that opens offline.

docs/map.md says what the page shows and why: Leaflet (``xstatic-leaflet``) inlined so the page needs no network
but for the basemap tiles (section "The web-map library: Leaflet, inlined"), the header (:class:`MapHeader`), the
fixed colour scale [0, U], the hatched and "count only" cells, the counter, and the context drawn without a tile
server (:func:`gtfs_overlay`, :func:`read_context`, the public domain's outline).

The page is a Jinja2 template (``_reports/templates/hat_map.html``) rendered with autoescape on
(:func:`render_page`): every text that reaches it (titles, legends, slot labels, context and GTFS names, header
statements) is escaped by Jinja, not by hand, and the data for the script goes in through Jinja's ``tojson``.

The map only displays what it is given (post-processing of a release): it never reads true data.
"""

from __future__ import annotations

import functools
import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

import jinja2
import polars as pl
from markupsafe import Markup

from urbandp._records.geojson import GEOMETRY_DEPTHS, geojson_parts
from urbandp._records.gtfs_schedule import read_feed, read_public_file, read_shapes, read_stops
from urbandp.errors import InputError

TEMPLATE = "hat_map.html"
#: Above this many domain cells the outline is drawn from H3's compacted cover (same area, fewer, larger cells).
MAX_DOMAIN_CELLS = 20_000
#: Routes are simplified to this tolerance (degrees, about 5 m) before they are embedded (shapely, Douglas-Peucker).
ROUTE_TOLERANCE_DEG = 5e-5
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
OSM_TILES = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
OSM_ATTRIBUTION = '&copy; <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors'
#: Per (slot, cell): not released in this slot, a mean, count only (mean withheld), count only (mean clamped).
OFF, VALUE, WITHHELD, CLAMPED = 0, 1, 2, 3

LatLon = tuple[float, float]


@dataclass(frozen=True)
class TileSource:
    """An XYZ tile layer: URL template with ``{z}``, ``{x}``, ``{y}`` (``{s}`` optional) and its attribution."""

    url: str
    attribution: str


DEFAULT_TILES = TileSource(OSM_TILES, OSM_ATTRIBUTION)


def parse_tiles(value: str | None) -> TileSource | None:
    """``--tiles``: ``None`` or ``"osm"`` for OpenStreetMap's standard tiles, ``"none"`` for no basemap, or an XYZ
    URL template (http, https or file) holding ``{z}``, ``{x}`` and ``{y}``."""
    if value is None or value.strip().lower() == "osm":
        return DEFAULT_TILES
    text = value.strip()
    if text.lower() == "none":
        return None
    if not re.match(r"^(https?|file)://", text) or not all(k in text for k in ("{z}", "{x}", "{y}")):
        raise InputError(
            f"tiles {value!r}: give none, osm, or an XYZ URL template such as "
            "https://tile.example.org/{z}/{x}/{y}.png",
            parameters="tiles",
        )
    host = re.sub(r"^[a-z]+://", "", text).split("/")[0] or "local files"
    return TileSource(text, f"Basemap tiles: {html.escape(host)}")


@dataclass(frozen=True)
class MapHeader:
    """What the page says of the release, above the map.

    ``kind``: ``dp`` (green), ``notdp`` (red, ``statement`` holds "NOT differentially private: <reasons>"), or
    ``plain`` (a neutral note, for callers that state privacy themselves). ``statement`` and ``details`` are plain
    text (escaped here). ``empty`` (when nothing was released): why, and what would change it.
    """

    kind: str
    statement: str
    details: str = ""
    empty: str | None = None


@dataclass(frozen=True)
class GtfsOverlay:
    """Routes and stops read from a GTFS feed: public context drawn over the released values.

    ``shapes`` are polylines of (lat, lon) in ``shape_pt_sequence`` order, one per ``shape_id``; ``stops`` are
    (lat, lon) points. ``source`` names the feed for the map's attribution line.
    """

    shapes: list[list[LatLon]]
    stops: list[LatLon]
    source: str


@functools.cache
def page_environment() -> jinja2.Environment:
    """The Jinja2 environment of every HTML page urbandp writes (templates in ``urbandp/_reports/templates``).

    Autoescape is on for ``.html`` templates, so a value is HTML-escaped unless it is :class:`~markupsafe.Markup`;
    undefined names are errors. ``tojson`` writes strict JSON (no NaN or Infinity) with ``<``, ``>``, ``&`` and
    ``'`` as ``\\u`` escapes (Jinja's ``htmlsafe_json_dumps``), so no text in the data can end the ``<script>``
    element that holds it; only then is it marked safe.
    """
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("urbandp._reports", "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.policies["json.dumps_kwargs"] = {"separators": (",", ":"), "allow_nan": False, "ensure_ascii": False}
    return env


def render_page(template: str, **context: object) -> str:
    """``template`` (a file name in ``urbandp/_reports/templates``) rendered with ``context``, escaped."""
    return page_environment().get_template(template).render(**context)


def leaflet_assets() -> tuple[str, str, str]:
    """(CSS, JavaScript, version) of the Leaflet release shipped by ``xstatic-leaflet``."""
    pkg = import_module("xstatic.pkg.leaflet")
    base = Path(pkg.BASE_DIR)
    try:
        css = (base / "leaflet.css").read_text(encoding="utf-8")
        js = (base / "leaflet.js").read_text(encoding="utf-8")
    except OSError as err:  # a broken install, not the user's input
        raise RuntimeError(f"xstatic-leaflet is installed without its files: {err}") from None
    return css, js, str(pkg.VERSION)


def gtfs_overlay(feed: Path) -> GtfsOverlay:
    """Read routes (``shapes.txt``) and stops (``stops.txt``) of a GTFS feed folder or ``gtfs.zip`` for the map.

    Either file may be absent, not both. Read by the GTFS reader of the fleet's domain
    (:mod:`urbandp._records.gtfs_schedule`: the same size and row caps, the same checks of each column), so a feed
    the map draws is a feed a release can use; any problem (missing feed or column, a pipe, an unparseable file,
    coordinates that are not numbers in range, a non-integer sequence) raises :class:`InputError` in one line.
    Stops without a position (location types 3 and 4) are skipped, as GTFS allows. The feed is public
    information; nothing of the release is read here.
    """
    feed = Path(feed)
    files = read_feed(feed, ("shapes.txt", "stops.txt"), digest=False)
    if not files.files:
        raise InputError(f"gtfs {feed}: holds neither shapes.txt nor stops.txt")
    shapes: list[list[LatLon]] = []
    if "shapes.txt" in files.files:
        grouped = read_shapes(files).group_by("shape_id", maintain_order=True).agg("lat", "lon")
        shapes = [
            list(zip(lat, lon, strict=True)) for lat, lon in zip(grouped["lat"], grouped["lon"], strict=True)
        ]
    stops: list[LatLon] = []
    if "stops.txt" in files.files:
        table = read_stops(files)
        stops = list(zip(table["lat"].to_list(), table["lon"].to_list(), strict=True))
    return GtfsOverlay(shapes=shapes, stops=stops, source=feed.name)


GEOJSON_TYPES = {"FeatureCollection", "Feature", "GeometryCollection", *GEOMETRY_DEPTHS}


def read_context(path: Path) -> dict[str, object]:
    """A GeoJSON file (RFC 7946) drawn as public context: ``{"name": ..., "geojson": the object}``.

    The legend's name is the file's top-level ``"name"`` member where it has one (GDAL writes it; RFC 7946 allows
    foreign members), else the file name. The file is walked as a domain's GeoJSON is
    (:func:`urbandp._records.geojson.geojson_parts`): a malformed geometry or a position that is not
    longitude/latitude is refused in one line.
    """
    path = Path(path)
    try:  # a regular file within the size cap (a pipe would block), as every public file is read
        value = json.loads(read_public_file(path, "context").decode("utf-8-sig"))
        if not isinstance(value, dict) or value.get("type") not in GEOJSON_TYPES:
            raise InputError(f"context {path}: not GeoJSON (no FeatureCollection, Feature or geometry type)")
        geojson_parts(value, f"context {path}")
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(
            f"context {path}: not a readable GeoJSON file ({err})", parameters="context"
        ) from None
    except InputError as err:  # every refusal names the parameter
        raise InputError(str(err), parameters="context") from None
    name = value.get("name")
    return {"name": name.strip() if isinstance(name, str) and name.strip() else path.name, "geojson": value}


def map_inputs(tiles: str | None, gtfs: Path | None, context: Sequence[Path] | None) -> dict[str, Any]:
    """``--tiles``, ``--gtfs`` and ``--context`` read and checked now, before any record is read or noise drawn
    (:class:`InputError` in one line), as the keyword options ``tiles``, ``gtfs`` and ``context`` of the map."""
    if gtfs is not None:
        gtfs_overlay(gtfs)
    for path in context or []:
        read_context(path)
    return {"tiles": parse_tiles(tiles), "gtfs": gtfs, "context": list(context or [])}


def _check_frame(frame: pl.DataFrame, value_col: str) -> pl.DataFrame:
    """Validate the columns; return ``h3_cell, slot, value, state`` (+ ``low, high``, ``vehicle_days``).

    ``state`` is :data:`VALUE` for a finite value, :data:`WITHHELD` for a row whose value is null or not finite
    (the count was released, the mean withheld), :data:`CLAMPED` where a ``clamped`` column is true.
    """
    missing = [c for c in ("h3_cell", "slot", value_col) if c not in frame.columns]
    if missing:
        raise InputError(f"map: missing column(s) {', '.join(missing)} (have {', '.join(frame.columns)})")
    numeric = [value_col] + [c for c in (*CI_COLUMNS, "noisy_vehicle_days") if c in frame.columns]
    for col in numeric:
        if not frame.schema[col].is_numeric():
            raise InputError(f"map: column {col} must be numeric, got {frame.schema[col]}")
    names = {value_col: "value", "ci95_low": "low", "ci95_high": "high", "noisy_vehicle_days": "vehicle_days"}
    clamped = (
        pl.col("clamped").cast(pl.Boolean, strict=False).fill_null(False)
        if "clamped" in frame.columns
        else pl.lit(False)
    )
    out = frame.select(
        pl.col("h3_cell").cast(pl.String),
        pl.col("slot").cast(pl.String),
        *(pl.col(c).cast(pl.Float64).alias(names[c]) for c in numeric),
        clamped.alias("_clamped"),
    ).with_columns(
        pl.when(pl.col(names[c]).is_finite()).then(pl.col(names[c])).alias(names[c]) for c in numeric
    )
    out = out.with_columns(
        state=pl.when(pl.col("value").is_null())
        .then(WITHHELD)
        .when(pl.col("_clamped"))
        .then(CLAMPED)
        .otherwise(VALUE)
        .cast(pl.Int64)
    ).drop("_clamped")
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
    rings = [
        [(round(float(a), 6), round(float(b), 6)) for a, b in ring] for ring in table["boundary"].to_list()
    ]
    return rings, [int(r) for r in table["res"].to_list()]


def _simplified(line: list[LatLon]) -> list[LatLon]:
    """A route thinned for the page (Douglas-Peucker at :data:`ROUTE_TOLERANCE_DEG`, shapely)."""
    from shapely.geometry import LineString

    if len(line) < 3:
        return [(round(a, 6), round(b, 6)) for a, b in line]
    coords = LineString([(lon, lat) for lat, lon in line]).simplify(ROUTE_TOLERANCE_DEG).coords
    return [(round(lat, 6), round(lon, 6)) for lon, lat in coords]


def _nice_length(value: float) -> float:
    """The largest 1-2-5 x 10^k number not above ``value``."""
    if value <= 0:
        return 1.0
    base = 10 ** math.floor(math.log10(value))
    return max(m * base for m in (1, 2, 5) if m * base <= value)


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


@dataclass(frozen=True)
class _Released:
    """The released (cell, slot) table of a map, laid out for the page.

    ``cells`` and ``slots`` are sorted; ``rings`` and ``resolutions`` are each cell's outline and H3 resolution;
    ``grids`` holds one ``[slot][cell]`` grid per column of :func:`_check_frame`'s table after ``h3_cell, slot``
    (``value``, ``state`` and, where given, ``low``, ``high``, ``vehicle_days``); None where no row was released.
    """

    cells: list[str]
    slots: list[str]
    rings: list[list[LatLon]]
    resolutions: list[int]
    grids: dict[str, list[list[float | None]]]

    @property
    def has_ci(self) -> bool:
        """Whether the release states a 95% interval per cell (``ci95_low`` and ``ci95_high``)."""
        return "low" in self.grids and "high" in self.grids


@dataclass(frozen=True)
class _Scale:
    """The colour scale: [``lo``, ``hi``], ``fixed`` to [0, U] when U is given; the hatching ``threshold``."""

    lo: float
    hi: float
    fixed: bool
    threshold: float | None


def _check_positive(name: str, value: float | None) -> None:
    """:class:`InputError` unless ``value`` is None or a finite positive number."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise InputError(f"map: {name} must be a positive number, got {value}")


def _check_stated_resolutions(frame: pl.DataFrame, cells: list[str], resolutions: list[int]) -> None:
    """:class:`InputError` where a row's ``resolution`` column disagrees with its cell's H3 resolution."""
    if "resolution" not in frame.columns:
        return
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


def _grids(data: pl.DataFrame, cells: list[str], slots: list[str]) -> dict[str, list[list[float | None]]]:
    """One ``[slot][cell]`` grid per column of ``data`` after ``h3_cell, slot``; None where no row."""
    every = pl.DataFrame({"slot": slots}, schema={"slot": pl.String}).join(
        pl.DataFrame({"h3_cell": cells}, schema={"h3_cell": pl.String}), how="cross"
    )
    full = every.join(data, on=["slot", "h3_cell"], how="left", maintain_order="left")
    return {name: full[name].reshape((len(slots), len(cells))).to_list() for name in data.columns[2:]}


def _released(
    data: pl.DataFrame, frame: pl.DataFrame, cell_rings: Mapping[str, list[LatLon]] | None = None
) -> _Released:
    """The checked table ``data`` (of :func:`_check_frame`) laid out per cell and slot, with cell outlines: H3's,
    or ``cell_rings`` (a cell id -> its (lat, lon) outline) for cells of another grid.

    Raises :class:`InputError` on an invalid cell or a ``resolution`` column of ``frame`` that disagrees.
    """
    cells = sorted(data["h3_cell"].unique().to_list())
    slots = sorted(data["slot"].unique().to_list())
    if cell_rings is not None:
        unknown = [c for c in cells if c not in cell_rings]
        if unknown:
            raise InputError(f"map: cell {unknown[0]} has no outline")
        return _Released(cells, slots, [cell_rings[c] for c in cells], [], _grids(data, cells, slots))
    rings, resolutions = _cell_geometry(cells)
    _check_stated_resolutions(frame, cells, resolutions)
    return _Released(cells, slots, rings, resolutions, _grids(data, cells, slots))


def _domain_rings(domain_cells: Sequence[str] | None, released: list[str]) -> list[list[LatLon]]:
    """Outlines of the public domain's cells not released, from the compacted cover above
    :data:`MAX_DOMAIN_CELLS`; H3 indexes given as 64-bit integers (polygon-to-cells) are accepted too."""
    given = {c if isinstance(c, str) else format(int(c), "x") for c in (domain_cells or ())}
    domain = sorted(given - set(released))
    if len(domain) > MAX_DOMAIN_CELLS:
        import polars_h3 as plh3

        domain = pl.DataFrame({"c": [domain]}).select(plh3.compact_cells("c")).explode("c")["c"].to_list()
    return _cell_geometry(domain, "domain_cells")[0]


def _scale(
    values: list[list[float | None]],
    speed_max: float | None,
    interval_threshold: float | None,
    has_ci: bool,
) -> _Scale:
    """[0, U] where U (``speed_max``) is given, else the range of the released values ([0, 1] if none).

    Cells are hatched above ``interval_threshold`` (default U/2), only where the release states intervals.
    """
    threshold = (
        interval_threshold if interval_threshold is not None else (speed_max / 2 if speed_max else None)
    )
    finite = [v for row in values for v in row if v is not None]
    lo, hi = (0.0, float(speed_max)) if speed_max else ((min(finite), max(finite)) if finite else (0.0, 1.0))
    return _Scale(lo, hi, speed_max is not None, threshold if has_ci else None)


@dataclass(frozen=True)
class _Page:
    """What one map page shows: the released cells, their colour scale, the public context drawn under and over
    them (the GTFS overlay, GeoJSON files, the domain's outline), the legend (its unit in parentheses at the end),
    the basemap and the word for a cell."""

    released: _Released
    scale: _Scale
    overlay: GtfsOverlay | None
    files: list[dict[str, object]]
    domain_rings: list[list[LatLon]]
    legend: str
    tiles: TileSource | None
    cell_word: str


def _payload(page: _Page, value_col: str) -> dict[str, object]:
    """The data the page's script draws (embedded by Jinja's ``tojson``)."""
    released, scale, overlay, legend, tiles = page.released, page.scale, page.overlay, page.legend, page.tiles
    cells, resolutions, grids = released.cells, released.resolutions, released.grids
    return {
        "cells": cells,
        "resolutions": resolutions,
        "rings": released.rings,
        # coarser cells first, so that finer ones released beside them are drawn on top
        "order": sorted(range(len(cells)), key=lambda j: (resolutions[j] if resolutions else 0, cells[j])),
        "slots": released.slots,
        "values": grids["value"],
        "state": grids["state"],
        "low": grids.get("low"),
        "high": grids.get("high"),
        "vehicle_days": grids.get("vehicle_days"),
        "min": scale.lo,
        "max": scale.hi,
        "fixed_scale": scale.fixed,
        "interval_threshold": scale.threshold,
        "legend": legend,
        "unit": _unit(legend).strip(),
        "value_col": value_col,
        "colours": VIRIDIS,
        "domain_rings": page.domain_rings,
        "routes": [_simplified(line) for line in overlay.shapes] if overlay else [],
        "stops": [(round(a, 6), round(b, 6)) for a, b in overlay.stops] if overlay else [],
        "context": page.files,
        "tiles": None if tiles is None else {"url": tiles.url, "attribution": tiles.attribution},
        "cell_word": page.cell_word,
        "cell_label": "H3 cell" if resolutions else "grid cell",
    }


def _legend_parts(scale: _Scale) -> dict[str, object]:
    """The colour legend's template values: the Viridis ramp, ticks at percent positions, the ends."""
    lo, hi = scale.lo, scale.hi
    return {
        "ramp": ", ".join(
            f"rgb({r},{g},{b}) {100 * k / (len(VIRIDIS) - 1):.1f}%" for k, (r, g, b) in enumerate(VIRIDIS)
        ),
        "ticks": [(f"{100 * (t - lo) / (hi - lo) if hi > lo else 0:.2f}", _fmt(t)) for t in _ticks(lo, hi)],
        "fixed_scale": scale.fixed,
        "lo": _fmt(lo),
        "hi": _fmt(hi),
        "threshold": None if scale.threshold is None else _fmt(scale.threshold),
    }


def _render_map(page: _Page, payload: dict[str, object], title: str, header: MapHeader) -> str:
    """The page: :data:`TEMPLATE` rendered with the payload, the legend and Leaflet inlined."""
    css, js, version = leaflet_assets()
    released, overlay = page.released, page.overlay
    return render_page(
        TEMPLATE,
        title=title,
        legend=page.legend,
        header=header,
        **_legend_parts(page.scale),
        unit=_unit(page.legend),
        has_domain=bool(page.domain_rings),
        has_routes=overlay is not None and bool(overlay.shapes),
        has_stops=overlay is not None and bool(overlay.stops),
        context_names=[str(c["name"]) for c in page.files],
        resolutions=sorted(set(released.resolutions)),
        has_ci=released.has_ci,
        gtfs_source=None if overlay is None else overlay.source,
        has_tiles=page.tiles is not None,
        cell_word=page.cell_word,
        cell_label_article="an H3 cell" if released.resolutions else "a grid cell id",
        data=payload,
        # Leaflet made safe inside inline <style> and <script> elements (then not escaped as text)
        leaflet_css=Markup(css.replace("</style", "<\\/style")),
        leaflet_js=Markup(js.replace("</script", "<\\/script").replace("<!--", "<\\!--")),
        leaflet_version=version,
    )


def _write_page(path: Path, page: str) -> None:
    """Write ``page`` to ``path`` (folders created), or :class:`InputError` in one line."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page, encoding="utf-8")
    except OSError as err:
        raise InputError(f"map: cannot write {path}: {err.strerror or err}") from None


def write_hat_map(
    frame: pl.DataFrame,
    path: Path,
    *,
    value_col: str = "mean_speed",
    title: str,
    legend: str,
    header: MapHeader,
    speed_max: float | None = None,
    interval_threshold: float | None = None,
    domain_cells: Sequence[str] | None = None,
    gtfs_dir: Path | None = None,
    context: Sequence[Path] = (),
    tiles: TileSource | None = DEFAULT_TILES,
    cell_rings: Mapping[str, list[LatLon]] | None = None,
    cell_word: str = "hexagon",
) -> None:
    """Write one HTML page (Leaflet inlined) showing ``value_col`` per hexagon, with a slot selector.

    ``frame`` has columns ``h3_cell`` (H3 index as hex string, any resolution: each cell is drawn at its own),
    ``slot`` (e.g. "09:00-10:00") and ``value_col``. A row whose value is null or not finite is a released HAT
    whose mean was withheld (drawn "count only"), as is a row with ``clamped`` true; a missing (cell, slot) row is
    "not released in this slot". Optional: ``ci95_low``/``ci95_high`` (the 95% interval), ``noisy_vehicle_days``
    and ``resolution`` (checked against the cell).

    ``header`` states the release (:class:`MapHeader`). ``speed_max`` (U) fixes the colour scale to [0, U]; without it the scale
    spans the data. Cells whose interval is wider than ``interval_threshold`` (default U/2) are hatched.
    ``domain_cells``, ``gtfs_dir`` (a GTFS folder or zip) and ``context`` (GeoJSON files) add public context;
    ``tiles`` is the basemap (None: none). ``cell_rings``: the outline of each cell of another grid than H3
    (``h3_cell`` then holds its id; the page calls the cells ``cell_word``, e.g. "square"). Raises :class:`InputError` on missing columns, invalid cells, duplicate
    (cell, slot) rows, an unusable GTFS feed or context file.
    """
    data = _check_frame(frame, value_col)
    _check_positive("speed_max", speed_max)
    _check_positive("interval_threshold", interval_threshold)
    overlay = gtfs_overlay(gtfs_dir) if gtfs_dir is not None else None
    files = [read_context(p) for p in context]
    released = _released(data, frame, cell_rings)
    scale = _scale(released.grids["value"], speed_max, interval_threshold, released.has_ci)
    domain_rings = _domain_rings(domain_cells, released.cells)
    page = _Page(released, scale, overlay, files, domain_rings, legend, tiles, cell_word)
    _write_page(path, _render_map(page, _payload(page, value_col), title, header))
