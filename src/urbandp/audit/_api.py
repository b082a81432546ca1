"""The Python API of the auditor: the attacks of ``urbandp audit`` as functions with typed results
(docs/counts.md, "The auditor from Python").

Culnane, Rubinstein, Teague (2017), *Privacy Assessment of De-identified Opal Data*: the noise scale read off pairs
of published counts (section 2, Appendix D), skipped zeros and Theorem 1 (section 3, Appendix C), and suppressed
cells recovered by differencing a marginal (section 4, Appendix E). An audit reads **published** tables only: it
spends no privacy budget and takes no :class:`urbandp.Session` (the adversary has the release, not the raw data).
A table object is read like a Parquet file (:func:`urbandp._frames.to_polars`). The commands in
:mod:`urbandp.audit._cli` call these functions.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Self, TypeVar, Unpack, cast

import numpy as np
import polars as pl

import urbandp._arguments as arguments
from urbandp._frames import TableLike, to_polars
from urbandp._outputs import OutputPolicy, check_output_file, check_report_dir, current_policy, output_policy
from urbandp._release_options import takes_options
from urbandp._table_reader import read_table
from urbandp.audit._differencing_attack import differencing_attack, plot_cells
from urbandp.audit._noise_scale_attack import (
    noise_scale_attack,
    pair_differences,
    plot_differences,
)
from urbandp.audit._options import DifferencingOptions, NoiseScaleOptions, PairsOptions, ZeroSkippingOptions
from urbandp.audit._report import staged_files, write_report
from urbandp.audit._route_pairs import route_pairs
from urbandp.audit._tables import (
    PublishedTable,
    published_table_from_frame,
    read_privacy,
    read_published_table,
)
from urbandp.audit._zero_skipping_attack import plot_detection, zero_skipping_attack
from urbandp.errors import InputDataError, InvalidParameterError

if TYPE_CHECKING:
    from urbandp._option_types import (
        DifferencingKeywords,
        NoiseScaleKeywords,
        PairsKeywords,
        ZeroSkippingKeywords,
    )

PrivacyLike = str | os.PathLike[str] | Mapping[str, object] | None
"""A release's ``privacy.json``: a path, the parsed object, or ``None`` (next to a path table, if there is one)."""


# --- inputs ---------------------------------------------------------------------------------------------------


def _is_path(data: object) -> bool:
    return isinstance(data, (str, os.PathLike))


def _outputs(inputs: tuple[object, ...], overwrite: bool) -> AbstractContextManager[OutputPolicy]:
    """The output checks protect the ``inputs`` given as paths; under a CLI command its policy (``--overwrite``,
    its inputs) holds too."""
    outer = current_policy()
    paths = [Path(cast("str", p)) for p in inputs if _is_path(p)]
    return output_policy([*outer.inputs, *paths], overwrite=overwrite or outer.overwrite)


def _table(data: TableLike, parameter: str) -> PublishedTable:
    arguments.check_table(data, parameter)
    if _is_path(data):
        return read_published_table(Path(data))
    return published_table_from_frame(to_polars(data, parameter))


def _privacy(privacy: PrivacyLike, table: TableLike) -> dict[str, object] | None:
    """``privacy`` as a mapping: given, read from the path given, or the ``privacy.json`` next to a path table."""
    if isinstance(privacy, Mapping):
        return dict(privacy)
    arguments.check_path(privacy, "privacy", optional=True)
    if privacy is not None:
        return read_privacy(Path(privacy), required=True)
    if not _is_path(table):
        return None
    return read_privacy(Path(cast("str", table)).parent / "privacy.json", required=False)


def _scale_from(scale: float | None, privacy: Mapping[str, object] | None) -> float | None:
    """``scale`` if given, else ``privacy.json``'s ``noise_scale`` (validated), else ``None``."""
    if scale is not None:
        return scale
    value = privacy.get("noise_scale") if privacy else None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    if not (value > 0 and math.isfinite(value)):  # the file's, not a parameter's
        raise InputDataError(f"privacy.json noise_scale must be a positive finite number, got {float(value)}")
    return float(value)


