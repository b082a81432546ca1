"""A scripted sweep of bad input over every sub-command (issue 19, "Done when").

Each case is one valid invocation of a sub-command with exactly one option (or argument) replaced by a bad
value. The values come from the option's declared type, read from the CLI itself, so a new option is swept
without editing this file:

- a number (float): ``nan``, ``inf``, ``-inf``, ``abc`` and the empty string;
- a whole number (int): ``abc``, ``1.5``, ``9e99`` and the empty string;
- an input path: a missing file and an empty folder where a file is read; a budget store that is a folder;
- the output: ``.``, ``""``, ``..``, the folder that holds the inputs, and an existing folder of the user's.

Every case, run as a real process, must end with exit code 2 and exactly one ``urbandp: error:`` line that names
the option (or the bad path), without a traceback, leave nothing in the output's parent folder that was not there
before, and leave every input file byte for byte as it was (sha256 before and after the sweep). The cases run four
at a time; the whole sweep takes about a minute on two cores.
"""

from __future__ import annotations

import hashlib
import shlex
import subprocess
import types
import typing
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from warm_process import run_warm

pytestmark = pytest.mark.system

RECT = "22.40,88.20,22.70,88.50"
BASES: dict[str, str] = {
    "release": "release {fleet} --out {out} --start 2021-11-15 --end 2021-11-16 --epsilon-per-day 10 --no-map",
    "plan": "plan {fleet} --out {out} --start 2021-11-15 --end 2021-11-16 --epsilon-per-day 10",
    "explore": "explore {fleet} --out {out}",
    "map": "map {release} --out {out}",
    "synth fleet": "synth fleet --vehicles 2 --days 1 --out {outfile}",
    "synth survey": "synth survey --households 20 --out {out}",
    "experiment mean": "experiment mean --synthetic itms-like --runs 5 --out {out}",
    "experiment busiest-hat": "experiment busiest-hat {fleet} --out {outfile}",
    "counts release": "counts release {taps}/events.csv --domain {taps}/domain.json --unit card-day "
    "--max-events 4 --epsilon 1 --out {out}",
    "counts synth": "counts synth --days 1 --trips-per-day 20 --out {out}",
    "counts prepare": "counts prepare {joint} --out {out}",
    "audit noise-scale": "audit noise-scale --pairs {pairs} --report {out}",
    "audit zero-skipping": "audit zero-skipping --table {joint} --threshold 10 --report {out}",
    "audit differencing": "audit differencing --joint {joint} --marginal {marginal} --report {out}",
    "audit pairs": "audit pairs --table {joint} --route {route} --out {outfile}",
    "sensing synth": "sensing synth {outfile}",
    "sensing interpolate": "sensing interpolate {readings} --out {out}",
    "sensing dp-map": f"sensing dp-map {{readings}} --bbox {RECT} --epsilon 1 --out {{out}}",
    "sensing pm-map": f"sensing pm-map {{readings}} --bbox {RECT} --start 2024-01-15 --end 2024-01-15 --out {{out}}",
    "sensing query": f"sensing query {{grid}} --rect {RECT} --sigma2-min 0 --sigma2-max 900 --out {{outfile}}",
    "sensing plan": f"sensing plan --bbox {RECT} --readings-per-day 100 --share-visited 0.3",
    "survey randomize": "survey randomize {survey}/vehicles.csv --column model --categories-file "
    "{survey}/models.csv --within fuel --epsilon 2 --out {out}",
    "survey estimate": "survey estimate {randomized} --column model --categories-file {survey}/models.csv "
    "--within fuel --epsilon 2 --out {outfile}",
    "survey perturb-points": "survey perturb-points {survey}/homes.csv --lat lat --lon lon "
    "--epsilon-per-metre 0.01 --out {out}",
    "survey escape": "survey escape {survey}/homes.csv --lat lat --lon lon --runs 2 --out {out}",
    "survey od-randomize": "survey od-randomize {survey}/trips.csv --from from_county --to to_county "
    "--blocks 19 --epsilon 1 --out {out}",
    "survey od-estimate": "survey od-estimate {survey}/trips.csv --from from_county --to to_county --blocks 19 "
    "--keep-probability 0.5 --out {outfile}",
    "survey perturb-trajectories": "survey perturb-trajectories {survey}/trajectories.csv --lat lat --lon lon "
    "--trip trip --epsilon 1 --max-step-metres 500 --out {out}",
    "mpc serve": "mpc serve --grid {grid} --sigma2-max 900",
    "mpc query": f"mpc query --rect {RECT} --cells {{cells}} --server 127.0.0.1:9",
    "mpc routes": f"mpc routes --route {{geojson}} --rect {RECT} --server 127.0.0.1:9 --png {{outfile}}",
    "budget init": "budget init d --unit vehicle-day --epsilon-per-day 1 --budget-store {store}",
    "budget show": "budget show d --budget-store {store} --out {out}",
    "budget history": "budget history d --budget-store {store}",
}
"""One valid invocation of each sub-command (placeholders filled in by the fixture)."""

