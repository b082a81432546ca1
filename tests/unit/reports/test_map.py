"""The HAT map: Leaflet inlined (opens offline), every cell and slot embedded as strict JSON, honest states.

The browser tests render pages in headless Chromium, with basemap tiles from a tile server started here on
127.0.0.1, and check what was requested, what the DOM says and the screenshot's pixels. `.ci/run` installs
Debian's ``chromium`` where it is missing; without it those tests skip and say why.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import polars_h3 as plh3
import pytest
from PIL import Image
from tile_server import TILE, TileServer

from urbandp._reports.map import (
    CLAMPED,
    OFF,
    VALUE,
    VIRIDIS,
    WITHHELD,
    MapHeader,
    gtfs_overlay,
    parse_tiles,
    read_context,
    write_hat_map,
)
from urbandp.errors import InputError

SLOTS = [f"{h:02d}:00-{h + 1:02d}:00" for h in range(9, 21)]
CENTRE = "8742d9d69ffffff"  # Surat, resolution 7
GTFS = Path(__file__).parents[2] / "fixtures" / "gtfs-surat-mini"
PLAIN = MapHeader("plain", "Privacy-protected values (differential privacy).")


def cells_around(k: int) -> list[str]:
    """The resolution-7 cells within k steps of the centre of Surat (1 + 3k(k+1) cells)."""
    disk = pl.DataFrame({"c": [CENTRE]}).select(plh3.grid_disk("c", k).alias("d")).explode("d")
    return sorted(disk["d"].to_list())


def release_frame(cells: list[str], seed: int = 3) -> pl.DataFrame:
    """Every (cell, slot) with a value, some null (count released, mean withheld) and some rows absent."""
    rng = np.random.default_rng(seed)
    rows = [(c, s, float(rng.uniform(5, 40))) for c in cells for s in SLOTS]
    schema = {"h3_cell": pl.String, "slot": pl.String, "mean_speed": pl.Float64}
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    kept = rng.random(frame.height) > 0.1
    frame = frame.with_columns(mean_speed=pl.when(pl.Series(kept)).then(pl.col("mean_speed")))
    return frame.filter(pl.Series(rng.random(frame.height) > 0.2))


def embedded(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="hat-data">(.*?)</script>', page, re.S)
    assert match is not None
    return json.loads(match.group(1))


def test_self_contained_with_every_cell_and_slot(tmp_path: Path) -> None:
    cells = cells_around(3)
    frame = release_frame(cells)
    out = tmp_path / "map.html"
    write_hat_map(
        frame,
        out,
        header=MapHeader("plain", PLAIN.statement, "epsilon 15.23"),
        title="Average speed",
        legend="mean speed (km/h)",
        tiles=None,
    )
    page = out.read_text(encoding="utf-8")
    # Leaflet is inlined: no script, style sheet, image or frame is loaded from anywhere.
    assert re.search(r"<(link|img|iframe)\b|<script[^>]*\bsrc=|@import", page) is None
    assert "Leaflet" in page and "L.map(" in page and ".leaflet-pane" in page
    assert "differential privacy" in page.lower() and "epsilon 15.23" in page
    data = embedded(page)
    assert data["tiles"] is None
    present = sorted(frame["h3_cell"].unique().to_list())
    assert data["cells"] == present and len(data["rings"]) == len(present)
    assert all(len(ring) == 6 for ring in data["rings"])  # H3 hexagons (no pentagon near Surat)
    assert data["slots"] == sorted(frame["slot"].unique().to_list())
    # Every value lands in its (slot, cell) place: absent rows are OFF, null values WITHHELD.
    lookup = {(c, s): v for c, s, v in frame.iter_rows()}
    for i, slot in enumerate(data["slots"]):
        for j, cell in enumerate(data["cells"]):
            key = (cell, slot)
            assert data["values"][i][j] == lookup.get(key)
            want = OFF if key not in lookup else (WITHHELD if lookup[key] is None else VALUE)
            assert (data["state"][i][j] or OFF) == want


def test_light_for_hundreds_of_hexagons(tmp_path: Path) -> None:
    cells = cells_around(10)  # 331 cells x 12 slots
    out = tmp_path / "map.html"
    write_hat_map(release_frame(cells), out, header=PLAIN, title="t", legend="mean speed")
    assert out.stat().st_size < 2_000_000


def test_text_is_escaped(tmp_path: Path) -> None:
    frame = pl.DataFrame({"h3_cell": [CENTRE], "slot": ["</script><b>x"], "v": [1.0]})
    out = tmp_path / "map.html"
    write_hat_map(
        frame,
        out,
        value_col="v",
        header=MapHeader("plain", "s", "</p>"),
        title="<i>title</i>",
        legend="a & b",
    )
    page = out.read_text()
    assert "<i>title</i>" not in page and "&lt;i&gt;title&lt;/i&gt;" in page
    assert embedded(page)["slots"] == ["</script><b>x"]


def test_nan_clamped_and_empty(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "h3_cell": [CENTRE] * 3,
            "slot": SLOTS[:3],
            "mean_speed": [float("nan"), 3.0, 65.0],
            "clamped": [False, False, True],
        }
    )
    out = tmp_path / "map.html"
    write_hat_map(frame, out, header=PLAIN, title="t", legend="l")
    data = embedded(out.read_text())
    assert data["values"] == [[None], [3.0], [65.0]]
    assert data["state"] == [[WITHHELD], [VALUE], [CLAMPED]]
    empty = pl.DataFrame(schema={"h3_cell": pl.String, "slot": pl.String, "mean_speed": pl.Float64})
    write_hat_map(empty, out, title="t", legend="l", header=MapHeader("dp", "eps 1", empty="threshold 40"))
    page = out.read_text()
    assert embedded(page)["cells"] == []
    assert 'id="empty-state"' in page and "threshold 40" in page and "inf" not in page.split("<style")[0]


def test_bad_frames_raise_input_error(tmp_path: Path) -> None:
    out = tmp_path / "map.html"
    with pytest.raises(InputError, match="missing column"):
        write_hat_map(
            pl.DataFrame({"h3_cell": [CENTRE], "slot": ["a"]}), out, header=PLAIN, title="t", legend="l"
        )
    with pytest.raises(InputError, match="not H3 cells"):
        write_hat_map(
            pl.DataFrame({"h3_cell": ["nonsense"], "slot": ["a"], "mean_speed": [1.0]}),
            out,
            header=PLAIN,
            title="t",
            legend="l",
        )
    with pytest.raises(InputError, match="more than one row"):
        write_hat_map(
            pl.DataFrame({"h3_cell": [CENTRE] * 2, "slot": ["a"] * 2, "mean_speed": [1.0, 2.0]}),
            out,
            header=PLAIN,
            title="t",
            legend="l",
        )


def with_intervals(frame: pl.DataFrame, widths: list[float]) -> pl.DataFrame:
    """Add ci95_low/ci95_high around each value, cycling through ``widths``."""
    w = pl.Series([widths[i % len(widths)] for i in range(frame.height)])
    return frame.with_columns(
        ci95_low=pl.col("mean_speed") - w / 2, ci95_high=pl.col("mean_speed") + w / 2, resolution=pl.lit(7)
    )


def test_colour_scale_is_fixed_to_zero_and_u_with_interval_threshold(tmp_path: Path) -> None:
    frame = with_intervals(release_frame(cells_around(2)), [4.0, 40.0])
    out = tmp_path / "map.html"
    write_hat_map(frame, out, header=PLAIN, title="t", legend="mean speed (km/h)", speed_max=65.0)
    page = out.read_text()
    data = embedded(page)
    assert (data["min"], data["max"], data["fixed_scale"]) == (0.0, 65.0, True)
    assert data["interval_threshold"] == 32.5
    assert "wider than 32.5 km/h" in page and ">65</span>" in page and ">0</span>" in page
    write_hat_map(
        frame,
        out,
        header=PLAIN,
        title="t",
        legend="mean speed (km/h)",
        speed_max=65.0,
        interval_threshold=10.0,
    )
    assert embedded(out.read_text())["interval_threshold"] == 10.0
    write_hat_map(
        frame.drop("ci95_low", "ci95_high"), out, header=PLAIN, title="t", legend="l", speed_max=65.0
    )
    page = out.read_text()
    assert embedded(page)["interval_threshold"] is None and embedded(page)["low"] is None
    assert "too uncertain" not in page.split('<script type="application/json"')[0].split("<body")[1]
    with pytest.raises(InputError, match="speed_max"):
        write_hat_map(frame, out, header=PLAIN, title="t", legend="l", speed_max=float("inf"))


def test_embedded_json_is_strict(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "h3_cell": [CENTRE] * 3,
            "slot": SLOTS[:3],
            "mean_speed": [1.0, float("inf"), 3.0],
            "ci95_low": [float("nan"), 0.0, float("-inf")],
            "ci95_high": [2.0, 9.0, 4.0],
            "noisy_vehicle_days": [5.0, float("nan"), 7.0],
        }
    )
    out = tmp_path / "map.html"
    write_hat_map(frame, out, header=PLAIN, title="t", legend="l", speed_max=65.0)
    text = re.search(r'id="hat-data">(.*?)</script>', out.read_text(), re.S).group(1)  # type: ignore[union-attr]

    def refuse(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    data = json.loads(text, parse_constant=refuse)
    assert data["values"] == [[1.0], [None], [3.0]]
    assert data["low"] == [[None], [0.0], [None]]
    assert data["vehicle_days"] == [[5.0], [None], [7.0]]


def test_cells_at_different_resolutions_are_drawn_at_their_own(tmp_path: Path) -> None:
    fine = cells_around(1)
    far = cells_around(6)[0]
    parent = pl.DataFrame({"c": [far]}).select(plh3.cell_to_parent("c", 6))["c"][0]
    frame = pl.DataFrame({"h3_cell": [*fine, parent], "slot": "a", "mean_speed": 10.0})
    out = tmp_path / "map.html"
    write_hat_map(frame, out, header=PLAIN, title="t", legend="l", speed_max=65.0)
    page = out.read_text()
    data = embedded(page)
    assert dict(zip(data["cells"], data["resolutions"], strict=True)) == {**dict.fromkeys(fine, 7), parent: 6}
    # The coarse cell is drawn first (below), and its hexagon is about sqrt(7) times wider than a fine one.
    first = data["order"][0]
    assert data["cells"][first] == parent

    def width(ring: list[list[float]]) -> float:
        lons = [lon for _, lon in ring]
        return max(lons) - min(lons)

    assert width(data["rings"][first]) / width(data["rings"][data["order"][1]]) == pytest.approx(
        7**0.5, rel=0.1
    )
    assert "coarser H3 resolution" in page and "resolutions 6, 7" in page


def test_domain_outline_behind_the_released_cells(tmp_path: Path) -> None:
    released = cells_around(1)
    domain = cells_around(3)
    frame = pl.DataFrame({"h3_cell": released, "slot": "a", "mean_speed": 12.0})
    out = tmp_path / "map.html"
    write_hat_map(frame, out, header=PLAIN, title="t", legend="l", speed_max=65.0, domain_cells=domain)
    page = out.read_text()
    # One outline per domain cell that is not released (released ones are drawn as hexagons).
    assert len(embedded(page)["domain_rings"]) == len(set(domain) - set(released))
    assert "public domain" in page
    with pytest.raises(InputError, match="domain_cells"):
        write_hat_map(frame, out, header=PLAIN, title="t", legend="l", domain_cells=["zz"])


def test_a_large_domain_is_outlined_from_its_compacted_cover(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import urbandp._reports.map as map_module

    parent = pl.DataFrame({"c": [CENTRE]}).select(plh3.cell_to_parent("c", 6))["c"][0]
    children = pl.DataFrame({"c": [parent]}).select(plh3.cell_to_children("c", 7)).explode("c")["c"].to_list()
    frame = pl.DataFrame({"h3_cell": [cells_around(8)[0]], "slot": "a", "mean_speed": 1.0})
    monkeypatch.setattr(map_module, "MAX_DOMAIN_CELLS", 5)
    out = tmp_path / "map.html"
    write_hat_map(frame, out, header=PLAIN, title="t", legend="l", domain_cells=children)
    assert len(embedded(out.read_text())["domain_rings"]) == 1  # the 7 children drawn as their parent


def test_a_stated_resolution_must_match_the_cell(tmp_path: Path) -> None:
    frame = pl.DataFrame({"h3_cell": [CENTRE], "slot": ["a"], "mean_speed": [1.0], "resolution": [8]})
    with pytest.raises(InputError, match="resolution 7, but its row says resolution 8"):
        write_hat_map(frame, tmp_path / "map.html", header=PLAIN, title="t", legend="l")


def test_gtfs_overlay_reads_shapes_in_sequence_and_stops() -> None:
    overlay = gtfs_overlay(GTFS)
    shapes = pl.read_csv(GTFS / "shapes.txt")
    assert len(overlay.shapes) == shapes["shape_id"].n_unique() == 3
    assert sorted(len(s) for s in overlay.shapes) == sorted(
        shapes.group_by("shape_id").len()["len"].to_list()
    )
    # The generic node (location_type 3) has no coordinates and is skipped, as GTFS allows.
    assert len(overlay.stops) == 7
    assert all(21.0 < lat < 21.4 and 72.7 < lon < 72.95 for lat, lon in overlay.stops)


def zipped_feed(tmp_path: Path, inner: str = "") -> Path:
    """The fixture feed as agencies ship it: a gtfs.zip (files at the root, or in one folder ``inner``)."""
    path = tmp_path / "gtfs.zip"
    with zipfile.ZipFile(path, "w") as z:
        for f in GTFS.iterdir():
            z.write(f, f"{inner}{f.name}")
    return path


@pytest.mark.parametrize("inner", ["", "feed/"])
def test_gtfs_zip_reads_like_the_folder(tmp_path: Path, inner: str) -> None:
    overlay = gtfs_overlay(zipped_feed(tmp_path, inner))
    folder = gtfs_overlay(GTFS)
    assert (overlay.shapes, overlay.stops, overlay.source) == (folder.shapes, folder.stops, "gtfs.zip")


def test_gtfs_shapes_follow_shape_pt_sequence(tmp_path: Path) -> None:
    (tmp_path / "shapes.txt").write_text(
        "\ufeffshape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence\n"
        "a,21.3,72.3,30\na,21.1,72.1,2\nb,21.0,72.0,1\na,21.2,72.2,10\nb,21.0,72.5,2\n"
    )
    overlay = gtfs_overlay(tmp_path)
    assert overlay.shapes == [[(21.1, 72.1), (21.2, 72.2), (21.3, 72.3)], [(21.0, 72.0), (21.0, 72.5)]]
    assert overlay.stops == []


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "neither shapes.txt nor stops.txt"),
        ({"stops.txt": "stop_id,stop_lat\n1,21.0\n"}, "stops.txt line 2: stop_lon None is not a number"),
        (
            {"stops.txt": "stop_id,stop_lat,stop_lon\n1,21.0,72.0\n2,north,72.0\n"},
            "stops.txt line 3: stop_lat 'north' is not a number in \\[-90, 90\\]",
        ),
        ({"stops.txt": "stop_id,stop_lat,stop_lon\n1,91.0,72.0\n"}, "stop_lat '91.0' is not a number"),
        (
            {"shapes.txt": "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence\na,21,72,first\n"},
            "shape_pt_sequence 'first' is not an integer",
        ),
        (
            {"shapes.txt": "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence\na,,72,1\n"},
            "shape_pt_lat None is not a number",
        ),
    ],
)
def test_bad_gtfs_is_one_input_error(tmp_path: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match=message) as err:
        gtfs_overlay(tmp_path)
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="not found"):
        gtfs_overlay(tmp_path / "absent")
    (tmp_path / "bad.zip").write_text("not a zip")
    with pytest.raises(InputError, match="not a GTFS folder or readable zip"):
        gtfs_overlay(tmp_path / "bad.zip")


def test_the_map_reads_a_feed_as_the_domain_does_within_its_caps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One GTFS reader: a pipe is refused unopened (it would block), a table over the row cap unparsed."""
    from urbandp._records import gtfs_schedule

    fifo = tmp_path / "pipe.zip"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        gtfs_overlay(fifo)
    rows = len((GTFS / "shapes.txt").read_text().splitlines()) - 1
    monkeypatch.setattr(gtfs_schedule, "MAX_GTFS_ROWS", rows - 1)
    with pytest.raises(InputError, match=f"shapes.txt holds {rows:,} rows, more than {rows - 1:,}"):
        gtfs_overlay(zipped_feed(tmp_path))


