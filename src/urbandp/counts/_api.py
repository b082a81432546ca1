"""The Python API of the count tables: ``urbandp.counts.release``, the library's one release path (examples in
docs/counts.md, section "Python API", and in :mod:`urbandp.counts`).

``urbandp counts release`` calls :func:`release`: the guards (delta limit, meaningless loss, NOT DP with a
dataset), the cap and the budget store are passed here, in the release's charge
(:meth:`urbandp.Session.charge`), before any noise, whichever the entry point.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import polars as pl

import urbandp.counts._table_release as table_release
import urbandp.counts._threshold_advice as threshold_advice
from urbandp._config_tables import takes_config
from urbandp._frames import TableLike, input_paths
from urbandp._outputs import (
    atomic_output_dir,
    output_policy,
    owner_dir_for,
    owner_file_seen_from_release,
    write_json,
)
from urbandp._privacy.guards import meaningless_reasons
from urbandp._privacy.ledger import PrivacyLedger
from urbandp._privacy.loss import Loss
from urbandp._privacy.report import write_privacy_json
from urbandp._privacy.session import ReleaseCharge, days_between
from urbandp._release_options import takes_options
from urbandp._session import Session
from urbandp._table_reader import read_table
from urbandp.counts._accounting import release_loss
from urbandp.counts._aggregate import JointCounts, joint_from_counts, joint_from_events
from urbandp.counts._columns import apply_columns, column_map
from urbandp.counts._domain import CountDomain
from urbandp.counts._options import CountsReleaseSpec
from urbandp.counts._report import CountsPrivacyReport
from urbandp.counts._selection import check_selection_input, release_selected
from urbandp.counts._tails import IntegerNoise
from urbandp.counts._write import release_tables, write_tables
from urbandp.errors import InputDataError, InvalidParameterError
from urbandp.results import Release

if TYPE_CHECKING:
    from urbandp._option_types import CountsReleaseKeywords

ProgressHook = Callable[[int], AbstractContextManager[Callable[[int], None]]]
"""Called with the number of cells about to be noised; the context it opens gets each batch's size."""

QUARANTINE_NOTE = "raw rejected input rows with their reason"
INPUT_REPORT_NOTE = "row counts of the raw input"


@dataclass(repr=False)
class CountsRelease(Release):
    """A count release: ``tables`` joint, time, location (and top_k), or joint alone (partition selection);
    ``privacy`` its :class:`CountsPrivacyReport`; ``owner`` the quarantine and the input report (true data, for
    the data owner only); ``domain`` the public domain (None with partition selection)."""

    domain: CountDomain | None = None
    format: str = "csv"
    inputs: tuple[Path, ...] = ()

    def write(self, out: str | Path, *, overwrite: bool = False) -> dict[str, Path]:
        """Write the release folder ``out`` and ``owner_only/<name>/`` beside it, as ``urbandp counts release``
        does; an earlier urbandp output there is replaced only with ``overwrite``; any other folder is refused.
        ``privacy`` then lists the owner-only files of that folder (``not_dp_outputs``)."""
        with output_policy(self.inputs, overwrite=overwrite):
            return _write_folder(self, Path(out))


