"""CLI group `urbandp sensing`: GP interpolation, DP variance maps, aggregate queries, synthetic readings.

Thin: each command hands its typed arguments to the library (:mod:`urbandp.sensing._api`) and prints the result.
The options of `interpolate`, `dp-map`, `pm-map` and `query` are the fields of their option classes
(:mod:`urbandp.sensing._options`, :class:`urbandp._cli_spec.OptionsOf`); only where the run reads, writes and
books its loss is declared here.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from urbandp._cli_config import config_option
from urbandp._cli_options import AllowMeaninglessEpsilon, BudgetStoreUrl, Dataset, Overwrite
from urbandp._cli_spec import OptionsOf, command
from urbandp._cli_support import cli_guard, cli_text, quietly
from urbandp.sensing._options import (
    DpMapOptions,
    InterpolateOptions,
    PlanOptions,
    PmMapOptions,
    QueryOptions,
    as_box,
    parse_cell_sizes,
    parse_utility_epsilons,
    parse_windows,
)

if TYPE_CHECKING:
    from urbandp.sensing._dp_map_release import DpMapResult
    from urbandp.sensing._pm_map_release import PmMapResult
    from urbandp.sensing._query_release import QueryAnswer

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)
R = TypeVar("R")


@app.command()
@cli_guard
def synth(
    out: Annotated[Path, typer.Argument(help="CSV to write (lat, lon, time, value, vehicle).")],
    readings: Annotated[int, typer.Option(help="Number of readings.")] = 1400,
    vehicles: Annotated[int, typer.Option(help="Number of vehicles.")] = 10,
    hours: Annotated[int, typer.Option(help="Hours (one-hour windows) the readings span.")] = 1,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    overwrite: Overwrite = False,
) -> None:
    """Write synthetic fleet readings of a smooth pollution field (for trying the other commands).

    Example: urbandp sensing synth out/readings.csv --readings 1400 --vehicles 10
    """
    from urbandp.sensing._synth import write_synth_readings

    print(f"wrote {readings} readings to {write_synth_readings(out, readings, vehicles, hours, seed)}")


Readings = Annotated[
    Path, typer.Argument(metavar="INPUT", help="CSV of readings: lat, lon|long, time, value|pm.")
]
OutDir = Annotated[Path, typer.Option("--out", help="Output directory.")]


@dataclasses.dataclass(frozen=True, kw_only=True)
class InterpolateArguments:
    """``urbandp sensing interpolate``: the readings, the folder and the options of
    :class:`~urbandp.sensing._options.InterpolateOptions`."""

    input_path: Readings
    out: OutDir
    options: Annotated[dict[str, Any], OptionsOf(InterpolateOptions, parse={"bbox": as_box("bbox")})]
    overwrite: Overwrite = False


@command(app, InterpolateArguments)
def interpolate(a: InterpolateArguments) -> None:
    """GP interpolation per window onto a square grid: DIR/grid.parquet (cell_id, lat, lon, window, mu, sigma2).

    The grid is the server's private input (NOT differentially private); see `dp-map` and `query` for releases.
    Parquet holds one row group per window, so `query` reads one window; `--grid-format csv` writes grid.csv.

    Example: urbandp sensing interpolate kolkata-pm25/Mobile_Spring.csv --cell-metres 500 --out out/kolkata
    """
    from urbandp.sensing._interpolate_tool import run_interpolate

    print(run_interpolate(InterpolateOptions(input_path=a.input_path, out=a.out, **a.options)).summary())


@dataclasses.dataclass(frozen=True, kw_only=True)
class MapArguments:
    """A map release (``dp-map``, ``pm-map``): the readings, the folder, the ``--config`` file and the options (a
    subclass declares both, in these places), and where the loss is booked, as the library's function takes them."""

    input_path: Readings
    out: OutDir
    config: Path | None = None  # read by its callback into the options' defaults
    options: dict[str, Any]
    dataset: Dataset = None
    budget_store: BudgetStoreUrl = None
    allow_meaningless_epsilon: AllowMeaninglessEpsilon = False
    overwrite: Overwrite = False

    def run(self, release: Callable[..., R]) -> R:
        """``release(readings, session=..., out=..., **options)``, its warnings left to the command."""
        from urbandp._session import Session

        session = Session(
            self.budget_store, self.dataset, allow_meaningless_epsilon=self.allow_meaningless_epsilon
        )
        return quietly(
            release, self.input_path, session=session, out=self.out, overwrite=self.overwrite, **self.options
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class DpMapArguments(MapArguments):
    config: Annotated[Path | None, config_option("sensing.dp-map")] = None
    options: Annotated[
        dict[str, Any],
        OptionsOf(DpMapOptions, parse={"bbox": as_box("bbox"), "utility_epsilons": parse_utility_epsilons}),
    ]


@dataclasses.dataclass(frozen=True, kw_only=True)
class PmMapArguments(MapArguments):
    config: Annotated[Path | None, config_option("sensing.pm-map")] = None
    options: Annotated[dict[str, Any], OptionsOf(PmMapOptions, parse={"bbox": as_box("bbox")})]


@command(app, DpMapArguments, "dp-map")
def dp_map(a: DpMapArguments) -> None:
    """Differentially private posterior-variance maps (bounded Laplace, Holohan et al.), leakage before/after.

    Publishable (DIR/): dp_grid.csv (cell_id, lat, lon, window, sigma2_dp in standardised units) and
    privacy.json. Data-owner material, NOT DP (owner_only/<name>/ beside DIR): quarantine.csv, input_report.json,
    leakage.csv + leakage_summary.json, dp_sigma2.png (true map and reading locations), rmse_vs_epsilon.csv +
    .png (paper Fig. 6). Without --start/--end the window comes from the data and the release is NOT DP.

    Example: urbandp sensing dp-map kolkata-pm25/Mobile_Spring.csv --bbox 22.45,88.30,22.65,88.47 --start 2023-04-25 --end 2023-04-27 --epsilon 1 --out out/dpmap
    """
    from urbandp.sensing._api import dp_map as release

    _print_dp_map(a.run(release), a.out, **a.options)


@command(app, PmMapArguments, "pm-map")
def pm_map(a: PmMapArguments) -> None:
    """A differentially private map of PM2.5 itself: noisy clipped sums and counts per cell and window, smoothed.

    Publishable (DIR/): pm_cells.csv (noisy count and sum per cell and window, the mean derived from them),
    pm_grid.csv (the map smoothed by --smoother, post-processing) and privacy.json. The unit is one
    vehicle-window (at most M readings) when the readings carry vehicle ids, else one reading; windows compose in
    parallel, so the release costs --epsilon per unit, and privacy.json states what a vehicle pays per window,
    per day and over the release. docs/sensing.md measures its RMSE at the Kolkata static stations.

    Example: urbandp sensing pm-map kolkata-pm25/Mobile_Autumn.csv --bbox 22.45,88.30,22.65,88.47 --start 2023-09-15 --end 2023-10-31 --window-minutes 1440 --epsilon 4 --out out/pm
    """
    from urbandp.sensing._api import pm_map as release

    _print_pm_map(a.run(release), a.out, **a.options)


@dataclasses.dataclass(frozen=True, kw_only=True)
class QueryArguments:
    """``urbandp sensing query``: the grid, the options of :class:`~urbandp.sensing._options.QueryOptions`, and
    where the answer is also written."""

    grid_csv: Annotated[
        Path, typer.Argument(metavar="GRID", help="grid.parquet (or grid.csv) written by `interpolate`.")
    ]
    config: Annotated[Path | None, config_option("sensing.query")] = None  # read by its callback
    options: Annotated[
        dict[str, Any], OptionsOf(QueryOptions, parse={"rect": as_box("rect"), "select": as_box("select")})
    ]
    out: Annotated[
        Path | None, typer.Option("--out", help="Also write the answer as JSON here (default: stdout only).")
    ] = None
    allow_meaningless_epsilon: AllowMeaninglessEpsilon = False
    overwrite: Overwrite = False


@command(app, QueryArguments)
def query(a: QueryArguments) -> None:
    """Aggregate query with propagated error (Table III) and a DP squared error (section VII-D).

    Example: urbandp sensing query out/kolkata/grid.parquet --rect 22.50,88.32,22.56,88.37 --type max --rho 0.5 --sigma2-min 0 --sigma2-max 800
    """
    from urbandp._session import Session
    from urbandp.sensing._api import query as release

    session = Session(allow_meaningless_epsilon=a.allow_meaningless_epsilon)
    rel = quietly(release, a.grid_csv, session=session, out=a.out, overwrite=a.overwrite, **a.options)
    for line in rel.warnings:
        print(f"note: {line}", file=sys.stderr)
    _print_answer(rel)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PlanArguments:
    """``urbandp sensing plan``: the public figures of :class:`~urbandp.sensing._options.PlanOptions`."""

    o: Annotated[
        PlanOptions,
        OptionsOf(parse={"bbox": as_box("bbox"), "cell_metres": parse_cell_sizes, "windows": parse_windows}),
    ]


@command(app, PlanArguments, "plan")
def plan(a: PlanArguments) -> None:
    """Plan a pm-map from public figures: the shortest window and finest cells at which a cell's DP mean carries
    more signal than noise. Reads no data and spends no budget.

    Example: urbandp sensing plan --bbox 22.45,88.30,22.65,88.47 --readings-per-day 295 --share-visited 0.26 --epsilon 4
    """
    from urbandp.sensing._planner import plan_sensing, plan_text

    rows, best = plan_sensing(a.o)
    print(cli_text(plan_text(rows, best, a.o.epsilon)))


def _print_dp_map(rel: DpMapResult, out: Path, *, epsilon: float, **options: object) -> None:
    """What the command prints of a release written to ``out`` with ``options``: its warnings, the owner's
    timings, one summary line."""
    from urbandp._outputs import owner_dir_for
    from urbandp.sensing._report import DpMapPrivacyReport

    for line in rel.warnings:
        print(f"urbandp: warning: {cli_text(line)}", file=sys.stderr)
    for line in rel.owner["timing"]:
        print(f"urbandp: dp-map timing (owner only): {line}", file=sys.stderr)
    privacy = rel.privacy
    assert isinstance(privacy, DpMapPrivacyReport)
    if privacy.calibration == "paper":
        cost = "epsilon: none (paper calibration: NOT differentially private)"
    else:
        cost = (
            f"epsilon per cell {epsilon:g} (per reading / window map "
            f"{privacy.epsilon_per_window_map:.6g} at delta {privacy.delta_per_reading:.2g}; per vehicle-day "
            f"{privacy.epsilon_per_vehicle_day:.6g}; vehicle in every window "
            f"{privacy.epsilon_vehicle_upper_bound:.6g})"
        )
    print(
        f"{privacy.windows_released} windows x {privacy.cells_per_window} cells; {cost}; {privacy.dp_label} -> "
        f"{out} (owner-only material, not DP: {owner_dir_for(out)})"
    )


def _print_pm_map(rel: PmMapResult, out: Path, *, smoother: str, **options: object) -> None:
    """What the command prints of a release written to ``out`` with ``options``: the owner's warnings and one
    summary line."""
    from urbandp.sensing._report import PmMapPrivacyReport

    for line in rel.owner_warnings:
        print(f"urbandp: warning (owner only, from the true readings): {cli_text(line)}", file=sys.stderr)
    p = rel.privacy
    assert isinstance(p, PmMapPrivacyReport)
    label = p.privacy_unit or ""
    per_vehicle = ""
    if p.per_vehicle.bounded:
        m = p.per_vehicle.max_readings_per_vehicle_window  # type: ignore[attr-defined]
        per_vehicle = (
            f" (at most {m} readings, {p.epsilon_per_reading:.4g} per reading; "
            f"{p.budget_booked.epsilon_per_day:.4g} per vehicle-day)"
        )
    clip = p.clip["high"]  # type: ignore[attr-defined]
    print(
        f"{p.windows['count']} windows x {p.grid['cells']} cells; "  # type: ignore[attr-defined]
        f"epsilon {p.epsilon_per_unit:.4g} per {label[4:]}"
        + per_vehicle
        + f" (Laplace on counts and centred sums, clip {clip:g}); smoother {smoother} -> {out}"
    )


def _print_answer(rel: QueryAnswer) -> None:
    """What `sensing query` prints: the answer on stdout, a summary (or the refusal) on stderr."""
    from urbandp._outputs import dumps_strict

    res = rel.result
    print(dumps_strict(rel.table.row(0, named=True), indent=None))
    if not res.answered:
        n = rel.answer["cells_selected"]
        print(
            f"refused: {n} cells selected < alpha = {rel.answer['alpha']} (nothing released)", file=sys.stderr
        )
    else:
        from urbandp.sensing._queries import describe_error2

        print(
            f"{rel.answer['query']} over {res.n_selected} cells: value {res.value:.4f} (not DP), "
            f"{describe_error2(res.noisy_error2, res.error2_scale())}; epsilon {res.epsilon:.6g}, per reading",
            file=sys.stderr,
        )
