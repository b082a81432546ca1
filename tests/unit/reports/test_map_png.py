"""The static PNGs of a HAT release: the route context of the web map, light grey under the hexagons."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import polars_h3 as plh3
from PIL import Image

from urbandp._reports.map import MapHeader
from urbandp._reports.map_png import ROUTE_GREY, context_lines, write_slot_pngs

GTFS = Path(__file__).parents[2] / "fixtures" / "gtfs-surat-mini"
CENTRE = "8742d9d69ffffff"  # Surat, resolution 7 (the fixture feed's routes cross it)
HEADER = MapHeader("dp", "epsilon 1 per day")


def _frame() -> pl.DataFrame:
    cells = pl.DataFrame({"c": [CENTRE]}).select(plh3.grid_disk("c", 1).alias("d")).explode("d")["d"]
    return pl.DataFrame({"h3_cell": cells, "slot": "08:00-09:00", "mean_speed": 20.0 + np.arange(len(cells))})


def _grey_pixels(path: Path) -> int:
    """Pixels within a few levels of the route grey: only the routes are drawn in it."""
    rgb = np.asarray(Image.open(path).convert("RGB"), dtype=int)
    grey = np.array([int(ROUTE_GREY[i : i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(rgb - grey).sum(axis=2) <= 12).sum())


def test_the_feed_and_geojson_context_are_drawn_grey_under_the_hexagons(tmp_path: Path) -> None:
    frame = _frame()
    bare = write_slot_pngs(frame, tmp_path / "bare", header=HEADER, speed_max=60.0)
    assert [p.name for p in bare] == ["slot_08-00-09-00.png"]
    text_and_edges = _grey_pixels(bare[0])  # anti-aliased text and edges pass through the grey too
    with_feed = write_slot_pngs(frame, tmp_path / "feed", header=HEADER, speed_max=60.0, gtfs=GTFS)
    assert _grey_pixels(with_feed[0]) > text_and_edges + 300
    # a GeoJSON route (as --context gives it), crossing the frame west to east south of the centre
    route = tmp_path / "route.geojson"
    coords = [[72.70, 21.16], [72.95, 21.16]]
    route.write_text(
        json.dumps({"type": "Feature", "geometry": {"type": "LineString", "coordinates": coords}})
    )
    assert context_lines(None, [route]) == [[(21.16, 72.70), (21.16, 72.95)]]
    with_context = write_slot_pngs(frame, tmp_path / "ctx", header=HEADER, speed_max=60.0, context=[route])
    assert _grey_pixels(with_context[0]) > text_and_edges + 150
    # under the hexagons: the hexagons' pixels are those of the picture without context
    a = np.asarray(Image.open(bare[0]).convert("RGB"), dtype=int)
    b = np.asarray(Image.open(with_context[0]).convert("RGB"), dtype=int)
    centre_row = a.shape[0] // 2
    assert (a[centre_row - 40 : centre_row + 40] == b[centre_row - 40 : centre_row + 40]).mean() > 0.9


def test_context_lines_read_polygons_as_outlines_and_the_feed_shapes_in_order(tmp_path: Path) -> None:
    area = tmp_path / "area.geojson"
    ring = [[72.8, 21.1], [72.9, 21.1], [72.9, 21.2], [72.8, 21.1]]
    area.write_text(json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {}, "geometry": {"type": "MultiPolygon", "coordinates": [[ring]]}},
        {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [72.8, 21.1]}},
    ]}))  # fmt: skip
    assert context_lines(None, [area]) == [[(lat, lon) for lon, lat in ring]]
    shapes = context_lines(GTFS)
    assert len(shapes) == pl.read_csv(GTFS / "shapes.txt")["shape_id"].n_unique() == 3
