"""The survey wing's public Python API, the release path the ``urbandp survey`` commands call (docs/survey.md,
section "Python API"). Each option is one field of its release's spec (:mod:`urbandp._release_options`): the
command's flag with underscores, its default and its checks. Each release declares its privacy unit
(``respondent`` for answers and locations, ``trip`` or ``person`` for trips) and runs inside one charge of
``session`` (:func:`urbandp.survey._result.run_release`); ``config`` is the TOML file ``--config`` reads.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

import polars as pl

from urbandp._config_tables import takes_config
from urbandp._frames import TableLike, input_paths
from urbandp._release_options import declared_options, takes_options
from urbandp._session import Session
from urbandp.survey._charge import PERSON, RESPONDENT, TRIP
from urbandp.survey._od_release import ESTIMATE_OPTIONS as OD_ESTIMATE_OPTIONS
from urbandp.survey._od_release import OdSpec, od_body, od_estimate_table
from urbandp.survey._points_release import PointsSpec, points_body
from urbandp.survey._result import SurveyRelease, run_release
from urbandp.survey._rr_release import ESTIMATE_OPTIONS as RR_ESTIMATE_OPTIONS
from urbandp.survey._rr_release import RandomizeSpec, estimate_table, randomize_body
from urbandp.survey._trajectory_release import TrajectoriesSpec, trajectories_body

if TYPE_CHECKING:
    from urbandp._option_types import (
        EstimateKeywords,
        OdEstimateKeywords,
        OdRandomizeKeywords,
        PerturbPointsKeywords,
        PerturbTrajectoriesKeywords,
        RandomizeKeywords,
    )

PathLike = str | Path


def _file_keys(spec: type) -> dict[str, str]:
    """The ``--config`` file's keys that are not the option's name (``id`` -> ``id_column``, ``from`` ->
    ``origin``): the flags the spec's fields declare (:attr:`urbandp._release_options.DeclaredOption.flag`)."""
    keys = {o.flag[2:].replace("-", "_"): o.name for o in declared_options(spec)}
    return {key: name for key, name in keys.items() if key != name}


@takes_config("survey.randomize", _file_keys(RandomizeSpec))
@takes_options(RandomizeSpec)
def randomize(
    data: TableLike,
    *,
    survey_date: str | dt.date | None = None,
    session: Session | None = None,
    out: PathLike | None = None,
    overwrite: bool = False,
    command_line: str | None = None,
    config: PathLike | None = None,
    **options: Unpack[RandomizeKeywords],
) -> SurveyRelease:
    """Randomize one categorical column with randomized response (report sections 3.3, 4.1; eq. 5), per
    respondent: k-RR with ``epsilon`` (within each ``within`` list), binary RR with ``theta``, or the report's
    ``method="report-replacement"`` with ``p`` (eqs. 8-12, NOT DP, refused with a dataset)."""
    spec = RandomizeSpec(**options, **_command(command_line))
    return run_release(data, RESPONDENT, spec, randomize_body, survey_date, session, out, overwrite)


@takes_options(RandomizeSpec, only=RR_ESTIMATE_OPTIONS)
def estimate(
    data: TableLike,
    *,
    out: PathLike | None = None,
    overwrite: bool = False,
    **options: Unpack[EstimateKeywords],
) -> pl.DataFrame:
    """De-biased shares with 95 % confidence intervals from randomized answers (report eq. 6): post-processing of
    a :func:`randomize` output, no budget. With ``out`` the table is also written as a CSV file. The options are
    :func:`randomize`'s that the release was made with, checked as there."""
    spec = RandomizeSpec(**options)
    return _post_process(data, out, overwrite, lambda path, label: estimate_table(path, label, spec))


def _post_process(
    data: TableLike,
    out: PathLike | None,
    overwrite: bool,
    compute: Callable[[Path, str], pl.DataFrame],
) -> pl.DataFrame:
    """A table computed from a released file (no budget), written as CSV to ``out`` when given: the output is
    checked before the input is read, and never replaces an input."""
    from urbandp._outputs import atomic_output_file, check_output_file, output_policy

    with input_paths(data) as paths, output_policy(paths, overwrite=overwrite):
        if out is not None:
            check_output_file(Path(out))
        table = compute(paths[0], str(paths[0]) if isinstance(data, (str, Path)) else "data")
        if out is not None:
            with atomic_output_file(Path(out)) as tmp:
                table.write_csv(tmp)
    return table