@takes_config("counts.release")
@takes_options(CountsReleaseSpec)
def release(
    data: TableLike,
    *,
    session: Session | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    progress: ProgressHook | None = None,
    config: str | Path | None = None,
    **options: Unpack[CountsReleaseKeywords],
) -> CountsRelease:
    """Release a joint tap-count table and its marginals with DP (``urbandp counts release``; every option is
    the flag of that name, see its ``--help`` and docs/counts.md).

    ``data``: the events (``input_kind="events"``: mode, timestamp, tap, location[, card_id]) or the counts
    (``input_kind="counts"``), as a path or a table (pandas, Polars eager or lazy, Arrow); ``column``: which of its
    columns plays which role when they are named otherwise (``["day=date", "location=loc"]`` or
    ``{"day": "date", "location": "loc"}``). ``domain``: the public
    domain (a JSON file, a :class:`CountDomain` or its JSON object); None with ``select_partitions``.
    ``session``: the :class:`urbandp.Session` charged (None: the guards apply, no store is charged). ``out``:
    write the folder inside the charge (its sha256 is recorded at commit); else :meth:`CountsRelease.write`.
    Raises :class:`~urbandp.errors.BudgetExceededError` before any noise when the store or ``budget_epsilon``
    cannot afford it. The release's warnings are emitted as :class:`~urbandp.results.ReleaseWarning`, the ones
    read from the true data as :class:`~urbandp.results.OwnerWarning`. ``config``: a TOML file whose
    ``[counts.release]`` table sets options by keyword (the file ``urbandp counts release --config`` reads);
    keywords passed win (:mod:`urbandp._config_tables`).
    """
    spec = CountsReleaseSpec(**options)
    rel = release_spec(data, spec, session=session, out=out, overwrite=overwrite, progress=progress)
    rel.emit_warnings()
    return rel


def release_spec(
    data: TableLike,
    spec: CountsReleaseSpec,
    *,
    session: Session | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    progress: ProgressHook | None = None,
) -> CountsRelease:
    """:func:`release` for a checked :class:`CountsReleaseSpec` (warnings not emitted)."""
    from urbandp._contributions.spark_session import check_engine

    s = session if session is not None else Session()
    target = None if out is None else Path(out)
    spark = check_engine(spec.engine, spec.spark_master) == "spark"
    if spark and (spec.domain is None or spec.input_kind != "events"):
        raise InvalidParameterError(
            "engine spark runs the per-event stage: it needs input_kind events and domain",
            parameters=("engine", "input_kind", "domain"),
        )
    if spark and spec.column:
        raise InvalidParameterError(
            "engine spark reads the events' own column names: rename them before, or use engine polars",
            parameters=("engine", "column"),
        )
    with input_paths(data) as paths, output_policy(_protected(paths, spec, s), overwrite=overwrite) as policy:
        if len(paths) != 1:
            raise InputDataError(f"data: give one file (CSV or Parquet), got {len(paths)}")
        frame = (
            None if spark else apply_columns(read_table(paths[0]), column_map(spec.column, spec.input_kind))
        )
        if spec.domain is None:
            assert frame is not None
            rel = _release_selected(frame, spec, s, target)
        else:
            rel = _release_on_domain(frame, paths[0], spec, s, target, progress)
        rel.inputs = policy.inputs
    return rel


def dry_run(spec: CountsReleaseSpec, *, allow_meaningless_epsilon: bool = False) -> dict[str, object]:
    """What the release of ``spec`` would cost, without reading data (``urbandp counts release --dry-run``).

    With a public domain it also states, from public parameters only, the threshold that keeps the expected
    noise-only cells at most one (``suppression_advice``, :mod:`urbandp.counts._threshold_advice`) and, with
    ``suppress_below``, what that threshold lets through (``suppression``, as the release's privacy.json)."""
    if spec.method == "data61-2016":
        raise InvalidParameterError(  # "method" here is the word, not the parameter
            "dry_run: the data61-2016 method is not DP and has no privacy cost to show", parameters="dry_run"
        )
    plan = spec.plan()
    assert plan is not None
    m_plan = spec.marginal_plan()
    top_k_epsilon = spec.top_k_epsilon if spec.top_k else None
    loss = release_loss(plan, m_plan, top_k_epsilon)
    not_dp = meaningless_reasons(
        loss, spec.conversion_delta(), per=spec.privacy_unit().name, allow=allow_meaningless_epsilon
    )
    total_eps, total_delta, _ = loss.approx(spec.conversion_delta())
    stated: dict[str, object] = {"per_card_window": None, "suppression": None, "suppression_advice": None}
    if spec.domain is not None:  # public: its days set the per-card figure, its size the threshold
        dom = spec.load_domain()
        totals = (total_eps or 0.0, total_delta or 0.0)
        stated |= table_release.public_statements(spec, plan, m_plan, top_k_epsilon, dom, totals)
        law = IntegerNoise(plan.mechanism, plan.noise_scale)
        stated["suppression_advice"] = threshold_advice.advice(law, dom.n_cells)
    return {
        "dry_run": True,
        **spec.privacy_unit().to_json(),
        **plan.to_json(),
        "sampling": spec.resolved_sampling,
        "marginals": spec.resolved_marginals,
        "marginal_noise": None if m_plan is None else m_plan.to_json(),
        "top_k_epsilon": top_k_epsilon,
        "total_epsilon": total_eps,
        "total_delta": total_delta,
        "composition": "rho summed over the Gaussian tables, converted once at delta"
        if plan.rho is not None
        else "pure epsilon summed over the tables",
        "differentially_private": not not_dp,
        "not_dp_reasons": not_dp,
        **stated,
    }


