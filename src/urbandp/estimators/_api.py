"""The Python API of the user-level mean estimators: ``urbandp.estimators.release``.

::

    import urbandp as ud
    with ud.Session(store="budget.sqlite", dataset="austin") as s:
        rel = ud.estimators.release("avl.csv", unit_column="vehicle_id", value_column="speed", upper=65,
                                    epsilon=1, day="2015-03-18", session=s)
    rel.table                      # one row: estimator, estimate, noise_scale, interval, epsilon
    rel.privacy.epsilon_spent      # the typed report; rel.privacy.to_json() is privacy.json
    rel.write("out/mean")          # the release folder, owner_only/mean/ beside it

One user-level mean (Gupta et al., *Mean Estimation with User-Level Privacy for Spatio-Temporal IoT Datasets*)
through one charge of the :class:`urbandp.Session`: the guards and the store's reservation run before any noise,
and every draw goes through the charge (docs/architecture.md, section 4). The paper's four estimators are DP under
Def. II.1 only, so under add/remove-one-unit, the budget store's relation, they are labelled NOT DP and refused
with a budget dataset, as in the fleet (docs/estimators.md, "Python API").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np
import polars as pl
from pydantic import ValidationInfo, field_validator

from urbandp._arguments import check_date, check_name, check_path, check_switch, check_table
from urbandp._frames import TableLike, input_paths
from urbandp._outputs import atomic_output_dir, output_policy, owner_file_seen_from_release, write_json
from urbandp._privacy.budget_store import UNITS
from urbandp._privacy.loss import Loss
from urbandp._privacy.report import write_privacy_json
from urbandp._privacy.session import ReleaseCharge
from urbandp._release_options import ReleaseOptions, option, takes_options
from urbandp._session import Session, check_session
from urbandp._table_reader import read_table
from urbandp.errors import InputDataError, InvalidParameterError
from urbandp.estimators._core import BY_NAME, ESTIMATORS, PAPER_ESTIMATORS, MeanEstimate, _Estimator
from urbandp.estimators._grouping import GROUPINGS
from urbandp.estimators._report import EstimatorPrivacyReport
from urbandp.results import Release

if TYPE_CHECKING:
    from urbandp._option_types import EstimatorReleaseKeywords

_TAKES: dict[str, tuple[str, ...]] = {
    name: tuple(f.name for f in fields(cls) if f.name not in ("upper", "levels"))
    for name, cls in BY_NAME.items()
}
"""The estimator options each estimator takes: its constructor's parameters besides ``upper`` (and QUANTILE's
``levels``, which a release leaves at FIXEDQUANTILE's)."""
ADD_REMOVE_LABEL = "epsilon-DP under add/remove-one-unit (a unit's presence, count and values protected)"
QUARANTINE_NOTE = "raw rejected input rows with their reason"
INPUT_REPORT_NOTE = "row, unit and sample counts of the true input (and clipped values)"
_OWN = " (default: the estimator's; its values and their checks are the estimator's, see docs/estimators.md)."