INPUT_PLACEHOLDERS = (
    "fleet",
    "taps",
    "survey",
    "readings",
    "joint",
    "marginal",
    "pairs",
    "grid",
    "cells",
    "geojson",
    "randomized",
    "store",
    "release",
)
"""Placeholders of BASES that name a file of the shared input folder."""
FLOAT_VALUES = ("nan", "inf", "-inf", "abc", "")
INT_VALUES = ("abc", "1.5", "9e99", "")
OUT_FOLDER_VALUES = (".", "", "..", "{inputs}", "{foreign}", "owner_only")
EMPTY_TEXT_COMMANDS = ("release", "plan", "explore")
"""Commands whose text options are also swept with the empty string: ``""`` is refused, never read as "not
given" (issue 30: ``--speed-unit ""``, ``--dates ""``, ``--hours ""`` ran with the defaults)."""
EXTRA_CASES = (
    ("release", "--delta", "0.99", "--delta"),
    ("plan", "--delta", "0.99", "--delta"),
    ("plan", "--target-error", "0", "--target-error"),
    ("plan", "--target-error", "-1", "--target-error"),
    ("plan", "--fleet-size", "0", "--fleet-size"),
    ("explore", "--min-vehicles-per-day", "-1", "--min-vehicles-per-day"),
    ("release", "--dates", "2021-11-15,,2021-11-16", "--dates"),
    ("release", "--dates-file", "{days}", "--dates"),  # with --dates: the pair is refused, never one dropped
)
"""Values the option's type does not make bad, from issue 30's list: (command, option, value, needle)."""
OUT_FILE_VALUES = (".", "", "{fleet}")
INPUT_ITEM_CASES = (
    # public domains: a pipe or a device is never read (it would block or never end), a file is bounded
    ("release", "--domain-gtfs", "/dev/zero", "not a regular file"),
    ("release", "--domain-geojson", "{world}", "H3 cells at --resolution 7, more than"),
    ("release", "--domain-gtfs", "{bigfeed}", "stop_times.txt holds 3,000,001 rows"),
    ("release", "--domain-geojson", "{swapped}", "latitude and longitude swapped"),
    # the records' columns and the fleet's options
    ("release", "--column", "latitude=speed", "latitude=speed is not used"),
    ("release", "--column", "vehicle=speed", "'speed' would be read as vehicle and as speed"),
    ("release", "inputs", "{latin1}", "line 1 is not UTF-8 text"),
    ("release", "--max-hats-per-vehicle-day", "99999999999999999999999", "--max-hats-per-vehicle-day"),
    ("release", "--config", "{huge_k}", "max_hats_per_vehicle_day in"),
    ("plan", "--speed-max", "1e-300", "--speed-max"),
    # sensing: boxes on the globe, a bounded number of windows, cells and noise that stay finite
    ("sensing dp-map", "--bbox", "22.45,88.30,22.65,inf", "--bbox must be WGS 84 degrees"),
    ("sensing dp-map", "--start", "0001-01-01", "more than 5,000,000", ("--end", "9999-12-31")),
    ("sensing pm-map", "--bbox", "-91,0,91,1", "--bbox must be WGS 84 degrees", ("--smoother", "idw")),
    ("sensing pm-map", "--start", "0001-01-01", "more than 5,000,000"),
    ("sensing query", "--steepness", "1e-300", "--steepness", ("--type", "count", "--theta", "40")),
    ("sensing query", "--rho", "1e-300", "--rho", ("--type", "max")),
    ("sensing query", "grid_csv", "{nangrid}", "8 of 8 cells of window 2023-10-09T11:00 in --rect"),
    ("counts release", "--noise-scale", "1e300", "--noise-scale must be", (), ("--epsilon",)),
    ("mpc serve", "--max-clients", "-1", "--max-clients"),
    ("survey escape", "--polygons", "{badpoly}", "not a valid polygon"),
    ("survey escape", "--polygons", "{farpoly}", "no point lies inside"),
    # two outputs in one place: refused before either is written
    ("synth fleet", "--gtfs-out", "{outfile}", "--gtfs-out"),
)
"""The cases of issue 40's sweep ("every input answered"): (command, option, value, needle[, more arguments[,
options dropped from the base]]). Each was exit 70, a hang, accepted, or wrote a file before refusing."""

