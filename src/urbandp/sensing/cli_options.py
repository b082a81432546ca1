"""The options of the `urbandp sensing` commands that are not releases (`synth`, `interpolate`), as typed
``Annotated`` aliases with their help, and the shared arguments.

The releases (`dp-map`, `pm-map`, `query`) declare their options once, on the fields of their option classes
(:mod:`urbandp.sensing.options`), and their flags are built from those; the help shared with
`interpolate` is taken from there. Options shared by every wing (``--overwrite``, ``--dataset``, ...) are in
:mod:`urbandp.cli_options`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from urbandp.sensing.options import CELL_METRES_HELP, KERNEL_HELP, VALUE_COLUMN_HELP, WINDOW_MINUTES_HELP

# --- shared by several sensing commands -------------------------------------------------------------------------

READINGS_HELP = "CSV of readings: lat, lon|long, time, value|pm."
ReadingsCsv = Annotated[Path, typer.Argument(metavar="INPUT", help=READINGS_HELP)]
OutDir = Annotated[Path, typer.Option("--out", help="Output directory.")]
ValueColumn = Annotated[str | None, typer.Option(help=VALUE_COLUMN_HELP)]
CellMetres = Annotated[float, typer.Option(help=CELL_METRES_HELP)]
WindowMinutes = Annotated[int, typer.Option(help=WINDOW_MINUTES_HELP)]
Kernel = Annotated[str, typer.Option(help=KERNEL_HELP)]

# --- sensing synth ----------------------------------------------------------------------------------------------

SynthOut = Annotated[Path, typer.Argument(help="CSV to write (lat, lon, time, value, vehicle).")]
SynthReadings = Annotated[int, typer.Option(help="Number of readings.")]
SynthVehicles = Annotated[int, typer.Option(help="Number of vehicles.")]
SynthHours = Annotated[int, typer.Option(help="Hours (one-hour windows) the readings span.")]
SynthSeed = Annotated[int, typer.Option(help="Random seed.")]

# --- sensing interpolate ----------------------------------------------------------------------------------------

ExactMax = Annotated[int, typer.Option(help="Exact GP up to this many readings per window; SGPR beyond.")]
Inducing = Annotated[int, typer.Option(help="Inducing points of the sparse GP.")]
SkipMinReadings = Annotated[int, typer.Option(help="Skip windows with fewer readings.")]
Cv = Annotated[
    bool, typer.Option("--cv", help="Cross-validate against IDW (5 folds unless --cv-folds is given).")
]
CvFolds = Annotated[
    int, typer.Option(help="K-fold cross-validation against IDW (0 = off unless --cv, which means 5).")
]
CvMaxWindows = Annotated[int, typer.Option(help="Cross-validate at most this many windows (0 = all).")]
CvRefit = Annotated[
    bool,
    typer.Option(
        "--cv-refit", help="Re-optimise hyper-parameters in every fold (default: reuse the window's fit)."
    ),
]
GridFormat = Annotated[str, typer.Option(help="parquet | csv (file DIR/grid.<format>).")]
Plot = Annotated[
    bool, typer.Option("--plot/--no-plot", help="Also write map_mu_sigma2.png (matplotlib adds ~1 s).")
]
InterpolateBox = Annotated[
    str | None,
    typer.Option(help="Public box lat_min,lon_min,lat_max,lon_max (default: the readings' extent, not DP)."),
]