def _protected(paths: list[Path], spec: CountsReleaseSpec, session: Session) -> list[Path]:
    """The run's inputs, never overwritten by its output: the data, the domain file, a SQLite budget store."""
    found = [*paths]
    if spec.domain_path() is not None:
        found.append(spec.domain_path())  # type: ignore[arg-type]
    if session.store is not None and "://" not in session.store:
        found.append(Path(session.store))
    return found


@contextlib.contextmanager
def _charged(session: Session, spec: CountsReleaseSpec, out: Path | None) -> Iterator[ReleaseCharge]:
    """The release's open charge (the store's dataset, the run's cap ``budget_epsilon``, the output checked),
    committed to ``session`` once the release inside it is written."""
    charge = session.charge(spec.unit, out=out)
    charge.cap = spec.cap()
    with charge:
        yield charge
    session.committed(charge)


def _release_selected(
    frame: pl.DataFrame, spec: CountsReleaseSpec, session: Session, out: Path | None
) -> CountsRelease:
    """No public domain: the observed cells above a DP threshold (:mod:`urbandp.counts._selection`)."""
    if not spec.select_partitions:
        raise InvalidParameterError(  # "domain" is the word here (a whole word would be renamed: not a parameter)
            "no public domain: give a domain (a JSON file), or select_partitions with delta",
            parameters=("select_partitions", "delta"),
        )
    with _charged(session, spec, out) as charge:
        check_selection_input(spec.input_kind)
        ledger = PrivacyLedger(conversion_delta=spec.conversion_delta())
        sel = release_selected(
            frame, spec.privacy_unit(), spec.epsilon, spec.noise_scale, spec.delta, ledger, charge
        )
        rel = CountsRelease(
            tables={"joint": sel.table},
            privacy=_report(sel.privacy, spec, None),
            owner={"quarantine": sel.quarantine, "input_report": sel.input_report},
            owner_warnings=_owner_warnings(sel.input_report),
        )
        _write_charged(rel, out, charge)
    return rel


def _joint(
    frame: pl.DataFrame | None,
    path: Path,
    spec: CountsReleaseSpec,
    dom: CountDomain,
) -> JointCounts:
    """The raw joint counts over the public domain, bounded per privacy unit (the per-event stage)."""
    if frame is None:  # --engine spark: the per-event stage on Spark, the quarantine written there as Parquet
        from urbandp._contributions.spark_counts import joint_from_events_spark

        return joint_from_events_spark(path, dom, spec.privacy_unit(), spec.spark_master)
    if spec.input_kind == "events":
        return joint_from_events(frame, dom, spec.privacy_unit())
    return joint_from_counts(frame, dom)


def _check_against_domain(joint: JointCounts, spec: CountsReleaseSpec, dom: CountDomain) -> None:
    """Refuse a release where no row lies in the domain, or a top-k the domain cannot hold."""
    q_rows, q_reasons = _quarantine_counts(joint)
    if joint.total == 0 and q_rows == joint.n_input_rows:
        top = "; ".join(f"{r} ({n})" for r, n in sorted(q_reasons.items(), key=lambda x: -x[1])[:3])
        raise InputDataError(
            f"no input row lies in the public domain: all {joint.n_input_rows} quarantined: {top}"
        )
    if spec.top_k_tap is not None and spec.top_k_tap not in dom.taps:
        raise InvalidParameterError(
            f"top_k_tap {spec.top_k_tap!r} is not a tap of the domain ({', '.join(dom.taps)})",
            parameters="top_k_tap",
        )
    if spec.top_k is not None and not 1 <= spec.top_k <= len(dom.places):
        raise InvalidParameterError(
            f"top_k must be between 1 and the number of places ({len(dom.places)}), got {spec.top_k}",
            parameters="top_k",
        )