CONFIG_TABLE = {
    "release": "release",
    "plan": "release",
    "counts release": "counts.release",
    "sensing dp-map": "sensing.dp-map",
    "sensing pm-map": "sensing.pm-map",
    "sensing query": "sensing.query",
    "survey randomize": "survey.randomize",
    "survey perturb-points": "survey.perturb-points",
    "survey od-randomize": "survey.od-randomize",
    "survey perturb-trajectories": "survey.perturb-trajectories",
}
"""The ``--config`` table of each release command (explore's file holds only [input] and [columns])."""


@dataclass(frozen=True)
class Case:
    command: str
    option: str  # the option (or argument) made bad
    value: str
    needle: str  # what the one error line must name
    more: tuple[str, ...] = ()  # arguments added to the base invocation
    drop: tuple[str, ...] = ()  # options (with their value) taken out of the base invocation

    @property
    def name(self) -> str:
        return f"{self.command} {self.option}={self.value!r}" + "".join(f" {a}" for a in self.more)


def _kind(annotation: object) -> type | None:
    """float, int, Path, str or bool of a parameter annotation (``X | None`` and ``list[X]`` unwrapped)."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _kind(inner[0]) if len(inner) == 1 else None
    if typing.get_origin(annotation) is list:
        return _kind(typing.get_args(annotation)[0])
    return annotation if annotation in (float, int, Path, str, bool) else None


def _commands() -> dict[str, object]:
    import typer

    from urbandp.cli import build_app

    root = typer.main.get_command(build_app())
    found: dict[str, object] = {}
    for group, cmd in root.commands.items():  # type: ignore[attr-defined]
        if (
            group == "fleet"
        ):  # `fleet release|plan|explore|map`: the same commands as the top-level names swept
            continue
        for name, sub in getattr(cmd, "commands", {group: cmd}).items():
            found[name if name == group else f"{group} {name}"] = sub
    return found


def _cases() -> list[Case]:
    cases: list[Case] = []
    for command, cmd in sorted(_commands().items()):
        base = BASES[command]
        for param in cmd.params:  # type: ignore[attr-defined]
            kind = _kind(param.type_descriptor.annotation)
            flag = param.opts[0] if param.opts and param.opts[0].startswith("-") else None
            label = flag or param.name
            # outputs (synth fleet's --gtfs-out: a folder)
            if param.name in ("out", "report", "png", "gtfs_out"):
                folder = "{out}" in base or param.name == "gtfs_out"
                values = OUT_FOLDER_VALUES if folder else OUT_FILE_VALUES
                if param.name == "report":  # a shared folder of reports: another folder of the user's is fine
                    values = tuple(v for v in OUT_FOLDER_VALUES if v not in ("{foreign}", "owner_only"))
                reads = any(f"{{{name}}}" in base for name in INPUT_PLACEHOLDERS)
                needles = {
                    "owner_only": "owner-only folder",
                    "{inputs}": "contains the input"
                    if reads
                    else "did not write",  # else: a folder of the user's
                    "{foreign}": "did not write",
                    "{fleet}": "also an input"
                    if "{fleet}" in base
                    else "--overwrite",  # else: an existing file
                }
                cases.extend(Case(command, label, v, needles.get(v, "working directory")) for v in values)
            elif kind is str and flag and command in EMPTY_TEXT_COMMANDS and param.name != "budget_store":
                cases.append(
                    Case(command, label, "", "")
                )  # spec errors name the key (selection), not the flag
            elif kind is float:
                cases.extend(Case(command, label, v, label if flag else "") for v in FLOAT_VALUES)
            elif kind is int:
                cases.extend(Case(command, label, v, label if flag else "") for v in INT_VALUES)
            elif kind is Path:
                cases.append(Case(command, label, "{missing}", "no-such-input"))
                cases.append(Case(command, label, "{folder}", ""))
            elif param.name == "budget_store":  # a SQLite path given as text (or a postgresql:// URL)
                cases.append(Case(command, label, "{folder}", "is a folder"))
    cases.extend(Case(*extra) for extra in EXTRA_CASES)
    return cases


GENERATED_VALUES: dict[str, tuple[tuple[str, str], ...]] = {
    "domain_gtfs": (("{fifo}", "not a regular file"), ("/dev/null", "not a regular file")),
    "domain_geojson": (("{fifo}", "not a regular file"), ("/dev/null", "not a regular file")),
    "domain_cells": (("{fifo}", "not a regular file"), ("/dev/null", "not a regular file")),
    "bbox": (("-91,0,91,1", "--bbox"), ("0,0,1,inf", "--bbox")),  # survey perturb-points
    "cell_metres": (("1e9", "--cell-metres 1e+09"),),
    "steepness": (("1e-300", "--steepness"),),
    "rho": (("1e-300", "--rho"),),
}
"""Bad values of the domain and sensing options, by parameter name: every command with such an option gets them."""


def _option_cases() -> list[Case]:
    """Generated from the CLI: each command's domain options (a pipe, a device) and sensing options (a box off the
    globe, a cell larger than the globe allows, a vanishing steepness or rho) from :data:`GENERATED_VALUES`."""
    cases = []
    for command, cmd in sorted(_commands().items()):
        for param in cmd.params:  # type: ignore[attr-defined]
            flag = param.opts[0] if param.opts and param.opts[0].startswith("--") else None
            for value, needle in GENERATED_VALUES.get(param.name, ()) if flag else ():
                cases.append(Case(command, flag, value, needle))
    return cases


def _config_cases() -> list[Case]:
    """Generated from the CLI: for each command with a ``--config`` table, a file whose value for a number (or
    text) option that the base invocation also types is a list (``epsilon = [1, 2]``): refused naming the key, as
    the typed flag must not hide a file the command would otherwise misread."""
    cases = []
    for command, cmd in sorted(_commands().items()):
        if command not in CONFIG_TABLE:
            continue
        args = shlex.split(BASES[command])
        typed = sorted(  # a number option typed in the base, else a text one
            (
                p
                for p in cmd.params  # type: ignore[attr-defined]
                if _kind(p.type_descriptor.annotation) in (float, str)
                and p.opts
                and p.opts[0] in args
                and p.name not in ("out", "config", "budget_store")
                and not getattr(p, "multiple", False)
            ),
            key=lambda p: _kind(p.type_descriptor.annotation) is not float,
        )
        assert typed, f"{command}: its base invocation types no number or text option"
        key = typed[0].opts[0][2:].replace("-", "_")
        cases.append(Case(command, "--config", f"{{config:{command}}}", key))
    return cases


def config_file_text(command: str) -> str:
    """The TOML of :func:`_config_cases`' case for ``command``."""
    case = next(c for c in _config_cases() if c.command == command)
    return f"[{CONFIG_TABLE[command]}]\n{case.needle} = [1, 2]\n"


