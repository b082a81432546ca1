"""The HAT map: one self-contained HTML file, every cell and slot present, data embedded as strict JSON.

The last tests render the page in headless Chromium and check the screenshot's pixels; `.ci/run` installs
Debian's ``chromium`` where it is missing, and without it those tests skip and say why.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import polars_h3 as plh3
import pytest
from PIL import Image

from urbandp.errors import InputError
from urbandp.reports.map import VIRIDIS, domain_cells_for_bbox, gtfs_overlay, write_hat_map

SLOTS = [f"{h:02d}:00-{h + 1:02d}:00" for h in range(9, 21)]
CENTRE = "8742d9d69ffffff"  # Surat, resolution 7


def cells_around(k: int) -> list[str]:
    """The resolution-7 cells within k steps of the centre of Surat (1 + 3k(k+1) cells)."""
    disk = pl.DataFrame({"c": [CENTRE]}).select(plh3.grid_disk("c", k).alias("d")).explode("d")
    return sorted(disk["d"].to_list())


def release_frame(cells: list[str], seed: int = 3) -> pl.DataFrame:
    """Every (cell, slot) with a value, some null (not released) and a few rows absent."""
    rng = np.random.default_rng(seed)
    rows = [(c, s, float(rng.uniform(5, 40))) for c in cells for s in SLOTS]
    schema = {"h3_cell": pl.String, "slot": pl.String, "mean_speed": pl.Float64}
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    released = rng.random(frame.height) > 0.2
    frame = frame.with_columns(mean_speed=pl.when(pl.Series(released)).then(pl.col("mean_speed")))
    return frame.filter(pl.Series(rng.random(frame.height) > 0.05))


def embedded(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="hat-data">(.*?)</script>', page, re.S)
    assert match is not None
    return json.loads(match.group(1))


def test_self_contained_with_every_cell_and_slot(tmp_path: Path) -> None:
    cells = cells_around(3)
    frame = release_frame(cells)
    out = tmp_path / "map.html"
    write_hat_map(
        frame, out, title="Average speed", legend="mean speed (km/h)", subtitle="epsilon per day 15.23"
    )
    page = out.read_text(encoding="utf-8")
    # Nothing is loaded from anywhere: no URLs at all, no external scripts, styles, images or fonts.
    assert re.search(r"https?://", page) is None
    # (url(#...) only names the hatch pattern inside the page.)
    assert re.search(r"<(link|img|iframe)\b|\bsrc=|@import|url\((?!#)", page) is None
    assert "differential privacy" in page.lower() and "epsilon per day 15.23" in page
    data = embedded(page)
    present = sorted(frame["h3_cell"].unique().to_list())
    assert data["cells"] == present
    assert data["slots"] == sorted(frame["slot"].unique().to_list())
    for cell in present:
        assert f'data-cell="{cell}"' in page
    for slot in data["slots"]:
        assert slot in page
    # Every value lands in its (slot, cell) place; absent rows and nulls are null.
    lookup = {(c, s): v for c, s, v in frame.iter_rows()}
    for i, slot in enumerate(data["slots"]):
        for j, cell in enumerate(data["cells"]):
            assert data["values"][i][j] == lookup.get((cell, slot))
    finite = frame["mean_speed"].drop_nulls()
    assert data["min"] == finite.min() and data["max"] == finite.max()


def test_light_for_hundreds_of_hexagons(tmp_path: Path) -> None:
    cells = cells_around(10)  # 331 cells x 12 slots
    assert len(cells) == 331
    out = tmp_path / "map.html"
    write_hat_map(release_frame(cells), out, title="t", legend="mean speed")
    assert out.stat().st_size < 2_000_000


def test_text_is_escaped(tmp_path: Path) -> None:
    frame = pl.DataFrame({"h3_cell": [CENTRE], "slot": ["</script><b>x"], "v": [1.0]})
    out = tmp_path / "map.html"
    write_hat_map(frame, out, value_col="v", title="<i>title</i>", legend="a & b", subtitle="</p>")
    page = out.read_text()
    assert "<i>title</i>" not in page and "&lt;i&gt;title&lt;/i&gt;" in page
    assert embedded(page)["slots"] == ["</script><b>x"]


def test_nan_and_empty(tmp_path: Path) -> None:
    frame = pl.DataFrame({"h3_cell": [CENTRE, CENTRE], "slot": SLOTS[:2], "mean_speed": [float("nan"), 3.0]})
    out = tmp_path / "map.html"
    write_hat_map(frame, out, title="t", legend="l")
    assert embedded(out.read_text())["values"] == [[None], [3.0]]
    empty = pl.DataFrame(schema={"h3_cell": pl.String, "slot": pl.String, "mean_speed": pl.Float64})
    write_hat_map(empty, out, title="t", legend="l")
    assert embedded(out.read_text())["cells"] == []


def test_bad_frames_raise_input_error(tmp_path: Path) -> None:
    out = tmp_path / "map.html"
    with pytest.raises(InputError, match="missing column"):
        write_hat_map(pl.DataFrame({"h3_cell": [CENTRE], "slot": ["a"]}), out, title="t", legend="l")
    with pytest.raises(InputError, match="not H3 cells"):
        write_hat_map(
            pl.DataFrame({"h3_cell": ["nonsense"], "slot": ["a"], "mean_speed": [1.0]}),
            out,
            title="t",
            legend="l",
        )
    with pytest.raises(InputError, match="more than one row"):
        write_hat_map(
            pl.DataFrame({"h3_cell": [CENTRE] * 2, "slot": ["a"] * 2, "mean_speed": [1.0, 2.0]}),
            out,
            title="t",
            legend="l",
        )


GTFS = Path(__file__).parents[2] / "fixtures" / "gtfs-surat-mini"


def with_intervals(frame: pl.DataFrame, widths: list[float]) -> pl.DataFrame:
    """Add ci95_low/ci95_high around each value, cycling through ``widths``."""
    w = pl.Series([widths[i % len(widths)] for i in range(frame.height)])
    return frame.with_columns(
        ci95_low=pl.col("mean_speed") - w / 2, ci95_high=pl.col("mean_speed") + w / 2, resolution=pl.lit(7)
    )


def test_colour_scale_is_fixed_to_zero_and_u_with_interval_threshold(tmp_path: Path) -> None:
    frame = with_intervals(release_frame(cells_around(2)), [4.0, 40.0])
    out = tmp_path / "map.html"
    write_hat_map(frame, out, title="t", legend="mean speed (km/h)", speed_max=65.0)
    page = out.read_text()
    data = embedded(page)
    # The scale is [0, U] whatever the data span (here 5..40), and the default threshold is U/2.
    assert (data["min"], data["max"], data["fixed_scale"]) == (0.0, 65.0, True)
    assert data["interval_threshold"] == 32.5
    assert "wider than 32.5 km/h" in page and ">65</span>" in page and ">0</span>" in page
    lookup = {
        (c, s): (lo, hi)
        for c, s, lo, hi in frame.select("h3_cell", "slot", "ci95_low", "ci95_high").iter_rows()
    }
    for i, slot in enumerate(data["slots"]):
        for j, cell in enumerate(data["cells"]):
            assert (data["low"][i][j], data["high"][i][j]) == lookup.get((cell, slot), (None, None))
    assert set(data["resolutions"]) == {7}
    # An explicit threshold wins; without interval columns nothing is hatched and the legend does not mention it.
    write_hat_map(frame, out, title="t", legend="mean speed (km/h)", speed_max=65.0, interval_threshold=10.0)
    assert embedded(out.read_text())["interval_threshold"] == 10.0
    write_hat_map(frame.drop("ci95_low", "ci95_high"), out, title="t", legend="l", speed_max=65.0)
    page = out.read_text()
    assert embedded(page)["interval_threshold"] is None and embedded(page)["low"] is None
    assert "too uncertain" not in page.split("<script")[0]
    with pytest.raises(InputError, match="speed_max"):
        write_hat_map(frame, out, title="t", legend="l", speed_max=float("inf"))


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
    write_hat_map(frame, out, title="t", legend="l", speed_max=65.0)
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
    write_hat_map(frame, out, title="t", legend="l", speed_max=65.0)
    page = out.read_text()
    data = embedded(page)
    assert dict(zip(data["cells"], data["resolutions"], strict=True)) == {**dict.fromkeys(fine, 7), parent: 6}
    # The coarse cell is drawn first (below), and its hexagon is about sqrt(7) times wider than a fine one.
    order = re.findall(r'data-cell="([0-9a-f]+)" data-res="(\d)" d="([^"]+)"', page)
    assert order[0][:2] == (parent, "6") and [r for _, r, _ in order[1:]] == ["7"] * len(fine)

    def width(d: str) -> float:
        xs = [float(x) for x in re.findall(r"([\d.]+),[\d.]+", d)]
        return max(xs) - min(xs)

    assert width(order[0][2]) / width(order[1][2]) == pytest.approx(7**0.5, rel=0.1)
    assert "coarser H3 resolution" in page and "resolutions 6, 7" in page


def test_domain_cells_for_bbox_are_the_cells_whose_centre_is_inside() -> None:
    import h3

    lat, lon = 21.1892, 72.8277
    box = (lat - 0.05, lon - 0.06, lat + 0.05, lon + 0.06)
    cells = domain_cells_for_bbox(box, 7)
    assert cells == sorted(cells) and len(cells) > 20
    for cell in cells:
        c_lat, c_lon = h3.cell_to_latlng(cell)
        assert box[0] <= c_lat <= box[2] and box[1] <= c_lon <= box[3]
    # Neighbours of the domain whose centre lies outside the box are not in it.
    ring = {n for c in cells for n in h3.grid_disk(c, 1)} - set(cells)
    assert ring and all(
        not (box[0] <= la <= box[2] and box[1] <= lo <= box[3]) for la, lo in map(h3.cell_to_latlng, ring)
    )
    with pytest.raises(InputError, match="min_lat < max_lat"):
        domain_cells_for_bbox((lat, lon, lat - 1, lon + 1), 7)
    with pytest.raises(InputError, match="resolution"):
        domain_cells_for_bbox(box, 16)


def test_domain_outline_behind_the_released_cells(tmp_path: Path) -> None:
    released = cells_around(1)
    domain = cells_around(3)
    frame = pl.DataFrame({"h3_cell": released, "slot": "a", "mean_speed": 12.0})
    out = tmp_path / "map.html"
    write_hat_map(frame, out, title="t", legend="l", speed_max=65.0, domain_cells=domain)
    page = out.read_text()
    outline = re.search(r'<path class="domain" d="([^"]+)"/>', page)
    assert outline is not None
    # One subpath per domain cell that is not released (released ones are drawn as hexagons), drawn first.
    assert outline.group(1).count("M") == len(set(domain) - set(released))
    assert page.index('class="domain"') < page.index('class="hex')
    assert "public domain" in page
    with pytest.raises(InputError, match="domain_cells"):
        write_hat_map(frame, out, title="t", legend="l", domain_cells=["zz"])


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
        ({"stops.txt": "stop_id,stop_lat\n1,21.0\n"}, "stops.txt lacks column.*stop_lon"),
        ({"stops.txt": "stop_lat,stop_lon\n21.0,72.0\nnorth,72.0\n"}, "invalid coordinates, first on line 3"),
        ({"stops.txt": "stop_lat,stop_lon\n91.0,72.0\n"}, "invalid coordinates"),
        (
            {"shapes.txt": "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence\na,21,72,first\n"},
            "integer shape_pt_sequence",
        ),
        (
            {"shapes.txt": "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence\na,,72,1\n"},
            "invalid coordinates",
        ),
    ],
)
def test_bad_gtfs_is_one_input_error(tmp_path: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match=message) as err:
        gtfs_overlay(tmp_path)
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="not a directory"):
        gtfs_overlay(tmp_path / "absent")


def test_map_draws_gtfs_routes_and_stops(tmp_path: Path) -> None:
    frame = pl.DataFrame({"h3_cell": cells_around(3), "slot": "a", "mean_speed": 20.0})
    out = tmp_path / "map.html"
    write_hat_map(frame, out, title="t", legend="l", speed_max=65.0, gtfs_dir=GTFS)
    page = out.read_text()
    routes = re.search(r'<path class="route" d="([^"]+)"/>', page)
    stops = re.search(r'<path class="stop" d="([^"]+)"/>', page)
    assert routes is not None and stops is not None
    assert routes.group(1).count("M") >= 3  # three shapes, possibly split where they leave the map
    assert stops.group(1).count("h0") == 7
    assert page.index('class="hex') < page.index('class="route"')  # drawn above the values, not hiding them
    assert "gtfs-surat-mini" in page and "routes (GTFS shapes)" in page
    with pytest.raises(InputError, match="gtfs"):
        write_hat_map(frame, out, title="t", legend="l", gtfs_dir=tmp_path / "nope")


# --- in a real browser --------------------------------------------------------------------------------

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
browser_only = pytest.mark.skipif(
    BROWSER is None, reason="no headless Chromium on this machine (.ci/run installs Debian's chromium)"
)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]
HATCH = (0x8D, 0x97, 0xA3)  # the hatch stripes' colour in the template


def browser(*args: str) -> str:
    assert BROWSER is not None
    done = subprocess.run([BROWSER, *FLAGS, *args], capture_output=True, text=True, timeout=90, check=True)
    return done.stdout


def screenshot(page: Path, fragment: str, tmp_path: Path) -> np.ndarray:
    """RGB pixels of ``page#fragment`` rendered in a 1200 x 900 window."""
    png = tmp_path / f"shot-{re.sub(r'[^0-9a-z]', '_', fragment)}.png"
    browser("--window-size=1200,900", f"--screenshot={png}", f"{page.as_uri()}#{fragment}")
    return np.asarray(Image.open(png).convert("RGB"), dtype=np.int16)