# --- results --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditResult:
    """What an attack found. ``to_dict()`` is the JSON object ``urbandp audit <attack>`` prints."""

    details: dict[str, object] = field(repr=False)

    def to_dict(self) -> dict[str, object]:
        """The command's JSON object (a copy; non-finite numbers are written as ``null`` by the CLI)."""
        return copy.deepcopy(self.details)

    @classmethod
    def _of(cls, details: dict[str, object], **given: object) -> Self:
        """The result of ``details`` (the command's JSON object, its values already of the fields' types): each
        field ``given``, else its key's value (a field ``details`` lacks keeps its default)."""
        read = {
            f.name: details[f.name]
            for f in fields(cls)
            if f.name not in ("details", *given) and f.name in details
        }
        return cls(details, **read, **given)

    @property
    def finding(self) -> str | None:
        """The one-sentence finding, where the attack states one."""
        return self._text("finding")

    @property
    def warning(self) -> str | None:
        return self._text("warning")

    def _text(self, key: str) -> str | None:
        value = self.details.get(key)
        return value if isinstance(value, str) else None

    REPORT: ClassVar[tuple[str, str, str]] = ("", "", "")
    """The attack's report: its file name, its title and its method in words."""

    def write_report(self, directory: str | os.PathLike[str]) -> None:
        """``<name>.md`` (the title, the method in words, the result) and ``<name>.png`` in ``directory``, what
        ``--report`` writes (``noise-scale``, ``zero-skipping`` with ``quarantine.csv``, ``differencing``),
        staged and moved in whole."""
        name, title, method = self.REPORT
        result = self.to_dict()
        with staged_files(Path(directory)) as stage:
            self._write_extra(stage)
            write_report(stage, name, title, result, method, {f"{name}.png": lambda p: self._plot(result, p)})

    def _plot(self, result: dict[str, object], path: Path) -> None:
        raise NotImplementedError(f"{type(self).__name__} draws no report")

    def _write_extra(self, stage: Path) -> None:
        """The report's files besides its Markdown and its plot (none)."""


@dataclass(frozen=True)
class NoiseScaleResult(AuditResult):
    """Attack 1 (section 2, Appendix D): the maximum-likelihood noise scale of the pairs' differences ``a - b``."""

    scale: float = 0.0
    low: float = 0.0
    high: float = 0.0
    n_pairs: int = 0
    model: str = "continuous"
    raw_equality_plausible: bool | None = None
    implied_epsilon_per_event: float | None = None
    rows_dropped_non_numeric: int = 0
    differences: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    REPORT: ClassVar[tuple[str, str, str]] = (
        "noise-scale",
        "Noise scale read off the published table",
        "Maximum-likelihood Laplace scale from differences of published counts that are equal in the raw "
        "data (Culnane, Rubinstein, Teague 2017, section 2 and Appendix D).",
    )

    def _plot(self, result: dict[str, object], path: Path) -> None:
        plot_differences(self.differences, result, path)


@dataclass(frozen=True)
class ZeroSkippingResult(AuditResult):
    """Attack 2 (section 3, Theorem 1): could zeros have been skipped, and what does that expose."""

    threshold: float = 0.0
    declared_method: str = "unknown"
    zeros_may_be_skipped: bool = False
    vulnerable: bool | None = None
    verdict: str = ""
    scale: float | None = None
    delta_lower_bound_theorem1: float | None = None
    delta_lower_bound_exact: float | None = None
    quarantined_rows: int = 0
    quarantine: pl.DataFrame = field(default_factory=pl.DataFrame, repr=False)

    REPORT: ClassVar[tuple[str, str, str]] = (
        "zero-skipping",
        "Were zeros skipped? (Theorem 1)",
        "Whether the table could come from a method that leaves zero cells unperturbed, and the "
        "probability that a suspected individual or group is detected with certainty "
        "(Culnane, Rubinstein, Teague 2017, section 3 and Appendix C).",
    )

    def _plot(self, result: dict[str, object], path: Path) -> None:
        plot_detection(result, path)

    def _write_extra(self, stage: Path) -> None:
        self.quarantine.write_csv(stage / "quarantine.csv")


