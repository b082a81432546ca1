"""The survey wing's public Python API: the release path that ``urbandp survey ...`` calls.

::

    import urbandp as ud
    with ud.Session(store="budget.sqlite", dataset="travel-2021") as s:
        rel = ud.survey.randomize(df, column="model", categories="Camry,Civic,Leaf", epsilon=1,
                                  survey_date="2021-05-01", session=s)
    rel.table, rel.privacy.epsilon, rel.write("out/vehicles-rr")

Each option is declared once, as a field of the release's spec (:class:`RandomizeSpec`, :class:`PointsSpec`,
:class:`OdSpec`, :class:`TrajectoriesSpec`; :mod:`urbandp.spec_options`): the command's flags are built from the
fields, and the keywords here restate them, with the same defaults, for type checkers and editors. Options are
named as the command's flags with underscores (``--id`` is ``id_column``, ``--from``/``--to`` are
``origin``/``dest``, ``--keep-probability`` is ``keep_probability``) and have its defaults and checks. Each release
declares its privacy unit (``respondent`` for answers and locations, ``trip`` for trips) and runs inside one charge
of ``session`` (:class:`urbandp.Session`; default: no store): reserved before any draw, the guards inside the
reservation, committed after the folder ``out`` (if given) is written. ``data``: a CSV or Parquet path, or a table
(pandas, Polars eager or lazy, Arrow). ``config``: a TOML file whose table (``[survey.randomize]``, ...) sets
options by the command's flag names (the file ``--config`` reads; ``id``, ``from`` and ``to`` are read as
``id_column``, ``origin`` and ``dest``); keywords passed win (:mod:`urbandp.config_tables`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import polars as pl

from urbandp.config_tables import REQUIRED, takes_config
from urbandp.frames import TableLike, input_paths
from urbandp.session import Session
from urbandp.spec_options import declared_options
from urbandp.survey.charge import PERSON, RESPONDENT, TRIP
from urbandp.survey.od_release import OdSpec, od_body, od_estimate_table
from urbandp.survey.points_release import PointsSpec, points_body
from urbandp.survey.result import SurveyRelease, run_release
from urbandp.survey.rr_release import RandomizeSpec, estimate_table, randomize_body
from urbandp.survey.trajectory_release import TrajectoriesSpec, trajectories_body

__all__ = [
    "SurveyRelease",
    "estimate",
    "od_estimate",
    "od_randomize",
    "perturb_points",
    "perturb_trajectories",
    "randomize",
]

PathLike = str | Path


def _file_keys(spec: type) -> dict[str, str]:
    """The ``--config`` file's keys that are not the option's name (``id`` -> ``id_column``, ``from`` ->
    ``origin``): the flags the spec's fields declare (:attr:`urbandp.spec_options.DeclaredOption.flag`)."""
    keys = {o.flag[2:].replace("-", "_"): o.name for o in declared_options(spec)}
    return {key: name for key, name in keys.items() if key != name}


@takes_config("survey.randomize", _file_keys(RandomizeSpec))
def randomize(
    data: TableLike,
    *,
    column: str = REQUIRED,
    categories: str | None = None,
    categories_file: PathLike | None = None,
    within: str | None = None,
    epsilon: float | None = None,
    theta: float | None = None,
    aliases: PathLike | None = None,
    method: str = "krr",
    p: float | None = None,
    sampler: str = "opendp",
    separator: str = ",",
    budget_epsilon: float | None = None,
    survey_date: str | dt.date | None = None,
    id_column: str | None = None,
    keep_columns: str | None = None,
    session: Session | None = None,
    out: PathLike | None = None,
    overwrite: bool = False,
    command_line: str | None = None,
    config: PathLike | None = None,
) -> SurveyRelease:
    """Randomize one categorical column with randomized response (report sections 3.3, 4.1; eq. 5), per
    respondent: k-RR with ``epsilon`` (within each ``within`` list), binary RR with ``theta``, or the report's
    ``method="report-replacement"`` with ``p`` (eqs. 8-12, NOT DP, refused with a dataset)."""
    spec = RandomizeSpec(
        column=column,
        categories=categories,
        categories_file=None if categories_file is None else Path(categories_file),
        within=within,
        epsilon=epsilon,
        theta=theta,
        aliases=None if aliases is None else Path(aliases),
        method=method,
        p=p,
        sampler=sampler,
        separator=separator,
        budget_epsilon=budget_epsilon,
        id_column=id_column,
        keep_columns=keep_columns,
        command=command_line or RandomizeSpec.command,
    )
    return run_release(
        data,
        RESPONDENT,
        lambda path, label, charge: randomize_body(spec, path, label, charge),
        spec=spec,
        session=session,
        out=out,
        overwrite=overwrite,
        budget_epsilon=budget_epsilon,
        survey_date=survey_date,
    )