CASES = _cases()
ITEM_CASES = [*(Case(*item) for item in INPUT_ITEM_CASES), *_option_cases(), *_config_cases()]
"""Issue 40's cases and the generated config cases: run by :func:`test_every_input_answered`."""


def test_every_sub_command_is_swept_with_300_cases_or_more() -> None:
    assert set(BASES) == set(_commands()), "a new sub-command needs a base invocation in BASES"
    assert len({c.command for c in CASES}) == len(BASES)
    assert len(CASES) >= 300, len(CASES)


def test_every_command_with_a_config_table_is_swept_with_a_bad_file() -> None:
    with_config = {
        name
        for name, cmd in _commands().items()
        if any(p.name == "config" for p in cmd.params)  # type: ignore[attr-defined]
    }
    assert with_config - {"explore"} == set(CONFIG_TABLE)
    assert {c.command for c in ITEM_CASES if c.value.startswith("{config:")} == set(CONFIG_TABLE)


def test_the_domain_and_sensing_options_are_swept_wherever_they_are() -> None:
    swept = {(c.command, c.option) for c in _option_cases()}
    assert {
        ("release", "--domain-gtfs"),
        ("plan", "--domain-cells"),
        ("sensing interpolate", "--bbox"),
    } <= swept
    assert {
        ("sensing pm-map", "--cell-metres"),
        ("sensing query", "--rho"),
        ("mpc serve", "--steepness"),
    } <= swept
    assert len(swept) >= 15, sorted(swept)