@dataclass(frozen=True)
class DifferencingResult(AuditResult):
    """Attack 3 (section 4, Appendix E): suppressed joint cells recovered from a marginal, with exact intervals."""

    alpha: float = 0.05
    scale: float = 0.0
    marginal_scale: float = 0.0
    marginals_derived: bool = False
    groups_checked: int = 0
    groups_with_recoverable_hidden_count: int = 0
    gain_beyond_noise: bool | None = None
    quarantined_rows: int = 0

    @property
    def cells(self) -> pl.DataFrame:
        """The listed cells (estimate, low, high, ...) as a table."""
        raw = self.details.get("cells")
        return pl.DataFrame(raw) if isinstance(raw, list) and raw else pl.DataFrame()

    REPORT: ClassVar[tuple[str, str, str]] = (
        "differencing",
        "Suppressed cells recovered by differencing",
        "Marginal minus the published joint cells of the same group, with an exact interval for the sum "
        "of Laplace noise terms (Culnane, Rubinstein, Teague 2017, section 4 and Appendix E).",
    )

    def _plot(self, result: dict[str, object], path: Path) -> None:
        plot_cells(result, path)


PAIRS_WARNING = (
    "pairs with a suppressed or missing side were dropped; if the table was thresholded, the kept pairs "
    "are selected on their noise and the scale estimate is biased (low) for small counts"
)


@dataclass(frozen=True)
class PairsResult:
    """``a, b`` pairs (published counts equal in the raw data) for :func:`noise_scale`, built from routes."""

    table: pl.DataFrame  # route, day[, bin], a, b
    pairs_with_a_missing_side: int
    quarantined_rows: int
    out: Path | None = None

    @property
    def warning(self) -> str | None:
        return PAIRS_WARNING if self.pairs_with_a_missing_side else None

    def to_dict(self) -> dict[str, object]:
        """The JSON object ``urbandp audit pairs`` prints (``out`` is ``None`` until the pairs are written)."""
        result: dict[str, object] = {
            "pairs": self.table.height,
            "pairs_with_a_missing_side": self.pairs_with_a_missing_side,
            "out": None if self.out is None else str(self.out),
            "quarantined_rows": self.quarantined_rows,
        }
        if self.warning:
            result["warning"] = self.warning
        return result

    def write(self, out: str | os.PathLike[str], overwrite: bool = False) -> PairsResult:
        """Write the pairs CSV to ``out`` (atomically; an existing file only with ``overwrite``); return the
        result with ``out`` set."""
        from urbandp._outputs import atomic_output_file

        target = Path(out)
        with _outputs((), overwrite), atomic_output_file(target) as tmp:
            self.table.write_csv(tmp)
        return PairsResult(self.table, self.pairs_with_a_missing_side, self.quarantined_rows, target)


# --- the attacks ----------------------------------------------------------------------------------------------

R = TypeVar("R", NoiseScaleResult, ZeroSkippingResult, DifferencingResult)


def _attack(report: object, overwrite: bool, inputs: tuple[object, ...], run: Callable[[], R]) -> R:
    """``run`` an attack: the ``report`` folder is checked before any input is read and written after."""
    folder = arguments.check_path(report, "report", optional=True)
    with _outputs(inputs, overwrite):
        if folder is not None:
            check_report_dir(Path(folder))
        result = run()
        if folder is not None:
            result.write_report(folder)
    return result


@takes_options(NoiseScaleOptions)
def noise_scale(
    pairs: TableLike,
    *,
    report: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    **options: Unpack[NoiseScaleKeywords],
) -> NoiseScaleResult:
    """Estimate the noise scale from pairs of published counts equal in the raw data (``urbandp audit noise-scale``).

    ``pairs``: a CSV path or a table with columns ``a, b`` (optional ``route``), e.g. :func:`pairs`'s ``.table``.
    ``model``: ``continuous`` (Laplace, Appendix D density, the Opal case) or ``discrete`` (discrete Laplace,
    urbandp releases). Maximum likelihood with a profile-likelihood interval at level ``1 - alpha``. Reads a
    published table only: no Session, no budget.
    """

    o = NoiseScaleOptions(**options)
    arguments.check_table(pairs, "pairs")

    def run() -> NoiseScaleResult:
        if _is_path(pairs):
            path = Path(pairs)
            u, dropped, groups = pair_differences(read_table(path, allow_empty=True), f"pairs file {path}")
        else:
            u, dropped, groups = pair_differences(to_polars(pairs, "pairs"), "pairs")
        details = noise_scale_attack(u, model=o.model, alpha=o.alpha, groups=groups)
        details["rows_dropped_non_numeric"] = dropped
        return NoiseScaleResult._of(details, model=o.model, differences=u)

    return _attack(report, overwrite, (pairs,), run)