def estimate(
    data: TableLike,
    *,
    column: str,
    categories: str | None = None,
    categories_file: PathLike | None = None,
    within: str | None = None,
    epsilon: float | None = None,
    theta: float | None = None,
    separator: str = ",",
    out: PathLike | None = None,
    overwrite: bool = False,
) -> pl.DataFrame:
    """De-biased shares with 95 % confidence intervals from randomized answers (report eq. 6): post-processing of
    a :func:`randomize` output, no budget. With ``out`` the table is also written as a CSV file."""
    return _post_process(
        data,
        out,
        overwrite,
        lambda path, label: estimate_table(
            path,
            label,
            column=column,
            categories=categories,
            categories_file=None if categories_file is None else Path(categories_file),
            within=within,
            epsilon=epsilon,
            theta=theta,
            separator=separator,
        ),
    )


def _post_process(
    data: TableLike,
    out: PathLike | None,
    overwrite: bool,
    compute: Callable[[Path, str], pl.DataFrame],
) -> pl.DataFrame:
    """A table computed from a released file (no budget), written as CSV to ``out`` when given: the output is
    checked before the input is read, and never replaces an input."""
    from urbandp.outputs import atomic_output_file, check_output_file, output_policy

    with input_paths(data) as paths, output_policy(paths, overwrite=overwrite):
        if out is not None:
            check_output_file(Path(out))
        table = compute(paths[0], str(paths[0]) if isinstance(data, (str, Path)) else "data")
        if out is not None:
            with atomic_output_file(Path(out)) as tmp:
                table.write_csv(tmp)
    return table


@takes_config("survey.perturb-points", _file_keys(PointsSpec))
def perturb_points(
    data: TableLike,
    *,
    lat: str = REQUIRED,
    lon: str = REQUIRED,
    epsilon_per_metre: float | None = None,
    scale_metres: float | None = None,
    bbox: str | tuple[float, float, float, float] | None = None,
    separator: str = ",",
    budget_epsilon: float | None = None,
    budget_metres: float = 1000.0,
    survey_date: str | dt.date | None = None,
    id_column: str | None = None,
    keep_columns: str | None = None,
    session: Session | None = None,
    out: PathLike | None = None,
    overwrite: bool = False,
    command_line: str | None = None,
    config: PathLike | None = None,
) -> SurveyRelease:
    """Perturb one location per respondent: planar Laplace with ``epsilon_per_metre`` (geo-indistinguishability,
    Andres et al. 2013) or per-axis Laplace with ``scale_metres`` (report eq. 14). Its guarantee is
    geo-indistinguishability (epsilon per metre), not DP: refused with a dataset; ``budget_epsilon`` caps epsilon
    per metre x ``budget_metres``. With ``bbox`` (min_lat, max_lat, min_lon, max_lon) a location is clamped into
    the box, coordinate by coordinate (which can lengthen a distance)."""
    box = ",".join(map(str, bbox)) if isinstance(bbox, tuple) else bbox
    spec = PointsSpec(
        lat=lat,
        lon=lon,
        epsilon_per_metre=epsilon_per_metre,
        scale_metres=scale_metres,
        bbox=box,
        separator=separator,
        budget_epsilon=budget_epsilon,
        budget_metres=budget_metres,
        id_column=id_column,
        keep_columns=keep_columns,
        command=command_line or PointsSpec.command,
    )
    return run_release(
        data,
        RESPONDENT,
        lambda path, label, charge: points_body(spec, path, label, charge),
        spec=spec,
        session=session,
        out=out,
        overwrite=overwrite,
        budget_epsilon=budget_epsilon,
        survey_date=survey_date,
    )


