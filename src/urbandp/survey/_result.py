"""What a survey release returns (:class:`SurveyRelease`) and the one path every survey release runs through
(:func:`run_release`: input -> charge in the declared unit -> release -> folder -> commit)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import polars as pl

from urbandp._arguments import check_date
from urbandp._frames import TableLike, input_paths
from urbandp._session import Session
from urbandp.errors import InputDataError
from urbandp.results import Release
from urbandp.survey._charge import SurveyCharge
from urbandp.survey._report import SurveyPrivacyReport, spec_sha256


@dataclass(repr=False)
class SurveyRelease(Release):
    """A survey release: ``table`` (the published rows), ``privacy`` (typed, e.g.
    :class:`~urbandp.survey._report.RandomizePrivacyReport`), ``owner`` (owner-only files by name: quarantine rows,
    ``input_report.json``), ``summary`` (the line the command prints) and ``write(out)``."""

    summary: str = ""
    file_name: str = "table.csv"
    """The published table's file name in the release folder."""
    owner: dict[str, Any] = field(default_factory=dict)

    @property
    def report(self) -> SurveyPrivacyReport:
        assert isinstance(self.privacy, SurveyPrivacyReport)
        return self.privacy

    def write(self, out: str | Path, *, overwrite: bool = False) -> dict[str, Path]:
        """Write the release folder ``out`` (and ``owner_only/<name>/``), as the command line does; an existing
        folder is refused unless urbandp wrote it and ``overwrite`` is given."""
        from urbandp._outputs import output_policy

        with output_policy(overwrite=overwrite):
            return self.write_folder(Path(out))

    def write_folder(self, out: Path) -> dict[str, Path]:
        """Write ``out`` atomically under the running output policy."""
        from urbandp._outputs import atomic_output_dir, owner_dir_for, write_json
        from urbandp._privacy.report import write_privacy_json

        written: dict[str, Path] = {}
        with atomic_output_dir(out) as d:
            self.table.write_csv(d.release / self.file_name)
            for name, content in self.owner.items():
                path = d.owner_path(name)
                if isinstance(content, pl.DataFrame):
                    content.write_csv(path)
                elif isinstance(content, dict):
                    write_json(path, content)
                else:
                    content(path)
                written[name] = owner_dir_for(out) / name
            named = [f"owner_only/{out.name}/{n}" for n in self.owner]  # the owner files, named after ``out``
            privacy = self.report.model_copy(update={"not_dp_outputs": named})
            write_privacy_json(d.release, privacy.to_dict())
        return {self.file_name: out / self.file_name, "privacy.json": out / "privacy.json", **written}


class _Spec(Protocol):
    """What :func:`run_release` reads of a release's spec: the run's cap."""

    @property
    def budget_epsilon(self) -> float | None: ...


S = TypeVar("S", bound=_Spec)


def run_release(
    data: TableLike,
    unit: str,
    spec: S,
    body: Callable[[S, Path, str, SurveyCharge], SurveyRelease],
    survey_date: str | dt.date | None,
    session: Session | None,
    out: str | Path | None,
    overwrite: bool,
) -> SurveyRelease:
    """Run ``body`` (the release's own: spec, input file, its name in messages, the charge) inside the charge of
    ``session`` in ``unit``, booked on ``survey_date`` (a day) and capped at the spec's ``budget_epsilon``; with
    ``out`` write the folder before the commit (its sha256 is recorded), then emit the warnings and return the
    release. ``spec`` (the release's options) is hashed into privacy.json's ``spec_sha256``
    (:func:`urbandp.survey._report.spec_sha256`)."""
    from urbandp._outputs import output_policy

    day = check_date(survey_date, "survey_date", optional=True)
    target = None if out is None else Path(out)
    with input_paths(data) as paths:
        if len(paths) != 1:
            raise InputDataError(f"data: a survey release reads one file, got {len(paths)} paths")
        label = str(paths[0]) if isinstance(data, (str, Path)) else "data"
        with output_policy(paths, overwrite=overwrite):
            charge = SurveyCharge(
                session, unit, out=target, budget_epsilon=spec.budget_epsilon, survey_date=day
            )
            with charge.charge:
                rel = body(spec, paths[0], label, charge)
                stated = {"not_dp_outputs": list(rel.owner), "spec_sha256": spec_sha256(spec)}
                rel.privacy = charge.verdict(rel.report).model_copy(update=stated)
                if target is not None:
                    rel.write_folder(target)
                    charge.charge.set_output(target)  # its sha256 is recorded when the charge commits
            charge.session.committed(charge.charge)
    rel.emit_warnings()
    return rel
