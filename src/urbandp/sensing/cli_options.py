"""The options of the `urbandp sensing` commands, declared once as typed ``Annotated`` aliases with their help.

The command functions (:mod:`urbandp.sensing.cli`) take these types and the defaults of the library's option
classes (:mod:`urbandp.sensing.options`), so a flag's help lives here, its default and validation there.
Options shared by every wing (``--overwrite``, ``--dataset``, ...) are in :mod:`urbandp.cli_options`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# --- shared by several sensing commands -------------------------------------------------------------------------

ReadingsCsv = Annotated[
    Path, typer.Argument(metavar="INPUT", help="CSV of readings: lat, lon|long, time, value|pm.")
]
OutDir = Annotated[Path, typer.Option("--out", help="Output directory.")]
ValueColumn = Annotated[
    str | None,
    typer.Option(help="Name of the value column (default: the first of value, pm, pm25, pm2_5, pm2.5)."),
]
CellMetres = Annotated[float, typer.Option(help="Grid cell side z in metres.")]
WindowMinutes = Annotated[int, typer.Option(help="Window length in minutes.")]
Kernel = Annotated[str, typer.Option(help="matern32 | matern52 | rbf.")]

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

# --- sensing dp-map ---------------------------------------------------------------------------------------------

DpMapEpsilon = Annotated[
    float, typer.Option(help="Epsilon per cell (the paper's epsilon); the map costs cells x it.")
]
DpMapBox = Annotated[
    str | None,
    typer.Option(
        help="Public box lat_min,lon_min,lat_max,lon_max (default: none; required unless the flag below)."
    ),
]
BoxFromData = Annotated[bool, typer.Option(help="Take the box from the readings (NOT DP).")]
Sensitivity = Annotated[float, typer.Option(help="Cap on the kernel variance = per-cell sensitivity (VI-A).")]
Upper = Annotated[
    float | None,
    typer.Option(
        help="Upper bound of the released domain, at least the sensitivity (default: the sensitivity)."
    ),
]
Calibration = Annotated[str, typer.Option(help="holohan (DP, default) | paper (NOT DP, for comparison).")]
UtilityEpsilons = Annotated[str, typer.Option(help="Epsilons for the Fig. 6 RMSE CDF ('' = off).")]
PriorMinReadings = Annotated[int, typer.Option(help="Windows with fewer readings get the prior variance.")]
Budget = Annotated[
    float | None, typer.Option(help="Refuse to spend more than this epsilon in total (default: no cap).")
]
Precision = Annotated[int, typer.Option(help="Decimal places of released values.")]
DpMapStart = Annotated[
    str | None,
    typer.Option(
        help="Public start of the time window, ISO date or date-time (default: the first reading, not DP)."
    ),
]
DpMapEnd = Annotated[
    str | None,
    typer.Option(
        help="Public end of the window, exclusive; a date includes that day (default: the last reading, not DP)."
    ),
]
Delta = Annotated[
    float,
    typer.Option(
        help="Delta of the optimal composition of a window's cells (Kairouz, Oh, Viswanath): the map is "
        "(epsilon, delta)-DP with epsilon far below cells x epsilon; 0 gives the basic sum at delta 0."
    ),
]

# --- sensing pm-map ---------------------------------------------------------------------------------------------

PmMapBox = Annotated[str, typer.Option(help="Public box lat_min,lon_min,lat_max,lon_max (the grid).")]
PmMapStart = Annotated[str, typer.Option(help="Public start of the time window, ISO date or date-time.")]
PmMapEnd = Annotated[str, typer.Option(help="Public end of the window, exclusive; a date includes that day.")]
PmMapEpsilon = Annotated[
    float, typer.Option(help="Epsilon per privacy unit (per vehicle-window, or per reading; see --unit).")
]
Unit = Annotated[
    str | None,
    typer.Option(
        help="vehicle-window | reading (default: vehicle-window when the input has a vehicle column, else reading)."
    ),
]
VehicleColumn = Annotated[
    str | None,
    typer.Option(help="Column of vehicle ids (default: a column named 'vehicle', if the input has one)."),
]
MaxReadings = Annotated[
    int,
    typer.Option(
        help="Public bound M: a vehicle-window keeps at most M readings (evenly spaced in time); the noise "
        "grows with M."
    ),
]
Clip = Annotated[float, typer.Option(help="Public upper bound of a reading; values are clipped to [0, it].")]
PmCellMetres = Annotated[float, typer.Option(help="Grid cell side in metres.")]
Smoother = Annotated[str, typer.Option(help="gp | idw | none: how the noisy cells become a map.")]

# --- sensing query ----------------------------------------------------------------------------------------------

GridFile = Annotated[
    Path, typer.Argument(metavar="GRID", help="grid.parquet (or grid.csv) written by `interpolate`.")
]
Rect = Annotated[str, typer.Option(help="Obfuscation rectangle lat1,lon1,lat2,lon2 (diagonal vertices).")]
QueryType = Annotated[str, typer.Option("--type", help="average|min|max|min-exact|max-exact|count|range.")]
QueryWindow = Annotated[
    str | None, typer.Option(help="Window start as in the grid file (default: the first).")
]
Select = Annotated[
    str | None, typer.Option(help="Cells of interest lat1,lon1,lat2,lon2 (default: all of --rect).")
]
CellsFile = Annotated[
    Path | None,
    typer.Option(
        help="File of cells of interest, one cell_id per line as for mpc query (default: every cell of --rect)."
    ),
]
Alpha = Annotated[int, typer.Option(help="Server threshold: answer only over >= alpha cells.")]
Rho = Annotated[float, typer.Option(help="LogSumExp sharpness |rho| for min/max.")]
Theta = Annotated[
    float | None,
    typer.Option(
        help="Threshold for count and lower bound for range (default: none; required for count and range)."
    ),
]
Theta2 = Annotated[
    float | None, typer.Option(help="Upper bound for range (default: none; required for range).")
]
Steepness = Annotated[float, typer.Option(help="Sigmoid steepness k (paper: 1).")]
QueryEpsilon = Annotated[float, typer.Option(help="Epsilon for the noisy squared error (VII-D).")]
Sigma2Min = Annotated[
    float | None, typer.Option(help="Public lower bound of cell variances (default: none; required).")
]
Sigma2Max = Annotated[
    float | None, typer.Option(help="Public upper bound of cell variances (default: none; required).")
]
AnswerOut = Annotated[
    Path | None, typer.Option(help="Also write the answer as JSON here (default: stdout only).")
]