def viridis_lut() -> np.ndarray:
    """256 colours of the template's ramp (linear between the VIRIDIS stops)."""
    stops = np.array(VIRIDIS, dtype=float)
    t = np.linspace(0, len(stops) - 1, 256)
    i = np.minimum(t.astype(int), len(stops) - 2)
    f = (t - i)[:, None]
    return stops[i] * (1 - f) + stops[i + 1] * f


def longest_ramp(pixels: np.ndarray) -> int:
    """Length in pixels of the longest horizontal run that walks the whole colour ramp from dark to yellow.

    A run is a sequence of pixels each within 20 (RGB distance) of a ramp colour, the ramp position never going
    back by more than a few steps, starting in the first 8% of the ramp and ending in the last 8%. Hexagons are
    too small and separated by strokes to form one; only the legend bar does.
    """
    lut = viridis_lut()
    dark = np.linalg.norm(pixels - lut[0], axis=2) < 25
    best = 0
    for y in np.unique(np.nonzero(dark)[0]):
        row = pixels[y].astype(float)
        dist = np.linalg.norm(row[:, None, :] - lut[None, :, :], axis=2)
        pos, ok = dist.argmin(axis=1), dist.min(axis=1) < 20
        start = None
        for x in range(len(row) + 1):
            good = x < len(row) and ok[x] and (start is None or pos[x] >= pos[x - 1] - 6)
            if good and start is None and pos[x] < 20:
                start = x
            elif not good and start is not None:
                if pos[x - 1] > 235:
                    best = max(best, x - start)
                start = None
    return best


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    """One page (values, wide intervals, domain outline, GTFS) rendered at two slots."""
    tmp = tmp_path_factory.mktemp("browser")
    frame = with_intervals(release_frame(cells_around(3), seed=5), [4.0, 6.0, 50.0])
    page = tmp / "map.html"
    write_hat_map(
        frame,
        page,
        title="Average bus speed",
        legend="mean speed (km/h)",
        subtitle="test release",
        speed_max=65.0,
        domain_cells=cells_around(5),
        gtfs_dir=GTFS,
    )
    return {"slot0": screenshot(page, "slot=0", tmp), "slot5": screenshot(page, f"slot={SLOTS[5]}", tmp)}