def test_map_embeds_gtfs_routes_stops_and_geojson_context(tmp_path: Path) -> None:
    frame = pl.DataFrame({"h3_cell": cells_around(3), "slot": "a", "mean_speed": 20.0})
    ctx = tmp_path / "depots.geojson"
    ctx.write_text(
        json.dumps(
            {
                "type": "Feature",
                "properties": {},
                "geometry": {"type": "Point", "coordinates": [72.83, 21.19]},
            }
        )
    )
    out = tmp_path / "map.html"
    write_hat_map(
        frame,
        out,
        header=PLAIN,
        title="t",
        legend="l",
        speed_max=65.0,
        gtfs_dir=zipped_feed(tmp_path),
        context=[ctx],
    )
    page = out.read_text()
    data = embedded(page)
    assert len(data["routes"]) == 3 and len(data["stops"]) == 7
    assert (
        data["context"][0]["name"] == "depots.geojson" and data["context"][0]["geojson"]["type"] == "Feature"
    )
    assert "gtfs.zip" in page and "routes (GTFS shapes)" in page and "context: depots.geojson" in page
    with pytest.raises(InputError, match="gtfs"):
        write_hat_map(frame, out, header=PLAIN, title="t", legend="l", gtfs_dir=tmp_path / "nope")
    (tmp_path / "bad.geojson").write_text('{"type": "Banana"}')
    with pytest.raises(InputError, match="not GeoJSON"):
        read_context(tmp_path / "bad.geojson")
    with pytest.raises(InputError, match="not found"):
        read_context(tmp_path / "absent.geojson")
    named = tmp_path / "routes.geojson"
    named.write_text(json.dumps({"type": "FeatureCollection", "name": " CapMetro routes ", "features": []}))
    assert read_context(named)["name"] == "CapMetro routes"  # the file's own name member, when it has one
    named.write_text(json.dumps({"type": "FeatureCollection", "name": 7, "features": []}))
    assert read_context(named)["name"] == "routes.geojson"
    projected = {"type": "LineString", "coordinates": [[3100586.4, 10031916.7], [3100663.0, 10032132.1]]}
    named.write_text(
        json.dumps(
            {
                "type": "FeatureCollection",
                "features": [{"type": "Feature", "properties": {}, "geometry": projected}],
            }
        )
    )
    with pytest.raises(InputError, match=r"position \[3100586.4, 10031916.7\] is not longitude/latitude"):
        read_context(named)  # State Plane feet: refused, not drawn off the globe
    named.write_text(json.dumps({"type": "LineString", "coordinates": [[-97.7], [-97.8, 30.2]]}))
    with pytest.raises(InputError, match="a position that is not") as err:
        read_context(named)  # walked as a domain's GeoJSON: a malformed geometry is refused, not drawn
    assert err.value.parameters == ("context",)
    fifo = tmp_path / "pipe.geojson"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file") as err:
        read_context(fifo)  # refused unopened, as every public file: reading a pipe would block
    assert err.value.parameters == ("context",)


