"""The options of `urbandp sensing synth` (not a release) as typed ``Annotated`` aliases with their help, and the
readings' help shared by the commands that read them.

The releases (`dp-map`, `pm-map`, `query`) and `interpolate` declare their options once, on the fields of their
models (:mod:`urbandp.sensing._options`), and their flags are built from those. Options shared by every wing
(``--overwrite``, ``--dataset``, ...) are in :mod:`urbandp._cli_options`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

READINGS_HELP = "CSV of readings: lat, lon|long, time, value|pm."

SynthOut = Annotated[Path, typer.Argument(help="CSV to write (lat, lon, time, value, vehicle).")]
SynthReadings = Annotated[int, typer.Option(help="Number of readings.")]
SynthVehicles = Annotated[int, typer.Option(help="Number of vehicles.")]
SynthHours = Annotated[int, typer.Option(help="Hours (one-hour windows) the readings span.")]
SynthSeed = Annotated[int, typer.Option(help="Random seed.")]