@takes_config("survey.perturb-points", _file_keys(PointsSpec))
@takes_options(PointsSpec)
def perturb_points(
    data: TableLike,
    *,
    survey_date: str | dt.date | None = None,
    session: Session | None = None,
    out: PathLike | None = None,
    overwrite: bool = False,
    command_line: str | None = None,
    config: PathLike | None = None,
    **options: Unpack[PerturbPointsKeywords],
) -> SurveyRelease:
    """Perturb one location per respondent: planar Laplace with ``epsilon_per_metre`` (geo-indistinguishability,
    Andres et al. 2013) or per-axis Laplace with ``scale_metres`` (report eq. 14). Its guarantee is
    geo-indistinguishability (epsilon per metre), not DP: refused with a dataset; ``budget_epsilon`` caps epsilon
    per metre x ``budget_metres``. With ``bbox`` (min_lat, min_lon, max_lat, max_lon, the order of every box in urbandp) a location is clamped into
    the box, coordinate by coordinate (which can lengthen a distance)."""
    spec = PointsSpec(**options, **_command(command_line))
    return run_release(data, RESPONDENT, spec, points_body, survey_date, session, out, overwrite)


@takes_config("survey.od-randomize", _file_keys(OdSpec))
@takes_options(OdSpec)
def od_randomize(
    data: TableLike,
    *,
    survey_date: str | dt.date | None = None,
    session: Session | None = None,
    out: PathLike | None = None,
    overwrite: bool = False,
    command_line: str | None = None,
    config: PathLike | None = None,
    **options: Unpack[OdRandomizeKeywords],
) -> SurveyRelease:
    """Randomize origin-destination pairs over declared blocks: OD randomized response (report eq. 13) with
    ``keep_probability`` or ``epsilon`` per trip; ``method="histogram"``/``"histogram-joint"`` is the report's
    section 6.3 (NOT DP, refused with a dataset). With ``person`` and ``max_trips_per_person`` each person keeps at
    most that many trips and the release protects a person (unit ``person``, charged K x epsilon per trip)."""
    spec = OdSpec(**options, **_command(command_line))
    unit = PERSON if spec.per_person else TRIP
    return run_release(data, unit, spec, od_body, survey_date, session, out, overwrite)


@takes_options(OdSpec, only=OD_ESTIMATE_OPTIONS)
def od_estimate(
    data: TableLike,
    *,
    out: PathLike | None = None,
    overwrite: bool = False,
    **options: Unpack[OdEstimateKeywords],
) -> pl.DataFrame:
    """The de-biased OD table of an :func:`od_randomize` release (the inverse of report eq. 13): for every declared
    pair its released count, the unbiased estimate of its true count, the estimator's standard deviation
    (analytic) and a 95 % interval. Post-processing, no budget: give the blocks and ``keep_probability`` (or
    ``epsilon`` per trip) the release was made with. With ``out`` the table is also written as a CSV file."""
    spec = OdSpec(**options)
    return _post_process(data, out, overwrite, lambda path, label: od_estimate_table(path, label, spec))


@takes_config("survey.perturb-trajectories", _file_keys(TrajectoriesSpec))
@takes_options(TrajectoriesSpec)
def perturb_trajectories(
    data: TableLike,
    *,
    survey_date: str | dt.date | None = None,
    session: Session | None = None,
    out: PathLike | None = None,
    overwrite: bool = False,
    command_line: str | None = None,
    config: PathLike | None = None,
    **options: Unpack[PerturbTrajectoriesKeywords],
) -> SurveyRelease:
    """SSD trajectory perturbation per trip (report section 6.1, eq. 16; Jiang et al. 2013). NOT DP as a whole
    (every trip's start and end are published): refused with a dataset. With ``person`` and
    ``max_trips_per_person`` each person keeps at most that many trips."""
    spec = TrajectoriesSpec(**options, **_command(command_line))
    unit = TRIP if spec.person is None else PERSON
    return run_release(data, unit, spec, trajectories_body, survey_date, session, out, overwrite)


def _command(line: str | None) -> dict[str, str]:
    """The spec's ``command``: the command line that ran the release, else the spec's own default."""
    return {} if line is None else {"command": line}