def _sha(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_warm(args, cwd=cwd, timeout=120)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Valid inputs of every base invocation, in one folder whose bytes the sweep must not change."""
    root = tmp_path_factory.mktemp("sweep-inputs")
    here = Path.cwd()

    def make(*args: str) -> None:
        res = _run(list(args), here)
        assert res.returncode == 0, (args, res.stderr[-1500:])

    make(
        *("synth", "fleet", "--vehicles", "4", "--days", "2", "--out", str(root / "fleet.parquet")),
        *("--gtfs-out", str(root / "gtfs")),
    )
    make("counts", "synth", "--days", "1", "--trips-per-day", "60", "--out", str(root / "taps"))
    make("synth", "survey", "--households", "40", "--out", str(root / "survey"))
    make("sensing", "synth", str(root / "readings.csv"), "--readings", "300")
    release = tmp_path_factory.mktemp("fleet-release") / "rel"
    make(
        *("release", str(root / "fleet.parquet"), "--out", str(release), "--start", "2021-11-15"),
        *("--end", "2021-11-16", "--epsilon-per-day", "10", "--no-map"),
    )
    for name in ("hat_speed.csv", "privacy.json"):
        (root / "release").mkdir(exist_ok=True)
        (root / "release" / name).write_bytes((release / name).read_bytes())
    tables = tmp_path_factory.mktemp("tables") / "rel"
    make(
        *(
            "counts",
            "release",
            str(root / "taps" / "events.csv"),
            "--domain",
            str(root / "taps" / "domain.json"),
        ),
        *("--unit", "card-day", "--max-events", "4", "--epsilon", "1", "--out", str(tables)),
    )
    for name in ("joint.csv", "time.csv"):
        (root / name).write_bytes((tables / name).read_bytes())
    (root / "pairs.csv").write_text("a,b\n" + "".join(f"{i % 7},{(i * 3) % 7}\n" for i in range(60)))
    rows = [f"{i},22.5{i},88.3{i},2023-10-09T11:00,{40 + i},{3 + i}" for i in range(8)]
    (root / "grid.csv").write_text("cell_id,lat,lon,window,mu,sigma2\n" + "\n".join(rows) + "\n")
    (root / "cells.txt").write_text("0\n1\n2\n")
    (root / "days.txt").write_text("2021-11-15\n2021-11-16\n")
    (root / "route.geojson").write_text(
        '{"type": "LineString", "coordinates": [[88.30, 22.50], [88.35, 22.55]]}\n'
    )
    (root / "randomized.csv").write_bytes((root / "survey" / "vehicles.csv").read_bytes())
    (root / "empty").mkdir()  # a folder where a file is read
    _item_inputs(root)
    make(
        "budget",
        "init",
        "d",
        "--unit",
        "vehicle-day",
        "--epsilon-per-day",
        "1",
        "--budget-store",
        str(root / "b.sqlite"),
    )
    return root


def _fifo(root: Path) -> Path:
    """A named pipe beside the inputs folder, not in it: a command that lists that folder must not meet it."""
    return root.with_name(root.name + "-fifo") / "domain.fifo"


def _item_inputs(root: Path) -> None:
    """The files of :data:`INPUT_ITEM_CASES` and of the generated config cases, made in the inputs folder."""
    import json
    import os

    import polars as pl

    _fifo(root).parent.mkdir()
    os.mkfifo(_fifo(root))  # never opened: a reader would block until a writer comes
    world = [[-180, -85], [180, -85], [180, 85], [-180, 85], [-180, -85]]
    (root / "world.geojson").write_text(json.dumps({"type": "Polygon", "coordinates": [world]}))
    shapes = pl.read_csv(root / "gtfs" / "shapes.txt").sort("shape_id", "shape_pt_sequence")
    lines = [
        [[la, lo] for la, lo in zip(g["shape_pt_lat"], g["shape_pt_lon"], strict=True)]  # [lat, lon]: swapped
        for _, g in shapes.group_by("shape_id", maintain_order=True)
    ]
    (root / "swapped.geojson").write_text(json.dumps({"type": "MultiLineString", "coordinates": lines}))
    big = root / "bigfeed"
    big.mkdir()
    for name in ("agency.txt", "calendar.txt", "routes.txt", "shapes.txt", "stops.txt", "trips.txt"):
        (big / name).write_bytes((root / "gtfs" / name).read_bytes())
    header = (root / "gtfs" / "stop_times.txt").read_text().splitlines()[0]
    (big / "stop_times.txt").write_bytes(header.encode() + b"\n" + b"\n" * 3_000_001)  # rows counted first
    record = {"license_plate": "GJ05 \u00e9", "observationDateTime": "2021-11-15T09:00:00+05:30", "speed": 20}
    latin1 = (
        json.dumps({**record, "location": {"coordinates": [72.8, 21.2]}}, ensure_ascii=False) + "\n"
    ) * 3
    (root / "latin1.jsonl").write_bytes(latin1.encode("latin-1"))
    (root / "huge_k.toml").write_text("[release]\nmax_hats_per_vehicle_day = 99999999999999999999999\n")
    ring = [[0, 0], [1, 0], [0, 0], [0, 0]]  # encloses nothing
    (root / "badpoly.geojson").write_text(json.dumps({"type": "Polygon", "coordinates": [ring]}))
    far = [[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]  # a square off the survey's points
    (root / "farpoly.geojson").write_text(json.dumps({"type": "Polygon", "coordinates": [far]}))
    nan_rows = [f"{i},22.5{i},88.3{i},2023-10-09T11:00,nan,{3 + i}" for i in range(8)]
    (root / "nan-grid.csv").write_text("cell_id,lat,lon,window,mu,sigma2\n" + "\n".join(nan_rows) + "\n")
    for command in CONFIG_TABLE:
        (root / f"config-{command.replace(' ', '-')}.toml").write_text(config_file_text(command))


def _args(case: Case, inputs: Path, case_dir: Path) -> list[str]:
    fill = {
        "fleet": str(inputs / "fleet.parquet"),
        "taps": str(inputs / "taps"),
        "survey": str(inputs / "survey"),
        "readings": str(inputs / "readings.csv"),
        "joint": str(inputs / "joint.csv"),
        "marginal": str(inputs / "time.csv"),
        "pairs": str(inputs / "pairs.csv"),
        "route": shlex.quote("bus:A>B"),
        "grid": str(inputs / "grid.csv"),
        "cells": str(inputs / "cells.txt"),
        "geojson": str(inputs / "route.geojson"),
        "randomized": str(inputs / "randomized.csv"),
        "store": str(inputs / "b.sqlite"),
        "release": str(inputs / "release"),
        "out": str(case_dir / "out"),
        "outfile": str(case_dir / "out.csv"),
    }
    bad = {
        "{missing}": str(case_dir / "no-such-input.csv"),
        "{folder}": str(inputs / "empty") if case.option != "--budget-store" else str(inputs),
        "{inputs}": str(inputs),
        "{foreign}": str(case_dir / "mine"),
        "{fleet}": str(inputs / "fleet.parquet"),
        "{days}": str(inputs / "days.txt"),
        "{outfile}": fill["outfile"],
        "{fifo}": str(_fifo(inputs)),
        "{world}": str(inputs / "world.geojson"),
        "{swapped}": str(inputs / "swapped.geojson"),
        "{bigfeed}": str(inputs / "bigfeed"),
        "{latin1}": str(inputs / "latin1.jsonl"),
        "{huge_k}": str(inputs / "huge_k.toml"),
        "{badpoly}": str(inputs / "badpoly.geojson"),
        "{farpoly}": str(inputs / "farpoly.geojson"),
        "{nangrid}": str(inputs / "nan-grid.csv"),
        **{f"{{config:{c}}}": str(inputs / f"config-{c.replace(' ', '-')}.toml") for c in CONFIG_TABLE},
    }
    args = shlex.split(BASES[case.command].format(**fill))
    for option in case.drop:
        at = args.index(option)
        del args[at : at + 2]
    args += list(case.more)
    if case.value == "{days}":
        args += ["--dates", "2021-11-15"]
    value = bad.get(case.value, case.value)
    if case.option.startswith("-"):
        if case.option in args:
            args[args.index(case.option) + 1] = value
        else:
            args += [case.option, value]
    else:  # a positional argument: the first one after the command words that is a path of the base
        words = len(case.command.split())
        position = next(i for i, a in enumerate(args) if i >= words and not a.startswith("-") and "/" in a)
        if case.option in ("out",):  # sensing synth OUT
            position = next(i for i, a in enumerate(args) if a == fill["outfile"])
        args[position] = value
    return args


def _check(case: Case, inputs: Path, workdir: Path) -> str | None:
    """None when the case is refused as it must be, else what went wrong."""
    case_dir = workdir / f"case-{abs(hash(case.name)):x}"
    case_dir.mkdir()
    (case_dir / "mine").mkdir()
    (case_dir / "mine" / "notes.txt").write_text("the user's own file\n")
    before = sorted(p.relative_to(case_dir).as_posix() for p in case_dir.rglob("*"))
    args = _args(case, inputs, case_dir)
    res = _run(args, cwd=case_dir)
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("urbandp: error:")]
    after = sorted(p.relative_to(case_dir).as_posix() for p in case_dir.rglob("*"))
    problems = []
    if res.returncode != 2:
        problems.append(f"exit {res.returncode}")
    if "Traceback" in res.stderr:
        problems.append("traceback")
    if len(errors) != 1:
        problems.append(f"{len(errors)} error lines")
    elif case.needle and case.needle not in errors[0]:
        problems.append(f"error does not name {case.needle!r}: {errors[0]}")
    if after != before:
        problems.append(
            f"left {sorted(set(after) - set(before))} / removed {sorted(set(before) - set(after))}"
        )
    if problems:
        return f"{case.name}: {'; '.join(problems)} :: {' '.join(args)} :: {res.stderr[-600:]}"
    return None


@pytest.mark.parametrize("group", sorted({c.command.split()[0] for c in CASES}))
def test_sweep(group: str, inputs: Path, tmp_path: Path) -> None:
    before = _sha(inputs)
    cases = [c for c in CASES if c.command.split()[0] == group]
    with ThreadPoolExecutor(4) as pool:
        failures = [f for f in pool.map(lambda c: _check(c, inputs, tmp_path), cases) if f]
    assert _sha(inputs) == before, "an input file changed"
    assert not failures, f"{len(failures)} of {len(cases)} cases failed:\n" + "\n".join(failures)


def test_every_input_answered(inputs: Path, tmp_path: Path) -> None:
    """Issue 40's sweep: each case was an internal error, a hang, accepted or wrote before refusing; each is now
    one line naming what is wrong, exit 2, nothing written, no input changed (the same check as the sweep's)."""
    before = _sha(inputs)
    with ThreadPoolExecutor(4) as pool:
        failures = [f for f in pool.map(lambda c: _check(c, inputs, tmp_path), ITEM_CASES) if f]
    assert _sha(inputs) == before, "an input file changed"
    assert not failures, f"{len(failures)} of {len(ITEM_CASES)} cases failed:\n" + "\n".join(failures)