def test_tiles_option() -> None:
    osm = parse_tiles(None)
    assert osm is not None and osm.url == "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
    assert "OpenStreetMap" in osm.attribution and parse_tiles("osm") == osm
    assert parse_tiles("none") is None
    own = parse_tiles("http://127.0.0.1:8080/{z}/{x}/{y}.png")
    assert own is not None and "127.0.0.1:8080" in own.attribution
    for bad in ("tiles.example.org", "https://tiles.example.org/{z}.png", "ftp://x/{z}/{x}/{y}"):
        with pytest.raises(InputError, match="XYZ URL template"):
            parse_tiles(bad)


def test_header_states(tmp_path: Path) -> None:
    frame = pl.DataFrame({"h3_cell": [CENTRE], "slot": ["a"], "mean_speed": [12.0]})
    out = tmp_path / "map.html"
    write_hat_map(
        frame, out, title="t", legend="l", header=MapHeader("notdp", "NOT differentially private: K read")
    )
    page = out.read_text()
    assert 'class="state notdp"' in page and "NOT differentially private: K read" in page
    assert 'data-state="notdp"' in page and "Differentially private</strong>" not in page
    write_hat_map(
        frame, out, title="t", legend="l", header=MapHeader("dp", "epsilon 1 per day, 4 per window")
    )
    page = out.read_text()
    assert 'class="state dp"' in page and "<strong>Differentially private</strong>: epsilon 1 per day" in page