@browser_only
def test_page_is_not_blank(rendered: dict[str, np.ndarray]) -> None:
    shot = rendered["slot0"]
    assert shot.shape == (900, 1200, 3)
    background = (np.abs(shot - shot[0, 0]).sum(axis=2) < 8).mean()
    assert background < 0.95
    # Coloured hexagons: many pixels close to the ramp, in several distinct ramp colours.
    lut = viridis_lut()
    sample = shot[::6, ::6].reshape(-1, 3).astype(float)
    dist = np.linalg.norm(sample[:, None, :] - lut[None, :, :], axis=2)
    on_ramp = dist.min(axis=1) < 6
    assert on_ramp.sum() > 900
    assert len(np.unique(dist.argmin(axis=1)[on_ramp] // 16)) >= 5


@browser_only
def test_legend_ramp_is_drawn(rendered: dict[str, np.ndarray]) -> None:
    # The legend bar is 270 CSS pixels wide at this window size; hexagons never form a full ramp.
    assert longest_ramp(rendered["slot0"]) > 200


@browser_only
def test_wide_intervals_are_hatched(rendered: dict[str, np.ndarray]) -> None:
    stripes = (np.abs(rendered["slot0"] - np.array(HATCH)).sum(axis=2) < 12).sum()
    assert stripes > 500


@browser_only
def test_slot_switching_changes_the_map(rendered: dict[str, np.ndarray]) -> None:
    changed = (np.abs(rendered["slot0"] - rendered["slot5"]).sum(axis=2) > 30).mean()
    assert changed > 0.02


@browser_only
def test_script_counts_released_hexagons(tmp_path: Path) -> None:
    frame = release_frame(cells_around(2))
    out = tmp_path / "map.html"
    write_hat_map(frame, out, title="t", legend="l", speed_max=65.0)
    slot = SLOTS[4]
    dom = browser("--dump-dom", f"{out.as_uri()}#slot={slot}")
    released = frame.filter((pl.col("slot") == slot) & pl.col("mean_speed").is_not_null()).height
    total = frame["h3_cell"].n_unique()
    # The script ran: it chose the slot from the link, coloured the released hexagons and counted them.
    assert f"{released} of {total} hexagons released in this slot" in dom
    assert len(re.findall(r'class="hex"[^>]*style="fill: rgb\(', dom)) == released
    assert len(re.findall(r'class="hex off"', dom)) == total - released


def test_a_large_domain_is_outlined_from_its_compacted_cover(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import urbandp.reports.map as map_module

    parent = pl.DataFrame({"c": [CENTRE]}).select(plh3.cell_to_parent("c", 6))["c"][0]
    children = pl.DataFrame({"c": [parent]}).select(plh3.cell_to_children("c", 7)).explode("c")["c"].to_list()
    far = cells_around(8)[0]
    frame = pl.DataFrame({"h3_cell": [far], "slot": "a", "mean_speed": 1.0})
    monkeypatch.setattr(map_module, "MAX_DOMAIN_CELLS", 5)
    out = tmp_path / "map.html"
    write_hat_map(frame, out, title="t", legend="l", domain_cells=children)
    outline = re.search(r'<path class="domain" d="([^"]+)"/>', out.read_text())
    assert outline is not None and outline.group(1).count("M") == 1  # the 7 children drawn as their parent


def test_a_stated_resolution_must_match_the_cell(tmp_path: Path) -> None:
    frame = pl.DataFrame({"h3_cell": [CENTRE], "slot": ["a"], "mean_speed": [1.0], "resolution": [8]})
    with pytest.raises(InputError, match="resolution 7, but its row says resolution 8"):
        write_hat_map(frame, tmp_path / "map.html", title="t", legend="l")


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
    write_hat_map(frame, out, title="t", legend="mean speed (km/h)", speed_max=65.0)
    cell = cells[2]
    dom = browser("--dump-dom", f"{out.as_uri()}#slot=0&cell={cell}")
    tip = re.search(r'<div id="tooltip" style="[^"]*display: block[^"]*">(.*?)</div>', dom, re.S)
    assert tip is not None
    text = " ".join(re.sub(r"<[^>]+>", " ", tip.group(1)).split())
    assert "mean speed (km/h) 14.50" in text
    assert "95% interval 4.25 .. 60.00 km/h (too wide to colour)" in text
    assert f"noisy vehicle-days 17 H3 cell {cell} (resolution 7)" in text
    assert len(re.findall(r'class="hex wide', dom)) == len(cells)  # every interval is wider than 32.5