def _reserve(charge: ReleaseCharge, spec: CountsReleaseSpec, dom: CountDomain) -> list[str]:
    """Reserve the whole loss of the release (checked against ``budget_epsilon`` per day) before any noise;
    returns the NOT DP reasons (a meaningless loss allowed with ``allow_meaningless_epsilon``)."""
    days = days_between(min(dom.days), max(dom.days))
    plan = spec.plan()
    if plan is None:  # data61-2016: not DP, charged nothing (refused with a dataset before this)
        charge.reserve(Loss(), days, "counts-data61-not-dp")
        return []
    loss = release_loss(plan, spec.marginal_plan(), spec.top_k_epsilon if spec.top_k is not None else None)
    charge.conversion_delta = spec.conversion_delta()
    not_dp = meaningless_reasons(
        loss, charge.conversion_delta, per=spec.privacy_unit().name, allow=charge.allow_meaningless_epsilon
    )
    charge.refuse_not_dp(not_dp)
    params = {"method": spec.method, "unit": spec.privacy_unit().name}
    charge.reserve(loss, days, f"counts-{spec.mechanism}", params, cap_on="day")
    return not_dp


def _release_on_domain(
    frame: pl.DataFrame | None,
    path: Path,
    spec: CountsReleaseSpec,
    session: Session,
    out: Path | None,
    progress: ProgressHook | None,
) -> CountsRelease:
    """The release over a public domain: every cell, zeros included, is noised in law (docs/design.md rule 4)."""
    dom = spec.load_domain()
    dom.check_fits(dense=spec.resolved_sampling == "dense")
    joint = _joint(frame, path, spec, dom)
    _check_against_domain(joint, spec, dom)
    if session.dataset is not None and spec.plan() is None:
        raise InvalidParameterError(  # the Session's dataset; "method" here is the word, not the parameter
            "dataset: this method is not DP and cannot be charged to a budget", parameters="dataset"
        )
    with _charged(session, spec, out) as charge:
        not_dp = _reserve(charge, spec, dom)
        n_noised = dom.n_cells if spec.resolved_sampling == "dense" else int(joint.sparse.index.size)
        watch = progress or (lambda total: contextlib.nullcontext(lambda n: None))
        with watch(n_noised) as advance:
            # through the package (its public name), looked up at call time: the one seam of the samplers
            counts = table_release._release_counts(
                joint.sparse, dom, spec, noise=charge.noise, progress=advance
            )
        if not_dp:
            counts.privacy["differentially_private"] = False
            counts.privacy["not_dp_reasons"] = [*counts.privacy["not_dp_reasons"], *not_dp]  # type: ignore[misc]
        owner = _owner_material(joint, spec, counts.cells)
        suppression = counts.privacy.get("suppression")
        rel = CountsRelease(
            tables=release_tables(counts, dom),
            privacy=_report(counts.privacy, spec, dom),
            owner=owner,
            warnings=[suppression["warning"]]
            if isinstance(suppression, dict) and "warning" in suppression
            else [],
            owner_warnings=_owner_warnings(owner["input_report"]),
            domain=dom,
            format=spec.format,
        )
        _write_charged(rel, out, charge)
    return rel


def _report(
    document: dict[str, object], spec: CountsReleaseSpec, dom: CountDomain | None
) -> CountsPrivacyReport:
    """The typed report of a release, with the hash of its spec (:meth:`CountsReleaseSpec.sha256`)."""
    return CountsPrivacyReport.from_document({**document, "spec_sha256": spec.sha256(dom)})