@takes_config("survey.od-randomize", _file_keys(OdSpec))
def od_randomize(
    data: TableLike,
    *,
    origin: str = REQUIRED,
    dest: str = REQUIRED,
    blocks_file: PathLike | None = None,
    blocks: int | None = None,
    keep_probability: float | None = None,
    epsilon: float | None = None,
    person: str | None = None,
    max_trips_per_person: int | None = None,
    method: str = "rr",
    sampler: str = "opendp",
    separator: str = ",",
    budget_epsilon: float | None = None,
    survey_date: str | dt.date | None = None,
    id_column: str | None = None,
    keep_columns: str | None = None,
    session: Session | None = None,
    out: PathLike | None = None,
    overwrite: bool = False,
    command_line: str | None = None,
    config: PathLike | None = None,
) -> SurveyRelease:
    """Randomize origin-destination pairs over declared blocks: OD randomized response (report eq. 13) with
    ``keep_probability`` or ``epsilon`` per trip; ``method="histogram"``/``"histogram-joint"`` is the report's
    section 6.3 (NOT DP, refused with a dataset). With ``person`` and ``max_trips_per_person`` each person keeps at
    most that many trips and the release protects a person (unit ``person``, charged K x epsilon per trip)."""
    spec = OdSpec(
        origin=origin,
        dest=dest,
        blocks_file=None if blocks_file is None else Path(blocks_file),
        blocks=blocks,
        keep_probability=keep_probability,
        epsilon=epsilon,
        person=person,
        max_trips_per_person=max_trips_per_person,
        method=method,
        sampler=sampler,
        separator=separator,
        budget_epsilon=budget_epsilon,
        id_column=id_column,
        keep_columns=keep_columns,
        command=command_line or OdSpec.command,
    )
    return run_release(
        data,
        PERSON if spec.per_person else TRIP,
        lambda path, label, charge: od_body(spec, path, label, charge),
        spec=spec,
        session=session,
        out=out,
        overwrite=overwrite,
        budget_epsilon=budget_epsilon,
        survey_date=survey_date,
    )


def od_estimate(
    data: TableLike,
    *,
    origin: str,
    dest: str,
    blocks_file: PathLike | None = None,
    blocks: int | None = None,
    keep_probability: float | None = None,
    epsilon: float | None = None,
    separator: str = ",",
    out: PathLike | None = None,
    overwrite: bool = False,
) -> pl.DataFrame:
    """The de-biased OD table of an :func:`od_randomize` release (the inverse of report eq. 13): for every declared
    pair its released count, the unbiased estimate of its true count, the estimator's standard deviation
    (analytic) and a 95 % interval. Post-processing, no budget: give the blocks and ``keep_probability`` (or
    ``epsilon`` per trip) the release was made with. With ``out`` the table is also written as a CSV file."""
    spec = OdSpec(
        origin=origin,
        dest=dest,
        blocks_file=None if blocks_file is None else Path(blocks_file),
        blocks=blocks,
        keep_probability=keep_probability,
        epsilon=epsilon,
        separator=separator,
    )
    return _post_process(data, out, overwrite, lambda path, label: od_estimate_table(path, label, spec))


@takes_config("survey.perturb-trajectories", _file_keys(TrajectoriesSpec))
def perturb_trajectories(
    data: TableLike,
    *,
    lat: str = REQUIRED,
    lon: str = REQUIRED,
    trip: str = REQUIRED,
    epsilon: float = REQUIRED,
    max_step_metres: float = REQUIRED,
    order: str | None = None,
    every: int = 1,
    max_trips: int | None = None,
    person: str | None = None,
    max_trips_per_person: int | None = None,
    separator: str = ",",
    budget_epsilon: float | None = None,
    survey_date: str | dt.date | None = None,
    keep_columns: str | None = None,
    session: Session | None = None,
    out: PathLike | None = None,
    overwrite: bool = False,
    command_line: str | None = None,
    config: PathLike | None = None,
) -> SurveyRelease:
    """SSD trajectory perturbation per trip (report section 6.1, eq. 16; Jiang et al. 2013). NOT DP as a whole
    (every trip's start and end are published): refused with a dataset. With ``person`` and
    ``max_trips_per_person`` each person keeps at most that many trips."""
    spec = TrajectoriesSpec(
        lat=lat,
        lon=lon,
        trip=trip,
        epsilon=epsilon,
        max_step_metres=max_step_metres,
        order=order,
        every=every,
        max_trips=max_trips,
        person=person,
        max_trips_per_person=max_trips_per_person,
        separator=separator,
        budget_epsilon=budget_epsilon,
        keep_columns=keep_columns,
        command=command_line or TrajectoriesSpec.command,
    )
    return run_release(
        data,
        TRIP if spec.person is None else PERSON,
        lambda path, label, charge: trajectories_body(spec, path, label, charge),
        spec=spec,
        session=session,
        out=out,
        overwrite=overwrite,
        budget_epsilon=budget_epsilon,
        survey_date=survey_date,
    )
