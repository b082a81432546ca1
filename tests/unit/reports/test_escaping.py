"""Every HTML page escapes what it is given (issue 32: Jinja2 templates with autoescape, data through ``tojson``).

Hostile text reaches the pages from places a publisher does not write: a GTFS feed's folder name, a GeoJSON context
file's name or ``name`` member, a slot label, the legend's unit, privacy.json's reasons and warnings. Each page is
parsed as a browser would (``html.parser``): no element or event handler may come from that text, it must show as
text, and the JSON the script reads must hold no raw ``<``, ``>`` or ``&`` (so nothing in it can end its
``<script>`` element) yet decode to the same strings.
"""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import polars as pl

from urbandp._reports.map import MapHeader, write_hat_map
from urbandp.fleet._map_page import methodology_html, write_release_map

SCRIPT = "</script><script>alert(1)</script>"
IMG = "<img src=x onerror=alert`1`>"  # no "/" and no parentheses: a valid file name and a legend's "(unit)"
CENTRE = "8742d9d69ffffff"  # Surat, resolution 7 (the GTFS fixture's city)
GTFS = Path(__file__).parents[2] / "fixtures" / "gtfs-surat-mini"


class Page(HTMLParser):
    """The elements, attributes and text of a page as an HTML parser sees them (script bodies kept apart)."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self.in_script = False
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self.in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self.in_script else self.text).append(data)


def assert_inert(page: str, *, scripts: int, shown: list[str]) -> Page:
    """No element or handler came from the hostile text, which is shown as text."""
    parsed = Page(page)
    names = [tag for tag, _ in parsed.tags]
    assert names.count("script") == scripts and "img" not in names
    handlers = [(tag, a) for tag, attrs in parsed.tags for a in attrs if a.startswith("on")]
    assert handlers == []
    text = "".join(parsed.text)
    for hostile in shown:
        assert hostile in text, hostile
    return parsed


def hostile_map(tmp_path: Path) -> str:
    feed = tmp_path / IMG
    shutil.copytree(GTFS, feed)
    named = tmp_path / "named.geojson"
    named.write_text(json.dumps({"type": "FeatureCollection", "name": SCRIPT, "features": []}))
    unnamed = tmp_path / f"{IMG}.geojson"
    unnamed.write_text(json.dumps({"type": "FeatureCollection", "features": []}))
    frame = pl.DataFrame(
        {
            "h3_cell": [CENTRE, CENTRE],
            "slot": [SCRIPT, IMG],
            "mean_speed": [20.0, 30.0],
            "ci95_low": [10.0, 0.0],
            "ci95_high": [30.0, 65.0],
        }
    )
    out = tmp_path / "map.html"
    write_hat_map(
        frame,
        out,
        title=SCRIPT,
        legend=f"mean speed ({IMG})",
        header=MapHeader("notdp", f"NOT differentially private: {SCRIPT}", IMG, SCRIPT),
        speed_max=65.0,
        gtfs_dir=feed,
        context=[named, unnamed],
    )
    return out.read_text()


def test_hostile_text_is_escaped_in_the_map(tmp_path: Path) -> None:
    page = hostile_map(tmp_path)
    assert SCRIPT not in page and IMG not in page
    parsed = assert_inert(page, scripts=3, shown=[SCRIPT, IMG, f"context: {SCRIPT}", f"GTFS feed {IMG}"])
    assert f"wider than 32.5 {IMG}:" in "".join(parsed.text)  # the legend's unit, in the hatch key
    raw = re.search(r'id="hat-data">(.*?)</script>', page, re.S)
    assert raw is not None and not set("<>&") & set(raw.group(1))
    data = json.loads(raw.group(1))
    assert data["slots"] == sorted([SCRIPT, IMG]) and data["unit"] == IMG
    assert [c["name"] for c in data["context"]] == [SCRIPT, f"{IMG}.geojson"]


def hostile_privacy() -> dict[str, object]:
    return {
        "dp_label": SCRIPT,
        "privacy_unit": IMG,
        "days": 1,
        "cumulative_epsilon_per_day": 1.0,
        "epsilon_per_window": 1.0,
        "delta_per_day": 1e-7,
        "delta_per_window": 1e-7,
        "speed_max": 65,
        "hats_released": 0,
        "mechanism": SCRIPT,
        "neighbouring_explanation": IMG,
        "not_dp_reasons": [SCRIPT],
        "warnings": [f"window {IMG}"],
        "selection": {"threshold_vehicle_days": SCRIPT, "method": IMG},
    }


def test_hostile_text_is_escaped_in_the_release_map_and_methodology(tmp_path: Path) -> None:
    privacy = hostile_privacy()
    method = methodology_html(privacy, ["index.html", IMG])
    assert SCRIPT not in method and IMG not in method
    parsed = assert_inert(method, scripts=0, shown=[SCRIPT, IMG, f"window {IMG}"])
    assert {"href": IMG} in [attrs for tag, attrs in parsed.tags if tag == "a"]
    out = tmp_path / "map.html"
    speed = pl.DataFrame(schema={"h3_cell": pl.String, "slot": pl.String, "mean_speed": pl.Float64})
    write_release_map(out, speed, privacy, tiles=None)
    page = out.read_text()
    assert SCRIPT not in page and IMG not in page
    assert_inert(page, scripts=3, shown=[f"NOT differentially private: {SCRIPT}", f"Warning: window {IMG}"])
