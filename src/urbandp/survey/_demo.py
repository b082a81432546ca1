"""The survey part of ``make demo``: synthetic survey -> every ``urbandp survey`` command, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from urbandp.survey._synth import TWIN_CITIES_BBOX, write_survey


def _cli(*args: str) -> None:
    from urbandp.cli import app

    code = typer.main.get_command(app).main(["survey", *args, "--overwrite"], standalone_mode=False)
    if code:  # the demo owns its folder (--overwrite); any other refusal stops it, never silently
        raise SystemExit(code)


def run(out_dir: Path, console: Console) -> None:
    """Generate a synthetic survey in ``out_dir/data`` and run the survey commands on it."""
    data = out_dir / "data"
    counts = write_survey(data, households=2000, seed=2021)
    console.print(f"[bold]survey 1. synthetic travel survey[/]: {counts} in {data}")
    steps = [
        ("k-RR of vehicle model within fuel type, epsilon 2", [
            "randomize", str(data / "vehicles.csv"), "--column", "model", "--categories-file",
            str(data / "models.csv"), "--within", "fuel", "--aliases", str(data / "aliases.csv"),
            "--id", "household", "--epsilon", "2", "--out", str(out_dir / "vehicles-rr")]),
        ("de-biased model shares", [
            "estimate", str(out_dir / "vehicles-rr" / "randomized.csv"), "--column", "model",
            "--categories-file", str(data / "models.csv"), "--within", "fuel", "--epsilon", "2",
            "--out", str(out_dir / "vehicle-estimates.csv")]),
        ("home locations, planar Laplace 0.005 / m (geo-indistinguishability, not DP), report bounding box", [
            "perturb-points", str(data / "homes.csv"), "--lat", "lat", "--lon", "lon",
            "--id", "household", "--epsilon-per-metre", "0.005", "--bbox", TWIN_CITIES_BBOX, "--out", str(out_dir / "homes")]),
        ("escape analysis (owner only)", [
            "escape", str(data / "homes.csv"), "--lat", "lat", "--lon", "lon", "--grid", "10,25,50",
            "--runs", "3", "--out", str(out_dir / "escape")]),
        ("OD randomized response over 19 counties, p = 1/2 (report eq. 13)", [
            "od-randomize", str(data / "trips.csv"), "--from", "from_county", "--to", "to_county",
            "--blocks", "19", "--id", "trip", "--keep-probability", "0.5", "--out", str(out_dir / "trips-rr")]),
        ("de-biased OD counts with 95 % intervals (inverse of eq. 13)", [
            "od-estimate", str(out_dir / "trips-rr" / "trips.csv"), "--from", "from_county", "--to", "to_county",
            "--blocks", "19", "--keep-probability", "0.5", "--out", str(out_dir / "od-estimate.csv")]),
        ("OD per household: at most 4 trips each, p = 1/2 (4 x 5.89 per household)", [
            "od-randomize", str(data / "trips.csv"), "--from", "from_county", "--to", "to_county",
            "--blocks", "19", "--person", "household", "--max-trips-per-person", "4", "--keep-probability", "0.5",
            "--out", str(out_dir / "trips-person")]),
        ("SSD trajectories (report eq. 16)", [
            "perturb-trajectories", str(data / "trajectories.csv"), "--lat", "lat", "--lon", "lon",
            "--trip", "trip", "--order", "seq", "--epsilon", "50", "--max-step-metres", "150",
            "--out", str(out_dir / "trajectories")]),
    ]  # fmt: skip
    for number, (title, args) in enumerate(steps, start=2):
        console.print(f"[bold]survey {number}. {title}[/]")
        _cli(*args)
    eps = json.loads((out_dir / "trips-rr" / "privacy.json").read_text())["epsilon"]
    person = json.loads((out_dir / "trips-person" / "privacy.json").read_text())["epsilon_per_person"]
    console.print(
        f"   OD epsilon per trip {eps:.4g} (report: ~6), per household {person:.4g}; outputs in {out_dir}"
    )
