"""The public Python API of the sensing wing: the releases the `urbandp sensing` commands run (examples, and how
keywords and ``data`` are read, in docs/sensing.md, section "Python API").

Each release runs in a charge of ``session`` (default: ``urbandp.Session()``, no store charged): the guards fire
and the budget is reserved before any noise; a release the store cannot afford raises
:class:`~urbandp.errors.BudgetExceededError` first. ``config``: a TOML file whose table (``[sensing.dp-map]``,
``[sensing.pm-map]``, ``[sensing.query]``) sets options by name, the file ``--config`` reads; keywords passed win
(:mod:`urbandp._config_tables`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

from urbandp._config_tables import takes_config
from urbandp._frames import TableLike
from urbandp._release_options import takes_options
from urbandp.sensing._options import DpMapOptions, InterpolateOptions, PmMapOptions, QueryOptions

if TYPE_CHECKING:
    from urbandp._option_types import DpMapKeywords, InterpolateKeywords, PmMapKeywords, QueryKeywords
    from urbandp._session import Session
    from urbandp.sensing._dp_map_release import DpMapResult
    from urbandp.sensing._interpolate_tool import Interpolation
    from urbandp.sensing._pm_map_release import PmMapResult
    from urbandp.sensing._query_release import QueryAnswer


def _session(session: Session | None) -> Session:
    from urbandp._session import Session

    return session if session is not None else Session()


@takes_config("sensing.dp-map")
@takes_options(DpMapOptions)
def dp_map(
    data: TableLike,
    *,
    session: Session | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    config: str | Path | None = None,
    **options: Unpack[DpMapKeywords],
) -> DpMapResult:
    """Differentially private posterior-variance maps: bounded Laplace (Holohan et al. 2018, the corrected
    calibration) on each cell's standardised GP variance sigma_p^2 (the paper's section VI-A), per window.

    ``rel.table`` is dp_grid.csv; the owner's material (quarantine, leakage before/after noise, the true map, the
    Fig. 6 utility curve) is in ``rel.owner["files"]``, written to ``owner_only/<name>/`` by ``rel.write``.
    Without ``start``/``end`` (or with ``bbox_from_data_not_private``) the release is NOT DP and labelled so.
    """
    from urbandp.sensing._dp_map_release import run_dp_map

    s = _session(session)
    return run_dp_map(data, DpMapOptions(dataset=s.dataset, **options), s, out, overwrite)


@takes_config("sensing.pm-map")
@takes_options(PmMapOptions)
def pm_map(
    data: TableLike,
    *,
    session: Session | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    config: str | Path | None = None,
    **options: Unpack[PmMapKeywords],
) -> PmMapResult:
    """A differentially private map of PM2.5: Laplace noise (OpenDP) on clipped counts and centred sums of every
    cell of every window of the public grid, then means and a smoothed map (post-processing).

    The unit is one vehicle-window (at most ``max_readings_per_vehicle_window`` readings) when the readings carry
    vehicle ids, else one reading; ``rel.privacy.per_vehicle`` states what a vehicle pays per window, day and
    release. ``rel.table`` is pm_cells.csv, ``rel.tables["pm_grid"]`` the smoothed map.
    """
    from urbandp.sensing._pm_map_release import run_pm_map

    return run_pm_map(data, PmMapOptions(**options), _session(session), out, overwrite)


@takes_config("sensing.query")
@takes_options(QueryOptions)
def query(
    grid: TableLike,
    *,
    session: Session | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    config: str | Path | None = None,
    **options: Unpack[QueryKeywords],
) -> QueryAnswer:
    """An aggregate query over the cells of a rectangle of one window of an interpolated grid (the paper's Table
    III: average, LogSumExp min/max, exact min/max, sigmoid count and range), with its propagated squared error
    released with the Laplace mechanism (section VII-D; unit one reading). The value is NOT DP (as in the paper).

    ``grid``: grid.parquet / grid.csv written by :func:`interpolate` (or a table with cell_id, lat, lon, window,
    mu, sigma2). ``out``: also write the answer JSON to this file.
    """
    from urbandp._frames import input_paths
    from urbandp._outputs import output_policy
    from urbandp.sensing._query_release import run_sensing_query

    o = QueryOptions(**options)
    s = _session(session)
    with input_paths(grid, "grid") as paths, output_policy(paths, overwrite=overwrite):
        rel = run_sensing_query(paths[0], o, s, None if out is None else Path(out))
    rel.emit_warnings()
    return rel


@takes_options(InterpolateOptions)
def interpolate(
    data: TableLike, *, out: str | Path, overwrite: bool = False, **options: Unpack[InterpolateKeywords]
) -> Interpolation:
    """NOT A RELEASE: GP interpolation per window onto a square grid, the data owner's private input of
    :func:`query` (the paper's server side). Nothing here is differentially private; the folder ``out`` is for the
    owner only. Options as `urbandp sensing interpolate` (:class:`~urbandp.sensing._options.InterpolateOptions`)."""
    from urbandp.sensing._interpolate_tool import run_interpolate
    from urbandp.sensing._result import readings_csv

    with readings_csv(data, overwrite) as path:
        o = InterpolateOptions(input_path=path, out=Path(out), **options)
        result = run_interpolate(o)
    warnings.warn(
        "urbandp.sensing.interpolate is not a release: its grid is NOT differentially private (owner only)",
        stacklevel=2,
    )
    return result
