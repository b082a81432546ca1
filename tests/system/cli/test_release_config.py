"""``--config FILE.toml`` drives a release of each wing as a real ``urbandp`` process (issue 31).

Per wing, the release a TOML table drives equals the release its flags drive: the same privacy.json (every
stated loss, scale and unit, and the same ``spec_sha256``) and the same published rows. The noise itself is
fresh in each run (the CLI takes no noise seed, by design: a seeded release would not be private), so the noisy
columns are compared only by their keys; the privacy numbers are compared exactly. A value the library refuses
is refused with the same line whether a flag or the file gave it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from urbandp_process import assert_refused, run_urbandp

pytestmark = pytest.mark.system


def _privacy(out: Path) -> dict[str, Any]:
    data = dict(json.loads((out / "privacy.json").read_text()))
    data.pop("command", None)  # a survey release records its command line, which differs by design
    return data


def _same_release(
    tmp: Path, group: str, command: str, head: list[str], flags: list[str], toml: str, table: str
) -> tuple[Path, Path]:
    """Run ``urbandp GROUP COMMAND HEAD FLAGS`` and ``... HEAD --config FILE`` (FILE: ``[table]`` + ``toml``);
    both outputs are called ``rel`` (in two folders) so that their owner-only paths read alike."""
    by_flag, by_file = tmp / "flag" / "rel", tmp / "file" / "rel"
    config = tmp / "release.toml"
    config.write_text(f"[{table}]\n{toml}")
    res = run_urbandp(group, command, *head, *flags, "--out", str(by_flag))
    assert res.returncode == 0, res.stderr
    res = run_urbandp(group, command, *head, "--config", str(config), "--out", str(by_file))
    assert res.returncode == 0, res.stderr
    assert _privacy(by_file) == _privacy(by_flag)
    return by_flag, by_file


def _refused_alike(
    group: str,
    command: str,
    head: list[str],
    flag: list[str],
    table: str,
    tmp: Path,
    *,
    key_named: bool = False,
) -> None:
    """The library's refusal of a value reads the same from a flag and from the file; with ``key_named`` (a wing
    whose library error lists its parameter, issue 31) the file's refusal names ``key in FILE [table]`` instead
    of the flag."""
    import re

    key = flag[0][2:].replace("-", "_")
    config = tmp / "bad.toml"
    config.write_text(f"[{table}]\n{key} = {flag[1]}\n")
    a = run_urbandp(group, command, *head, *flag, "--out", str(tmp / "bad1"))
    b = run_urbandp(group, command, *head, "--config", str(config), "--out", str(tmp / "bad2"))
    line = next(ln for ln in a.stderr.splitlines() if ln.startswith("urbandp: error:"))
    assert_refused(a, flag[0].lstrip("-"), others="none")
    if key_named:
        line = re.sub(re.escape(flag[0]) + r"(?![\w-])", f"{key} in {config} [{table}]", line)
    assert_refused(b, line.removeprefix("urbandp: error: "), others="none")


def test_counts_release_from_a_config_file(tmp_path: Path) -> None:
    from urbandp._synth.taps import generate_taps

    synth = generate_taps(trips_per_day=120, ferry_trips_per_day=20, days=1, seed=5)
    synth.events.write_csv(tmp_path / "events.csv")
    (tmp_path / "domain.json").write_text(json.dumps(synth.domain))
    head = [str(tmp_path / "events.csv"), "--domain", str(tmp_path / "domain.json")]
    flags = ["--unit", "card-day", "--max-events", "4", "--max-per-cell", "2", "--epsilon", "1.5"]
    flags += ["--threshold", "12", "--precision", "1", "--format", "csv"]
    toml = 'unit = "card-day"\nmax_events = 4\nmax_per_cell = 2\nepsilon = 1.5\nthreshold = 12\n'
    toml += 'precision = 1\nformat = "csv"\n'
    by_flag, by_file = _same_release(tmp_path, "counts", "release", head, flags, toml, "counts.release")
    privacy = _privacy(by_file)
    assert privacy["epsilon"] == 1.5 and privacy["unit"].startswith("card-day")
    for name in sorted(p.name for p in by_flag.glob("*.csv")):
        a, b = pl.read_csv(by_flag / name), pl.read_csv(by_file / name)
        assert a.columns == b.columns and a.height == b.height, name
    _refused_alike("counts", "release", head, ["--epsilon", "-1"], "counts.release", tmp_path, key_named=True)
    typed = (
        tmp_path / "typed.toml"
    )  # text is not a number: the TOML type rule the Python API's config= applies
    typed.write_text('[counts.release]\nepsilon = "1.5"\n')
    res = run_urbandp("counts", "release", *head, "--config", str(typed), "--out", str(tmp_path / "bad3"))
    said = f"epsilon in {typed} [counts.release] = '1.5' is not a value --epsilon takes"
    assert_refused(res, said, others="none")


def test_survey_randomize_from_a_config_file(tmp_path: Path) -> None:
    n = 40
    pl.DataFrame(
        {
            "household": [str(i) for i in range(n)],
            "model": [["Camry", "Civic", "Leaf"][i % 3] for i in range(n)],
        }
    ).write_csv(tmp_path / "vehicles.csv")
    (tmp_path / "models.txt").write_text("Camry\nCivic\nLeaf\n")
    head = [str(tmp_path / "vehicles.csv")]
    flags = ["--column", "model", "--categories-file", str(tmp_path / "models.txt"), "--epsilon", "2"]
    flags += ["--id", "household", "--sampler", "os"]
    toml = f'column = "model"\ncategories_file = "{tmp_path / "models.txt"}"\nepsilon = 2\nid = "household"\n'
    toml += 'sampler = "os"\n'
    by_flag, by_file = _same_release(tmp_path, "survey", "randomize", head, flags, toml, "survey.randomize")
    assert _privacy(by_file)["epsilon"] == pytest.approx(2, rel=1e-12)  # computed from the mechanism
    a, b = pl.read_csv(by_flag / "randomized.csv"), pl.read_csv(by_file / "randomized.csv")
    assert a.columns == b.columns and a["household"].to_list() == b["household"].to_list()
    assert set(b["model"]) <= {"Camry", "Civic", "Leaf"}
    _refused_alike(
        "survey",
        "randomize",
        [*head, "--column", "model"],
        ["--epsilon", "0"],
        "survey.randomize",
        tmp_path,
        key_named=True,
    )


def test_sensing_pm_map_from_a_config_file(tmp_path: Path) -> None:
    readings = tmp_path / "readings.csv"
    assert (
        run_urbandp("sensing", "synth", str(readings), "--readings", "300", "--vehicles", "3").returncode == 0
    )
    box, start, end = "22.45,88.30,22.65,88.47", "2024-01-15", "2024-01-16"
    flags = ["--bbox", box, "--start", start, "--end", end, "--epsilon", "2", "--cell-metres", "1500"]
    flags += ["--smoother", "idw", "--max-readings-per-vehicle-window", "4"]
    toml = f'bbox = "{box}"\nstart = "{start}"\nend = "{end}"\nepsilon = 2\ncell_metres = 1500\n'
    toml += 'smoother = "idw"\nmax_readings_per_vehicle_window = 4\n'
    by_flag, by_file = _same_release(
        tmp_path, "sensing", "pm-map", [str(readings)], flags, toml, "sensing.pm-map"
    )
    assert _privacy(by_file)["spec_sha256"] == _privacy(by_flag)["spec_sha256"]
    keys = ["cell_id", "window"]
    a, b = pl.read_csv(by_flag / "pm_cells.csv"), pl.read_csv(by_file / "pm_cells.csv")
    assert a.columns == b.columns and a.select(keys).equals(b.select(keys))
    head = [str(readings), "--bbox", box, "--start", start, "--end", end]
    _refused_alike("sensing", "pm-map", head, ["--epsilon", "-1"], "sensing.pm-map", tmp_path, key_named=True)