@takes_options(ZeroSkippingOptions)
def zero_skipping(
    table: TableLike,
    *,
    privacy: PrivacyLike = None,
    report: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    **options: Unpack[ZeroSkippingKeywords],
) -> ZeroSkippingResult:
    """Decide whether zeros could have been skipped; Theorem 1's delta bound and detection probabilities
    (``urbandp audit zero-skipping``).

    ``method``: ``auto`` (``privacy``'s ``method``), ``data61-2016``, ``urbandp`` or ``unknown``; ``scale``: the
    noise scale p (default: ``privacy``'s ``noise_scale``). Reads a published table only: no Session, no budget.
    """

    o = ZeroSkippingOptions(**options)

    def run() -> ZeroSkippingResult:
        pub = _table(table, "table")
        wants = o.method in ("auto", "urbandp") or privacy is not None
        priv = _privacy(privacy, table) if wants else None
        details = zero_skipping_attack(
            pub.table["count"].to_numpy(),
            threshold=o.threshold,
            method=o.method,
            scale=_scale_from(o.scale, priv),
            privacy=priv,
            group_sizes=o.group_sizes,
        )
        details["quarantined_rows"] = pub.quarantine.height
        details["quarantine_reasons"] = sorted(set(pub.quarantine["reason"].to_list()))
        return ZeroSkippingResult._of(details, threshold=o.threshold, quarantine=pub.quarantine)

    return _attack(report, overwrite, (table, privacy), run)


@takes_options(DifferencingOptions)
def differencing(
    joint: TableLike,
    marginal: TableLike,
    *,
    privacy: PrivacyLike = None,
    report: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    **options: Unpack[DifferencingKeywords],
) -> DifferencingResult:
    """Recover suppressed joint cells from a marginal, with exact intervals for any number of Laplace terms
    (``urbandp audit differencing``).

    A null count in ``joint`` is a suppressed cell. ``scale`` (default: ``privacy``'s ``noise_scale``; required
    otherwise) is the joint cells' noise scale, ``marginal_scale`` the marginal's (default: ``scale``). Reads
    published tables only: no Session, no budget.
    """

    o = DifferencingOptions(**options)

    def run() -> DifferencingResult:
        j = _table(joint, "joint")
        m = _table(marginal, "marginal")
        priv = _privacy(privacy, joint)
        s = _scale_from(o.scale, priv)
        if s is None:
            raise InvalidParameterError(
                "no scale given and no noise_scale in privacy.json (estimate it with `urbandp audit noise-scale`)",
                parameters="scale",
            )
        derived = bool(
            priv and priv.get("marginals") in ("derived_from_noisy_joint", "derived_from_published_joint")
        )
        details = differencing_attack(
            j,
            m,
            scale=s,
            marginal_scale=o.marginal_scale,
            alpha=o.alpha,
            marginals_derived=derived,
            max_cells=o.max_cells,
        )
        details["quarantined_rows"] = j.quarantine.height + m.quarantine.height
        return DifferencingResult._of(details, alpha=o.alpha, scale=s, marginals_derived=derived)

    return _attack(report, overwrite, (joint, marginal, privacy), run)


@takes_options(PairsOptions)
def pairs(
    table: TableLike,
    *,
    out: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    **options: Unpack[PairsKeywords],
) -> PairsResult:
    """Build ``a, b`` pairs (counts equal in the raw data) for :func:`noise_scale` (``urbandp audit pairs``).

    ``route``: one or more ``mode:FROM>TO``; the tap-ons at FROM in a bin are paired with the tap-offs at TO
    ``lag_minutes`` later (the same day for daily tables). With ``out`` the pairs CSV is written there (as the
    CLI's ``--out``); else ``result.write(path)`` writes it later. Reads a published table only: no Session, no
    budget.
    """

    o = PairsOptions(**options)
    target = arguments.check_path(out, "out", optional=True)
    with _outputs((table,), overwrite):
        if target is not None:
            check_output_file(Path(target))
        pub = _table(table, "table")
        df, incomplete = route_pairs(pub.table, list(o.route), o.lag_minutes)
        result = PairsResult(df, incomplete, pub.quarantine.height)
        if target is not None:
            result = result.write(target, overwrite)
    return result
