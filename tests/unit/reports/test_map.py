"""The HAT map: one self-contained HTML file, every cell and slot present, data embedded as valid JSON."""

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

from urbandp.errors import InputError
from urbandp.reports.map import write_hat_map

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
    assert re.search(r"<(link|img|iframe)\b|\bsrc=|@import|url\(", page) is None
    assert "differentially private" in page.lower() and "epsilon per day 15.23" in page
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


BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(BROWSER is None, reason="no headless Chromium on this machine")
def test_renders_in_headless_browser(tmp_path: Path) -> None:
    cells = cells_around(2)
    frame = release_frame(cells)
    out = tmp_path / "map.html"
    write_hat_map(frame, out, title="t", legend="l")
    slot = SLOTS[4]
    dom = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", f"{out.as_uri()}#slot={slot}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    released = frame.filter((pl.col("slot") == slot) & pl.col("mean_speed").is_not_null()).height
    total = frame["h3_cell"].n_unique()
    # The script ran: it chose the slot from the link, coloured the released hexagons and counted them.
    assert f"{released} of {total} hexagons released in this slot" in dom
    assert len(re.findall(r'class="hex"[^>]*style="fill: rgb\(', dom)) == released
    assert len(re.findall(r'class="hex off"', dom)) == total - released