class EstimatorReleaseSpec(ReleaseOptions):
    """The options of one release, each declared once (:func:`urbandp._release_options.option`) and checked once
    (each error names the keyword, listed in ``parameters``): :func:`release` takes them as keywords.

    The estimator's own options (``grouping``, ``m_ub``, ``gamma``, ``rule``, ``n_candidates``, ``m_cap``) are
    checked by its constructor; one the chosen estimator does not take is refused.
    """

    unit_column: str = option(help="Column naming each privacy unit (e.g. a vehicle in a one-day file).")
    value_column: str = option(help="Column of the values whose mean is released.")
    epsilon: float = option(help="Epsilon of the release.", gt=0)
    upper: float = option(help="The public bound U: values are clipped to [0, U].", gt=0)
    estimator: str = option(
        "clipped-mean",
        help="clipped-mean (add/remove-one-unit) or the paper's baseline, array-averaging, levy, quantile "
        "(Def. II.1 only: labelled NOT DP, refused with a dataset).",
        choices=ESTIMATORS,
    )
    grouping: str | None = option(None, help=f"How samples are grouped into arrays{_OWN}", choices=GROUPINGS)
    m_ub: str | int | None = option(
        None, help=f"The bound m_UB on a unit's samples, a rule or an integer{_OWN}"
    )
    gamma: float | None = option(None, help=f"LEVY's gamma{_OWN}")
    rule: str | None = option(None, help=f"QUANTILE's quantile rule{_OWN}")
    n_candidates: int | None = option(None, help=f"QUANTILE's number of candidate quantiles{_OWN}")
    m_cap: int | None = option(None, help=f"CLIPPED-MEAN's largest candidate m_UB{_OWN}")
    unit: str = option("vehicle-day", help="The privacy unit, as the budget store names it.", choices=UNITS)
    day: dt.date | None = None
    """The day the store books (required with a dataset)."""

    @field_validator("unit_column", "value_column", mode="before")
    @classmethod
    def _a_column(cls, value: object, info: ValidationInfo) -> object:
        return check_name(value, info.field_name or "")

    @field_validator("day", mode="before")
    @classmethod
    def _a_day(cls, value: object) -> object:
        return check_date(value, "day", optional=True)

    def model_post_init(self, context: Any, /) -> None:
        takes = _TAKES[self.estimator]
        for name, _ in self.options:
            if name not in takes:
                raise _bad(
                    f"{name} does not apply to estimator {self.estimator} (it takes: {', '.join(takes) or 'none'})",
                    name,
                )
        self.build()  # the constructor's checks, renamed to the keyword

    @property
    def options(self) -> tuple[tuple[str, Any], ...]:
        """The estimator's own options given (not None), in declaration order."""
        own = set().union(*_TAKES.values())
        given = ((n, getattr(self, n)) for n in type(self).model_fields if n in own)
        return tuple((n, v) for n, v in given if v is not None)

    def build(self) -> _Estimator:
        """The configured building block (:mod:`urbandp.estimators._core`)."""
        try:
            return BY_NAME[self.estimator](upper=self.upper, **dict(self.options))
        except (TypeError, ValueError) as err:
            text = str(err)
            named = [n for n, _ in self.options if text.startswith(n)] or [n for n, _ in self.options]
            raise _bad(text, *named) from None

    @property
    def paper(self) -> bool:
        return self.estimator in PAPER_ESTIMATORS

    def not_dp_reasons(self) -> list[str]:
        """The fleet's rule (``HatReleaseConfig.differentially_private``): the paper's estimators under
        add/remove-one-unit read each unit's count, which that relation protects."""
        if not self.paper:
            return []
        return [
            f"estimator {self.estimator} assumes unit counts are public (paper Def. II.1, replace-one); not DP "
            "under add/remove-one-unit; use clipped-mean"
        ]

    def params(self) -> dict[str, Any]:
        return {"estimator": self.estimator, "upper": self.upper, **dict(self.options)}


def _bad(message: str, *names: str) -> InvalidParameterError:
    return InvalidParameterError(message, parameters=names)


@dataclass(repr=False)
class EstimatorRelease(Release):
    """One released mean: ``table`` one row (estimator, estimate, noise_scale, interval, epsilon); ``privacy``
    its :class:`EstimatorPrivacyReport`; ``owner`` the quarantine and the input report (true data, never
    published); ``estimate`` the building block's full result (its private counts included: owner material)."""

    inputs: tuple[Path, ...] = ()

    def write(self, out: str | Path, *, overwrite: bool = False) -> dict[str, Path]:
        """Write the release folder ``out`` (estimate.csv, privacy.json) and ``owner_only/<name>/`` beside it;
        an earlier urbandp output is replaced only with ``overwrite``; any other folder is refused."""
        with output_policy(self.inputs, overwrite=check_switch(overwrite, "overwrite")):
            return _write_folder(self, Path(str(check_path(out, "out"))))


@takes_options(EstimatorReleaseSpec)
def release(
    data: TableLike,
    *,
    day: str | dt.date | None = None,
    session: Session | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    **options: Unpack[EstimatorReleaseKeywords],
) -> EstimatorRelease:
    """Release one user-level mean of ``value_column`` with DP, each distinct ``unit_column`` value one privacy
    unit (``unit``, as the budget store names it: the column must identify that unit, e.g. a vehicle in a one-day
    file for ``vehicle-day``). The options are the fields of :class:`EstimatorReleaseSpec` (see
    docs/estimators.md).

    ``day``: the day the store books (required with a dataset). ``session``: the :class:`urbandp.Session`
    charged (None: the guards apply, no store is charged). ``out``: write the folder inside the charge.
    Raises :class:`~urbandp.errors.BudgetExceededError` before any noise when the store cannot afford it.
    """
    check_table(data)
    spec = EstimatorReleaseSpec(**options, day=day)
    rel = release_spec(data, spec, session=session, out=out, overwrite=overwrite)
    rel.emit_warnings()
    return rel