def _quarantine_counts(joint: object) -> tuple[int, dict[str, int]]:
    """(rows, rows per reason) of a joint's quarantine, whether held here (Polars) or written by Spark."""
    reasons = getattr(joint, "reasons", None)
    if reasons is not None:
        return sum(reasons.values()), dict(reasons)
    quarantine = joint.quarantine  # type: ignore[attr-defined]
    return quarantine.height, dict(quarantine["reason"].value_counts().iter_rows())


def _owner_material(joint: JointCounts, spec: CountsReleaseSpec, cells: Any) -> dict[str, Any]:
    """The quarantine and the input report: read from the true data, for the data owner only (never published)."""
    q_rows, q_reasons = _quarantine_counts(joint)
    q_parquet = getattr(joint, "quarantine_parquet", None)
    report = {
        "note": "raw-data statistics for the data owner; not differentially private, do not publish",
        "input_rows": joint.n_input_rows,
        "quarantined_rows": q_rows,
        "quarantine_reasons": q_reasons,
        "truncated_events": joint.n_truncated,
        "non_zero_cells": int(joint.sparse.index.size),
        "published_cells_with_raw_zero": None if cells is None else cells.n_zero_published,
        "input_kind": spec.input_kind,
        "bounding": "truncation in urbandp"
        if spec.input_kind == "events"
        else "declared upstream (not verified)",
    }
    return {"quarantine": joint.quarantine if q_parquet is None else Path(q_parquet), "input_report": report}


def _owner_warnings(report: dict[str, object]) -> list[str]:
    """Warnings about the true input (quarantined rows): for the data owner, never published."""
    rows = report.get("quarantined_rows")
    if isinstance(rows, int) and rows > 0:
        return [
            f"{rows} of {report['input_rows']} input rows quarantined (see owner_only/<out>/quarantine.*)"
        ]
    return []


def _write_charged(rel: CountsRelease, out: Path | None, charge: ReleaseCharge) -> None:
    """Write the release folder when ``out`` is given (:func:`_write_folder`) and record it on the open charge."""
    if out is not None:
        _write_folder(rel, out)
        charge.set_output(out)


def _write_folder(rel: CountsRelease, out: Path) -> dict[str, Path]:
    """The release folder (tables, privacy.json, domain.json) and ``owner_only/<name>/`` (quarantine, input
    report), swapped in whole (:func:`urbandp._outputs.atomic_output_dir`)."""
    quarantine = rel.owner["quarantine"]
    q_name = "quarantine.parquet" if isinstance(quarantine, Path) else "quarantine.csv"
    outputs = {
        owner_file_seen_from_release(out.name, q_name): QUARANTINE_NOTE,
        owner_file_seen_from_release(out.name, "input_report.json"): INPUT_REPORT_NOTE,
    }
    rel.privacy = CountsPrivacyReport.from_document({**rel.privacy.to_dict(), "not_dp_outputs": outputs})
    with atomic_output_dir(out) as d:
        if isinstance(quarantine, Path):  # written by Spark: a directory of part files
            _place(quarantine, Path(d.owner_path(q_name)), move=rel.owner.get("quarantine_moved") is None)
        else:
            quarantine.write_csv(d.owner_path(q_name))
        write_json(d.owner_path("input_report.json"), rel.owner["input_report"])
        tables = write_tables(rel.tables, d.release, rel.format)
        written = {name: out / path.name for name, path in tables.items()}
        write_privacy_json(d.release, rel.privacy.to_dict())
        written["privacy"] = out / "privacy.json"
        if rel.domain is not None:
            write_json(d.release / "domain.json", rel.domain.to_json())
    if isinstance(quarantine, Path):  # later writes copy it from this folder
        rel.owner["quarantine"] = owner_dir_for(out) / q_name
        rel.owner["quarantine_moved"] = True
    return written


def _place(source: Path, target: Path, *, move: bool) -> None:
    """Move Spark's quarantine (its first write) or copy it (a later write of the same release)."""
    if move:
        shutil.move(str(source), target)
    elif source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copy2(source, target)