# --- in a real browser --------------------------------------------------------------------------------

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
browser_only = pytest.mark.skipif(
    BROWSER is None, reason="no headless Chromium on this machine (.ci/run installs Debian's chromium)"
)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]
WAIT = "--virtual-time-budget=6000"  # let the tiles load and the script run before the DOM or pixels are read
HATCH = (0x8D, 0x97, 0xA3)  # the hatch stripes' colour in the template
NOT_DP_RED = (198, 40, 40)
EMPTY_AMBER = (255, 244, 214)
DP_GREEN = (230, 244, 238)


def browser(*args: str) -> subprocess.CompletedProcess[str]:
    assert BROWSER is not None
    return subprocess.run(
        [BROWSER, *FLAGS, "--enable-logging=stderr", "--v=0", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def dom(url: str) -> str:
    return browser(WAIT, "--dump-dom", url).stdout


def screenshot(url: str, png: Path) -> np.ndarray:
    """RGB pixels of ``url`` rendered in a 1200 x 900 window."""
    browser(WAIT, "--window-size=1200,900", f"--screenshot={png}", url)
    return np.asarray(Image.open(png).convert("RGB"), dtype=np.int16)


def near(pixels: np.ndarray, colour: tuple[int, int, int], tol: int = 12) -> np.ndarray:
    return np.abs(pixels - np.array(colour)).sum(axis=2) < tol


@pytest.fixture(scope="module")
def tile_server() -> Iterator[TileServer]:
    server = TileServer()
    yield server
    server.close()


def viridis_lut(over: tuple[int, int, int] | None = None, opacity: float = 1.0) -> np.ndarray:
    """256 colours of the template's ramp (linear between the VIRIDIS stops), blended over ``over``."""
    stops = np.array(VIRIDIS, dtype=float)
    t = np.linspace(0, len(stops) - 1, 256)
    i = np.minimum(t.astype(int), len(stops) - 2)
    f = (t - i)[:, None]
    lut = stops[i] * (1 - f) + stops[i + 1] * f
    return lut if over is None else opacity * lut + (1 - opacity) * np.array(over, dtype=float)


def on_ramp(shot: np.ndarray, lut: np.ndarray, tol: float = 8) -> tuple[int, int]:
    """(pixels close to the ramp, distinct ramp sixteenths among them) on a 1-in-6 sample of ``shot``."""
    sample = shot[::6, ::6].reshape(-1, 3).astype(float)
    dist = np.linalg.norm(sample[:, None, :] - lut[None, :, :], axis=2)
    ok = dist.min(axis=1) < tol
    return int(ok.sum()), len(np.unique(dist.argmin(axis=1)[ok] // 16))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory, tile_server: TileServer) -> dict[str, object]:
    """One page (values, wide intervals, withheld means, domain outline, GTFS) on the test tiles, two slots."""
    tmp = tmp_path_factory.mktemp("browser")
    frame = with_intervals(release_frame(cells_around(3), seed=5), [4.0, 6.0, 50.0])
    page = tmp / "map.html"
    before = len(tile_server.requests)
    write_hat_map(
        frame,
        page,
        title="Average bus speed",
        legend="mean speed (km/h)",
        header=MapHeader("dp", "epsilon 1 per day"),
        speed_max=65.0,
        domain_cells=cells_around(5),
        gtfs_dir=GTFS,
        tiles=parse_tiles(tile_server.url),
    )
    shots = {
        "slot0": screenshot(f"{page.as_uri()}#slot=0", tmp / "a.png"),
        "slot5": screenshot(f"{page.as_uri()}#slot={SLOTS[5]}", tmp / "b.png"),
    }
    return {
        **shots,
        "dom": dom(f"{page.as_uri()}#slot=0"),
        "tiles": tile_server.requests[before:],
        "frame": frame,
    }


@browser_only
def test_tiles_are_requested_from_the_server_and_drawn(rendered: dict[str, object]) -> None:
    tiles = rendered["tiles"]
    assert isinstance(tiles, list) and len(tiles) >= 2
    assert all(re.fullmatch(r"/\d+/\d+/\d+\.png", t) for t in tiles)
    shot = rendered["slot0"]
    assert isinstance(shot, np.ndarray) and shot.shape == (900, 1200, 3)
    assert near(shot, TILE).sum() > 5_000  # the basemap shows between and around the hexagons
    page = rendered["dom"]
    assert isinstance(page, str)
    loaded = re.search(r'data-tiles-loaded="(\d+)"', page)
    assert loaded is not None and int(loaded.group(1)) >= 2 and 'data-tiles-failed="0"' in page


@browser_only
def test_hexagons_routes_and_stops_are_drawn(rendered: dict[str, object]) -> None:
    shot = rendered["slot0"]
    assert isinstance(shot, np.ndarray)
    count, distinct = on_ramp(shot, viridis_lut(TILE, 0.82))
    assert count > 300 and distinct >= 5
    page = rendered["dom"]
    assert isinstance(page, str)
    assert len(re.findall(r'<path class="route[^"]*"', page)) == 1  # the three shapes as one polyline layer
    assert len(re.findall(r'<path class="stop[^"]*"', page)) == 7
    assert 'class="state dp"' in page and 'data-ready="1"' in page


@browser_only
def test_wide_intervals_are_hatched_and_withheld_means_dashed(rendered: dict[str, object]) -> None:
    shot, page, frame = rendered["slot0"], rendered["dom"], rendered["frame"]
    assert isinstance(shot, np.ndarray) and isinstance(page, str) and isinstance(frame, pl.DataFrame)
    # the stripes inside the map (left of the legend), drawn opaque over the basemap
    assert near(shot[:, :850], HATCH).sum() > 300
    first = frame.filter(pl.col("slot") == SLOTS[0])
    withheld = first.filter(pl.col("mean_speed").is_null()).height
    assert withheld > 0 and len(re.findall(r'data-kind="count-only"', page)) == withheld
    wide = first.filter(pl.col("ci95_high") - pl.col("ci95_low") > 32.5).height
    assert len(re.findall(r'data-kind="wide"', page)) == wide
    # The counter counts what is drawn: every row of the slot is a drawn hexagon.
    assert f'data-drawn="{first.height}"' in page
    assert f"{first.height} hexagons released in this slot" in page
    assert f"{withheld} count only (mean withheld)" in page


@browser_only
def test_slot_switching_changes_the_map(rendered: dict[str, object]) -> None:
    a, b = rendered["slot0"], rendered["slot5"]
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    assert (np.abs(a - b).sum(axis=2) > 30).mean() > 0.02


@browser_only
def test_offline_the_hexagons_stay_and_the_page_says_why(tmp_path: Path) -> None:
    frame = release_frame(cells_around(2))
    page = tmp_path / "map.html"
    # a closed port: every tile fails, as offline
    write_hat_map(
        frame,
        page,
        header=PLAIN,
        title="t",
        legend="l",
        speed_max=65.0,
        tiles=parse_tiles("http://127.0.0.1:9/{z}/{x}/{y}.png"),
    )
    text = dom(page.as_uri())
    assert re.search(r'data-tiles-failed="[1-9]', text) and 'data-tiles-loaded="0"' in text
    assert "Basemap tiles could not be loaded" in text
    assert re.search(r'data-drawn="[1-9]', text)


@browser_only
def test_a_link_pins_a_cells_tooltip_with_value_interval_and_resolution(tmp_path: Path) -> None:
    cells = cells_around(1)
    frame = pl.DataFrame(
        {
            "h3_cell": cells,
            "slot": "09:00-10:00",
            "mean_speed": [12.5 + i for i in range(len(cells))],
            "ci95_low": [2.25 + i for i in range(len(cells))],
            "ci95_high": [60.0] * len(cells),
            "noisy_vehicle_days": [17.0] * len(cells),
        }
    )
    out = tmp_path / "map.html"
    write_hat_map(frame, out, header=PLAIN, title="t", legend="mean speed (km/h)", speed_max=65.0, tiles=None)
    cell = cells[2]
    text = dom(f"{out.as_uri()}#slot=0&cell={cell}")
    tip = re.search(r'<div id="tooltip" style="[^"]*display: block[^"]*">(.*?)</div>', text, re.S)
    assert tip is not None
    line = " ".join(re.sub(r"<[^>]+>", " ", tip.group(1)).split())
    assert "mean speed (km/h) 14.50 km/h" in line
    assert "95% interval 4.25 .. 60.00 km/h (too wide to colour)" in line
    assert f"noisy vehicle-days 17 H3 cell {cell} (resolution 7)" in line
    assert len(re.findall(r'data-kind="wide"', text)) == len(cells)  # every interval is wider than 32.5