def release_spec(
    data: TableLike,
    spec: EstimatorReleaseSpec,
    *,
    session: Session | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
) -> EstimatorRelease:
    """:func:`release` for a checked :class:`EstimatorReleaseSpec` (warnings not emitted)."""
    s = check_session(session)
    target = None if out is None else Path(str(check_path(out, "out")))
    overwrite = check_switch(overwrite, "overwrite")
    day = _booked_day(s, spec)
    with input_paths(data) as paths, output_policy(_protected(paths, s), overwrite=overwrite):
        values, quarantine, report = unit_values(paths, spec.unit_column, spec.value_column)
        owner: dict[str, Any] = {"quarantine": quarantine, "input_report": report}
        est = spec.build()
        _check_prepared(est, values)
        charge = s.charge(spec.unit, out=target)
        with charge:
            charge.refuse_not_dp(spec.not_dp_reasons())  # before the store and any noise
            charge.reserve(Loss.pure(spec.epsilon), [day], f"estimators-{spec.estimator}", spec.params())
            charge.mark_drawn()  # selection steps (LEVY, QUANTILE, dp-median) invoke OpenDP's samplers directly
            result = est.estimate(values, spec.epsilon, charge.noise)
            rel = _result(result, spec, charge, owner, day)
            rel.inputs = tuple(_protected(paths, s))
            if target is not None:
                _write_folder(rel, target)
                charge.set_output(target)
        s.committed(charge)
    return rel


def _booked_day(session: Session, spec: EstimatorReleaseSpec) -> dt.date:
    if spec.day is not None:
        return spec.day
    if session.dataset is not None:
        raise _bad("dataset needs day YYYY-MM-DD (the day the store books the release on)", "dataset", "day")
    return dt.date.today()  # booked nowhere without a dataset


def _protected(paths: list[Path], session: Session) -> list[Path]:
    """The run's inputs, never overwritten by its output: the data and a SQLite budget store."""
    found = [*paths]
    if session.store is not None and "://" not in session.store:
        found.append(Path(session.store))
    return found


def unit_values(
    paths: Sequence[Path],
    unit_column: str,
    value_column: str,
    *,
    parameters: tuple[str, str] = ("unit_column", "value_column"),
    source: str = "data",
) -> tuple[list[np.ndarray], pl.DataFrame, dict[str, Any]]:
    """Every unit's values (units sorted, values as read: the estimators clip them), the quarantine (the rows
    without a unit or a finite value, as read, with their reason) and the input report (row counts of the true
    input: owner material). Errors name the columns' ``parameters`` and the input as ``source``."""
    frames = [read_table(p, allow_empty=True) for p in paths]
    for frame in frames:
        named = dict(zip(parameters, (unit_column, value_column), strict=True))
        missing = {p: c for p, c in named.items() if c not in frame.columns}
        if missing:
            raise InputDataError(
                f"{source}: no column {', '.join(missing.values())} ({', '.join(missing)}; columns: "
                f"{', '.join(frame.columns)})",
                parameters=tuple(missing),
            )
    rows = pl.concat(
        [f.select(pl.col(unit_column).cast(pl.String), pl.col(value_column)) for f in frames]
    ).with_columns(pl.col(value_column).cast(pl.Float64, strict=False).alias("_value"))
    reason = (
        pl.when(pl.col(unit_column).is_null())
        .then(pl.lit("missing unit"))
        .when(pl.col("_value").is_null())
        .then(pl.lit("missing or non-numeric value"))
        .when(~pl.col("_value").is_finite())
        .then(pl.lit("non-finite value"))
    )
    rows = rows.with_columns(reason.alias("reason"))
    quarantine = rows.filter(pl.col("reason").is_not_null()).drop("_value")
    kept = rows.filter(pl.col("reason").is_null())
    if kept.height == 0:
        raise InputDataError(f"{source}: no row has a unit and a finite {value_column} ({rows.height} rows)")
    grouped = kept.group_by(unit_column).agg(pl.col("_value")).sort(unit_column)
    values = [np.asarray(v, dtype=float) for v in grouped["_value"].to_list()]
    report = {
        "note": "raw-data statistics for the data owner; not differentially private, do not publish",
        "input_rows": rows.height,
        "quarantined_rows": quarantine.height,
        "quarantine_reasons": dict(quarantine["reason"].value_counts().iter_rows()),
        "n_units": len(values),
        "n_samples": kept.height,
    }
    return values, quarantine, report


