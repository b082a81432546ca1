"""Docs that cannot drift: option tables and figures are what the code states (docs/gen_from_code.py).

Each page's generated blocks are what the generator writes now; the option tables of the four release wings are
there; and the figures the docs once stated wrongly are pinned against the tool itself: the map's hatching width
(map.md said U/2 = 32.5 km/h, the map hatches at the 10 km/h target), the fleet's ``--min-vehicles-per-day``
default (fleet.md said 3 for DP selection, ``--help`` says 0) and the noise-only cells of the README's count recipe
(counts.md stated 1.1e-8 per cell, the figure of another unit, where the tool warns of hundreds).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.system
ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_from_code", DOCS / "gen_from_code.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _block(page: str, key: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    found = re.findall(rf"<!-- gen:{re.escape(key)} -->(.*?)<!-- /gen -->", text, flags=re.S)
    assert found, f"docs/{page} has no generated block '{key}'"
    return str(found[0])


def _help_text(*command: str) -> str:
    from typer.testing import CliRunner

    from urbandp.cli import app

    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "4000", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_every_generated_block_is_what_the_code_states() -> None:
    gen = _generator()
    pages = gen.pages()
    assert {p.name for p in pages} >= {"fleet.md", "counts.md", "survey.md", "sensing.md", "map.md"}
    stale = [
        p.name for p in pages if gen.render(p.read_text(encoding="utf-8")) != p.read_text(encoding="utf-8")
    ]
    assert not stale, f"out of date: {stale}: run python docs/gen_from_code.py"
    used = {m.group("key").strip() for p in pages for m in gen.MARKER.finditer(p.read_text(encoding="utf-8"))}
    assert used == set(gen.BLOCKS), "a generated block is defined but on no page, or the reverse"


@pytest.mark.parametrize(
    ("page", "command"),
    [
        ("fleet.md", "release"),
        ("counts.md", "counts release"),
        ("survey.md", "survey randomize"),
        ("survey.md", "survey perturb-points"),
        ("survey.md", "survey od-randomize"),
        ("survey.md", "survey perturb-trajectories"),
        ("sensing.md", "sensing dp-map"),
        ("sensing.md", "sensing pm-map"),
        ("sensing.md", "sensing query"),
    ],
)
def test_each_option_table_lists_every_flag_of_the_command(page: str, command: str) -> None:
    table = _block(page, f"options {command}")
    gen = _generator()
    flags = [row[0] for row in gen.option_rows(command)]
    assert len(flags) >= 8
    for flags_cell in flags:
        assert f"| {flags_cell} |" in table
    help_text = _help_text(*command.split())
    for flag in re.findall(r"`(--[\w-]+)`", " ".join(flags)):
        assert flag in help_text


def test_the_fleet_table_states_the_min_vehicles_default_of_help() -> None:
    """fleet.md said 3 for DP selection; --help, from the code that applies it, says 0."""
    from urbandp.fleet._options import MIN_PER_DAY_DEFAULT

    row = next(
        ln for ln in _block("fleet.md", "options release").splitlines() if "`--min-vehicles-per-day`" in ln
    )
    default = row.split("|")[2].strip()
    expected = f"{MIN_PER_DAY_DEFAULT['dp']:g} for DP selection, {MIN_PER_DAY_DEFAULT['public-threshold']:g} for public-threshold"
    assert default == expected
    assert f"(default: {expected})" in _help_text("release")


def test_the_map_docs_state_the_hatching_width_the_map_uses() -> None:
    """map.md said U/2 (32.5 km/h); the map hatches above the release's target width (10 km/h)."""
    from urbandp.fleet._api import map_options_for
    from urbandp.fleet._options import HatReleaseConfig

    hatch = map_options_for(HatReleaseConfig(epsilon_per_day=1.0))["interval_threshold"]
    assert hatch == 10.0
    assert _block("map.md", "target-width") == f"{hatch:g}"
    bullet = (DOCS / "map.md").read_text(encoding="utf-8").split("- **hatched**:")[1].split("\n- ")[0]
    assert "U/2" not in bullet and "--target-width" in bullet
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"coloured where the 95% interval is at most {hatch:g} km/h wide (`--target-width`)" in readme


def test_the_counts_docs_state_the_noise_only_cells_the_tool_warns_of(tmp_path: Path) -> None:
    """The README's recipe (card-day, k = 4, epsilon 1, threshold 18) on `counts synth`'s domain: the release's own
    warning is the figure counts.md states."""
    import urbandp as ud
    from urbandp._outputs import write_json
    from urbandp._synth.taps import generate_taps

    taps = generate_taps(trips_per_day=40, ferry_trips_per_day=5, days=7, seed=0)
    events, domain = tmp_path / "events.csv", tmp_path / "domain.json"
    taps.events.write_csv(events)
    write_json(domain, taps.domain)
    with pytest.warns(UserWarning) as caught:
        rel = ud.counts.release(
            events, domain=domain, unit="card-day", max_events=4, epsilon=1, suppress_below=18
        )
    suppression = json.loads(rel.privacy.to_json())["suppression"]
    warned = [str(w.message) for w in caught if "pure noise" in str(w.message)]
    assert len(warned) == 1
    figure = f"{suppression['expected_noise_only_cells_at_most']:,.0f}"
    assert f"up to {figure} published cells may be pure noise" in warned[0]
    stated = " ".join(_block("counts.md", "counts-noise-only").split())
    assert f"the tool warns of up to {figure} noise-only cells" in stated
    assert f"P = {suppression['noise_only_publish_probability']:.3g} per cell" in stated
    assert f"`--suppress-below {suppression['threshold_for_at_most_one_noise_only_cell']}`" in stated
    assert "P = 1.1e-08" in stated  # the Opal daily table's figure, now stated with its unit
    assert "one unit per count" in stated
