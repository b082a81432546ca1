"""The maps shown in the README and docs/map.md, rendered here from real releases on a local tile server.

Each test makes a release with the real CLI, renders its map in headless Chromium with basemap tiles from
:class:`tile_server.TileServer` (``paper`` test tiles: no test reaches the internet), and checks the pixels: tiles
drawn, hexagons coloured from the ramp. With ``URBANDP_DOCS_IMG=docs/img`` the screenshots are also saved there
(that is how the images in the docs were made).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from tile_server import PAPER, TileServer
from urbandp_process import run_urbandp

from urbandp._reports.map import VIRIDIS

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no headless Chromium on this machine (.ci/run installs Debian's chromium)"
)
GTFS = Path(__file__).parents[2] / "fixtures" / "gtfs-surat-mini"
CAPMETRO_ROUTES = Path(__file__).parents[2] / "fixtures" / "capmetro-routes-2015.geojson"  # provenance: .md
CONTEXT_PURPLE = (123, 50, 148)
FOUR_DAYS = "2016-11-24,2016-11-25,2016-11-27,2016-12-16"


@pytest.fixture(scope="module")
def tiles() -> Iterator[TileServer]:
    server = TileServer("paper")
    yield server
    server.close()


def shoot(page: Path, png: Path, fragment: str = "") -> np.ndarray:
    assert BROWSER is not None
    subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--virtual-time-budget=8000", "--window-size=1280,860", f"--screenshot={png}", page.as_uri() + fragment],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    docs = os.environ.get("URBANDP_DOCS_IMG")
    if docs:
        shutil.copyfile(png, Path(docs) / png.name)
    return np.asarray(Image.open(png).convert("RGB"), dtype=np.int16)


def ramp_pixels(shot: np.ndarray, opacity: float = 0.82) -> int:
    """Pixels of the map area within 8 (RGB distance) of the viridis ramp blended over the paper tiles."""
    stops = np.array(VIRIDIS, dtype=float)
    t = np.linspace(0, len(stops) - 1, 256)
    i = np.minimum(t.astype(int), len(stops) - 2)
    lut = stops[i] * (1 - (t - i)[:, None]) + stops[i + 1] * (t - i)[:, None]
    lut = opacity * lut + (1 - opacity) * np.array(PAPER, dtype=float)
    sample = shot[200::4, :880:4].reshape(-1, 3).astype(float)
    return int((np.linalg.norm(sample[:, None, :] - lut[None, :, :], axis=2).min(axis=1) < 8).sum())


def test_austin_four_days_on_basemap_tiles(shared_data: Path, tiles: TileServer, tmp_path: Path) -> None:
    """The README's map: four real Austin days (CapMetro AVL), epsilon 10 per vehicle-day over CapMetro's routes
    as the public domain (L2-normalised contributions; hexagons whose interval is wider than 10 km/h hatched), with
    the published route lines as ``--context`` (no 2016 GTFS feed is available offline: see the fixture's .md)."""
    out = tmp_path / "austin"
    files = [str(shared_data / "austin-avl" / f"{d}.csv") for d in FOUR_DAYS.split(",")]
    res = run_urbandp(
        "release", *files, "--speed-unit", "m/s", "--dates", FOUR_DAYS, "--epsilon-per-day", "10", "--hours", "6-22",
        "--domain-geojson", str(CAPMETRO_ROUTES), "--domain-ring", "1", "--contribution-bounding", "l2",
        "--out", str(out), "--tiles", tiles.url, "--context", str(CAPMETRO_ROUTES),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    before = len(tiles.requests)
    shot = shoot(out / "map.html", tmp_path / "map-austin.png", "#slot=07:00-08:00")  # the busiest hour
    assert len(tiles.requests) > before
    assert (np.abs(shot - np.array(PAPER)).sum(axis=2) < 6).sum() > 20_000  # the basemap is drawn
    # and the useful hexagons (interval at most 10 km/h wide: 10-28 per slot at this zoom, 115 ramp pixels) are
    # coloured on it; the others are hatched or count only
    assert ramp_pixels(shot) > 80
    routes = (np.abs(shot[200:, :880] - np.array(CONTEXT_PURPLE)).sum(axis=2) < 60).sum()
    assert routes > 2_000  # the bus routes are drawn over them


def test_synthetic_fleet_with_gtfs_routes(tiles: TileServer, tmp_path: Path) -> None:
    """docs/map.md: the demo's synthetic fleet in Surat with the GTFS feed's routes and stops (a gtfs.zip)."""
    fleet = tmp_path / "fleet.parquet"
    assert (
        run_urbandp("synth", "fleet", "--vehicles", "120", "--days", "3", "--out", str(fleet)).returncode == 0
    )
    feed = tmp_path / "gtfs.zip"
    shutil.make_archive(str(feed.with_suffix("")), "zip", GTFS)
    out = tmp_path / "synthetic"
    res = run_urbandp(
        "release", str(fleet), "--start", "2021-11-15", "--end", "2021-11-17", "--epsilon-per-day", "10",
        "--domain-bbox", "21.09,72.75,21.25,72.91", "--gtfs", str(feed), "--tiles", tiles.url, "--out", str(out),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    shot = shoot(out / "map.html", tmp_path / "map-synthetic.png", "#slot=09:00-10:00")
    assert ramp_pixels(shot) > 400
    stops = (np.abs(shot - np.array((192, 57, 43))).sum(axis=2) < 20).sum()  # the GTFS stops' red
    assert stops > 20


def test_the_three_states(shared_data: Path, tiles: TileServer, tmp_path: Path) -> None:
    """docs/map.md: a DP, a NOT-DP and an empty release of the same real day, each header in its colour."""
    day = str(shared_data / "austin-avl" / "2016-11-24.csv")
    common = ["--speed-unit", "m/s", "--start", "2016-11-24", "--end", "2016-11-24", "--tiles", tiles.url]
    runs = {
        "map-state-dp": ["--epsilon-per-day", "10", "--max-hats-per-vehicle-day", "24"],
        "map-state-notdp": ["--epsilon-per-day", "10", "--max-hats-per-vehicle-day", "observed"],
        "map-state-empty": ["--epsilon-per-day", "0.01"],
    }
    colours = {
        "map-state-dp": (230, 244, 238),
        "map-state-notdp": (198, 40, 40),
        "map-state-empty": (255, 244, 214),
    }
    for name, extra in runs.items():
        out = tmp_path / name
        res = run_urbandp("release", day, *common, *extra, "--out", str(out))
        assert res.returncode == 0, res.stderr[-2000:]
        shot = shoot(out / "map.html", tmp_path / f"{name}.png")
        header = shot[:260]
        assert (np.abs(header - np.array(colours[name])).sum(axis=2) < 10).sum() > 3_000, name