def _check_prepared(est: _Estimator, values: list[np.ndarray]) -> None:
    """The estimator's noise-free preparation, run before the reservation: a dataset it cannot use (no full
    array of length m_UB) is refused before anything is charged (it reads only the counts)."""
    try:
        est.prepare(values)
    except ValueError as err:
        raise InputDataError(f"data: {err}") from None


def _document(
    result: MeanEstimate, spec: EstimatorReleaseSpec, charge: ReleaseCharge, day: dt.date
) -> dict[str, Any]:
    """privacy.json: public parameters and DP figures; the counts only where the guarantee holds them public."""
    reasons = list(charge.not_dp_reasons)
    label = f"epsilon-DP under {result.neighbouring}" if spec.paper else ADD_REMOVE_LABEL
    doc: dict[str, Any] = {
        "differentially_private": not reasons,
        "dp_label": label if not reasons else "NOT differentially private",
        "not_dp_reasons": reasons,
        "privacy_unit": spec.unit,
        "neighbouring": result.neighbouring,
        "estimator": result.estimator,
        "estimator_option": spec.estimator,
        "dp_under": label,
        "counts_public": result.counts_public,
        "epsilon": spec.epsilon,
        "delta": 0.0,
        "epsilon_spent": result.epsilon_spent,
        "upper": spec.upper,
        "noise_scale": result.noise_scale,
        "sensitivity": result.sensitivity,
        "interval": [float(result.interval[0]), float(result.interval[1])],
        "m_ub": result.m_ub,
        "steps": [asdict(s) for s in result.steps],
        "options": dict(spec.options),
        "day": day.isoformat(),
        "noise_source": "OpenDP" if result.is_private else "NONE (test source: not private)",
    }
    if result.counts_public:  # Def. II.1: the units and their counts are public (paper section II-C)
        doc |= {"n_units": result.n_units, "n_samples": result.n_samples, "n_arrays": result.n_arrays}
        doc["grouping"] = result.grouping
    return doc


def _result(
    result: MeanEstimate,
    spec: EstimatorReleaseSpec,
    charge: ReleaseCharge,
    owner: dict[str, Any],
    day: dt.date,
) -> EstimatorRelease:
    table = pl.DataFrame(
        {
            "estimator": [result.estimator],
            "estimate": [result.estimate],
            "noise_scale": [result.noise_scale],
            "interval_low": [float(result.interval[0])],
            "interval_high": [float(result.interval[1])],
            "epsilon": [spec.epsilon],
        }
    )
    owner["input_report"]["n_clipped"] = result.n_clipped
    owner["estimate"] = result
    q_rows = owner["input_report"]["quarantined_rows"]
    owner_warnings = (
        [f"{q_rows} input rows quarantined (see owner_only/<out>/quarantine.csv)"] if q_rows else []
    )
    if result.n_clipped:
        owner_warnings.append(f"{result.n_clipped} values clipped to [0, {spec.upper:g}]")
    return EstimatorRelease(
        tables={"estimate": table},
        privacy=EstimatorPrivacyReport.from_document(_document(result, spec, charge, day)),
        owner=owner,
        owner_warnings=owner_warnings,
    )


def _write_folder(rel: EstimatorRelease, out: Path) -> dict[str, Path]:
    """The release folder (estimate.csv, privacy.json) and ``owner_only/<name>/`` (quarantine, input report),
    swapped in whole (:func:`urbandp._outputs.atomic_output_dir`)."""
    outputs = {
        owner_file_seen_from_release(out.name, "quarantine.csv"): QUARANTINE_NOTE,
        owner_file_seen_from_release(out.name, "input_report.json"): INPUT_REPORT_NOTE,
    }
    rel.privacy = EstimatorPrivacyReport.from_document({**rel.privacy.to_dict(), "not_dp_outputs": outputs})
    with atomic_output_dir(out) as d:
        rel.owner["quarantine"].write_csv(d.owner_path("quarantine.csv"))
        write_json(d.owner_path("input_report.json"), rel.owner["input_report"])
        rel.table.write_csv(d.release / "estimate.csv")
        write_privacy_json(d.release, rel.privacy.to_dict())
    return {"estimate": out / "estimate.csv", "privacy": out / "privacy.json"}
