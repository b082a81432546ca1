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
    ("explore", "--min-vehicles-per-day", "-1", "--min-vehicles-per-day"),
    ("release", "--dates", "2021-11-15,,2021-11-16", "--dates"),
    ("release", "--dates-file", "{days}", "--dates"),  # with --dates: the pair is refused, never one dropped
)
"""Values the option's type does not make bad, from issue 30's list: (command, option, value, needle)."""
OUT_FILE_VALUES = (".", "", "{fleet}")


@dataclass(frozen=True)
class Case:
    command: str
    option: str  # the option (or argument) made bad
    value: str
    needle: str  # what the one error line must name

    @property
    def name(self) -> str:
        return f"{self.command} {self.option}={self.value!r}"


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


CASES = _cases()


def test_every_sub_command_is_swept_with_300_cases_or_more() -> None:
    assert set(BASES) == set(_commands()), "a new sub-command needs a base invocation in BASES"
    assert len({c.command for c in CASES}) == len(BASES)
    assert len(CASES) >= 300, len(CASES)


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

    make("synth", "fleet", "--vehicles", "4", "--days", "2", "--out", str(root / "fleet.parquet"))
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
    }
    args = shlex.split(BASES[case.command].format(**fill))
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
