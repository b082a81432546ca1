"""`urbandp map` draws a `sensing pm-map` release: the fleet's map page on the release's square grid, the legend
in ug/m3, uncertain cells hatched as on the fleet map."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import polars as pl
from urbandp_process import run_urbandp

import urbandp as ud
from urbandp.sensing._map_page import AQI_BAND, Z95, pm_frame

BOX = (22.50, 88.30, 22.53, 88.33)  # about 3 x 3 km: 9 cells of 1 km (4 x 4 with the edges)


def _release(tmp_path: Path) -> Path:
    """A pm-map folder: 200 readings in one corner cell, a handful in another, one season window."""
    rows = ["lat,lon,time,pm"]
    rows += [f"22.5005,88.3005,2023-09-20T{h % 24:02d}:00,{40 + h % 7}" for h in range(200)]
    rows += [f"22.5205,88.3205,2023-09-21T0{h}:00,90" for h in range(3)]
    src = tmp_path / "r.csv"
    src.write_text("\n".join(rows) + "\n")
    out = tmp_path / "pm"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ud.sensing.pm_map(
            src, bbox=BOX, start="2023-09-15", end="2023-10-31", window="season", epsilon=4, out=out
        )
    return out


def _payload(page: str) -> dict:  # type: ignore[type-arg]
    match = re.search(r"<script type=\"application/json\" id=\"hat-data\">(.*?)</script>", page, re.S)
    assert match, "the page embeds its data"
    return json.loads(match.group(1))


def test_map_draws_a_pm_map_release(tmp_path: Path) -> None:
    rel = _release(tmp_path)
    site = tmp_path / "site"
    res = run_urbandp("map", str(rel), "--out", str(site), "--tiles", "none")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "PM2.5 map of a sensing pm-map release" in res.stdout
    assert sorted(p.name for p in site.iterdir() if not p.name.startswith(".")) == [
        "index.html", "pm_cells.csv", "pm_grid.csv", "privacy.json",
    ]  # fmt: skip
    page = (site / "index.html").read_text()
    assert "PM2.5, mean over the window (ug/m3)" in page and 'aria-label="square map"' in page
    assert "privacy unit: one reading. epsilon 4 per unit" in page
    data = _payload(page)
    grid = pl.read_csv(rel / "pm_grid.csv")
    cells = pl.read_csv(rel / "pm_cells.csv")
    assert data["cell_word"] == "square" and data["slots"] == ["2023-09-15T00:00"]
    assert len(data["cells"]) == grid.height and data["interval_threshold"] == AQI_BAND
    assert all(len(ring) == 4 for ring in data["rings"])
    # the busy cell carries its noise interval; a cell without a clear count spans the whole range (hatched)
    frame = pm_frame(grid, cells, 250.0).sort("h3_cell")
    by_cell = dict(zip(data["cells"], zip(data["low"][0], data["high"][0], strict=True), strict=True))
    clear = cells.filter(pl.col("count_clear_of_noise"))
    busy = clear.sort("noisy_count", descending=True).row(0, named=True)
    pm_busy = grid.filter(pl.col("cell_id") == busy["cell_id"])["pm"][0]
    low, high = by_cell[str(busy["cell_id"])]
    assert abs(high - low - 2 * Z95 * busy["mean_pm_noise_sd"]) < 1e-6 and low <= pm_busy <= high
    assert high - low < AQI_BAND  # 200 readings: coloured
    empty = cells.filter(~pl.col("count_clear_of_noise"))["cell_id"][0]
    assert by_cell[str(empty)] == (0.0, 250.0)
    assert frame.height == grid.height
