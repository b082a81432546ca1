"""The randomized-response release of one categorical column (report sections 3.3, 4.1) and its de-biased
estimate (report eq. 6): the bodies behind :func:`urbandp.survey.randomize` and :func:`urbandp.survey.estimate`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from pydantic import field_validator

import urbandp.survey._published as release
import urbandp.survey._randomized_response as rr
import urbandp.survey._shared_options as shared
from urbandp._release_options import ReleaseOptions, option
from urbandp._table_reader import read_table
from urbandp.errors import Advice, InputError, InvalidParameterError
from urbandp.survey._categorical import (
    Declared,
    Validated,
    declared_categories,
    decode,
    read_aliases,
    validate,
)
from urbandp.survey._charge import SurveyCharge
from urbandp.survey._io import require_columns
from urbandp.survey._report import RandomizePrivacyReport, ledger
from urbandp.survey._result import SurveyRelease

NEIGHBOURING = (
    "replace-one (one respondent's answer, any value: an answer that is missing or off the declared list is "
    "released as a uniform draw over the list, so no row is dropped for it; a row whose public within group is "
    "missing or undeclared is not released: that depends only on the public column)"
)
REPORT_REPLACEMENT_NOT_DP = (
    "report-replacement is NOT differentially private: the replacement distribution is built from the true "
    "answers and its epsilon (eq. 12) depends on the data (n = count of the rarest model; the owner's "
    "input_report.json has the report's value)"
)


class RandomizeSpec(ReleaseOptions):
    """The options of ``survey randomize`` (:mod:`urbandp._release_options`), checked before the data is read."""

    column: str = option(help="Column to randomize.")
    categories: str | None = option(
        None, help="Declared list: A,B,C (default: none; give this or --categories-file)."
    )
    categories_file: Path | None = option(
        None,
        help="One category per line, or 'group,category' lines with --within (default: none; give this or --categories).",
    )
    within: str | None = option(
        None, help="Sub-category column such as fuel type, kept as is (default: none)."
    )
    epsilon: float | None = option(
        None,
        help="Epsilon per respondent for k-RR (default: none; give this or --theta).",
        gt=0,
    )
    theta: float | None = option(
        None,
        help="Binary RR truth probability, 2 categories only (default: none; give this or --epsilon).",
        gt=0,
        lt=1,
    )
    aliases: Path | None = option(None, help="Alias table: 'alias,canonical' lines (default: no aliases).")
    method: str = option(
        "krr",
        help="'krr' (default) or 'report-replacement' (report eqs. 8-12, NOT DP; needs --p).",
        choices=("krr", "report-replacement"),
    )
    p: float | None = option(
        None,
        help="Keep probability for --method report-replacement (default: none).",
        ge=0,
        lt=1,
    )
    sampler: str = shared.sampler()
    separator: str = shared.separator()
    budget_epsilon: float | None = shared.budget_epsilon()
    id_column: str | None = shared.id_column()
    keep_columns: str | None = shared.keep_columns()
    command: str = "urbandp.survey.randomize (Python)"

    @field_validator("categories", mode="before")
    @classmethod
    def _list_as_text(cls, value: object) -> object:
        """A declared list given as a list (or tuple) of names is the text the flag takes: ``A,B,C``."""
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return ",".join(value)
        return value


ESTIMATE_OPTIONS = ("column", "categories", "categories_file", "within", "epsilon", "theta", "separator")
"""The options of :class:`RandomizeSpec` that de-biasing a release reads (:func:`urbandp.survey.estimate`)."""


@dataclass
class _Drawn:
    """What a method drew: the new codes, the epsilon (None: NOT DP), its description and owner figures."""

    codes: np.ndarray
    epsilon: float | None
    mechanism: str
    detail: dict[str, object]
    owner: dict[str, object]
    warnings: list[str]


def _report_replacement(
    spec: RandomizeSpec, checked: Validated, names: list[str], charge: SurveyCharge
) -> _Drawn:
    """The report's eqs. 8-12 (NOT DP; refused with a dataset before this runs)."""
    codes, groups = checked.codes, checked.groups
    p = spec.p
    if p is None or not 0 <= p < 1:
        raise InvalidParameterError("method report-replacement needs p in [0, 1)", parameters=("method", "p"))
    new = rr.report_replacement(codes, groups, p, charge.ungated_bits(spec.sampler))
    by_group = {
        names[g]: rr.report_replacement_epsilon(p, np.bincount(codes[groups == g]).tolist())
        for g in np.unique(groups)
    }
    mechanism = "report random replacement within sub-category (eqs. 8-12)"
    owner: dict[str, object] = {"report_epsilon_by_group_data_dependent": by_group}
    return _Drawn(new, None, mechanism, {"p": p}, owner, [])


def _krr(spec: RandomizeSpec, checked: Validated, declared: Declared, charge: SurveyCharge) -> _Drawn:
    """Binary RR (``theta``) or k-RR within each declared list (``epsilon``): reserved before any draw."""
    codes, groups = checked.codes, checked.groups
    names = list(declared.lists)
    lists = {i: len(declared.lists[g]) for i, g in enumerate(names)}
    mechanism = "k-ary randomized response (OpenDP make_randomized_response semantics)"
    warnings: list[str] = []
    if spec.theta is not None:
        if declared.grouped or lists[0] != 2:
            raise InvalidParameterError(
                "theta (binary RR) needs exactly 2 declared categories and no within",
                parameters=("theta", "within"),
            )
        prob = (1.0 + spec.theta) / 2.0
        eps = rr.binary_epsilon(spec.theta)
        charge.reserve(eps, "survey-binary-rr", {"theta": spec.theta, "column": spec.column})
        new = rr.randomize_codes(codes, 2, prob, charge.bits(spec.sampler))
        probs = {names[0]: prob}
    else:
        assert spec.epsilon is not None
        by_code = rr.within_probs(lists, spec.epsilon)  # public: from the declared lists alone
        eps = rr.within_epsilon(lists, by_code)
        if eps < spec.epsilon * (1 - 1e-9):
            warnings.append(
                Advice(
                    f"epsilon={spec.epsilon:g}: k-RR spends at most {eps:.6g} here (its truth probability cannot "
                    "be closer to 1 in double precision); that is what is released and charged",
                    parameters="epsilon",
                )
            )
        params = {"epsilon": eps, "column": spec.column, "within": spec.within}
        charge.reserve(eps, "survey-krr", params)
        new, _ = rr.randomize_within(codes, groups, lists, spec.epsilon, charge.bits(spec.sampler))
        probs = {names[g]: v for g, v in by_code.items()}
    return _Drawn(
        new, eps, mechanism, {"truth_probability_by_group": probs, "theta": spec.theta}, {}, warnings
    )


def _check_method(spec: RandomizeSpec, charge: SurveyCharge) -> None:
    """The options that need no data: epsilon's limit, the method, NOT DP refused with a dataset."""
    release.check_epsilon(spec.epsilon, "respondent")
    if spec.method == "report-replacement":
        charge.refuse_not_dp("report-replacement builds its replacements from the true answers")
    else:
        release.exactly_one(epsilon=spec.epsilon, theta=spec.theta)


def randomize_body(spec: RandomizeSpec, path: Path, label: str, charge: SurveyCharge) -> SurveyRelease:
    """Read, validate, draw and describe one ``survey randomize`` release (the folder is written by the caller)."""
    _check_method(spec, charge)
    fill_source = charge.bits(spec.sampler) if spec.method == "krr" else charge.ungated_bits(spec.sampler)
    declared = declared_categories(spec.categories, spec.categories_file, spec.within)
    frame = read_table(path, spec.separator)
    require_columns(frame, Path(label), spec.column, *([spec.within] if spec.within else []))
    needed = {"within": spec.within} if spec.within else {}
    public = release.public_columns(
        frame, Path(label), spec.keep_columns, spec.id_column, needed, [spec.column]
    )
    checked = validate(frame, spec.column, declared, spec.within, read_aliases(spec.aliases))
    filled = checked.filled
    checked.codes[filled] = 0  # replaced below by a uniform draw over the row's declared list
    if checked.good.height == 0:
        raise InputError(
            f"no row of {label} has a value in the declared list (all {frame.height} quarantined)"
        )
    names = list(declared.lists)
    if spec.method == "krr":
        drawn = _krr(spec, checked, declared, charge)
    else:
        drawn = _report_replacement(spec, checked, names, charge)
    for g in np.unique(checked.groups[filled]):  # off-list or missing answers: a uniform draw, as OpenDP's RR
        rows = filled & (checked.groups == g)
        k = len(declared.lists[names[int(g)]])
        drawn.codes[rows] = rr.randomize_codes(
            np.zeros(int(rows.sum()), dtype=np.int64), k, 1.0 / k, fill_source
        )
    values = decode(declared, checked.groups, drawn.codes)
    released = release.select_released(
        checked.good.with_columns(pl.Series(spec.column, values.tolist(), dtype=pl.String)),
        public,
        [spec.column],
    )
    counts = {
        "rows_in": frame.height,
        "rows_released": released.height,
        "rows_quarantined": checked.quarantine.height,
        "answers_off_list_released_as_uniform_draws": int(filled.sum()),
        **drawn.owner,
    }
    privacy = _randomize_report(spec, declared, drawn, public, fill_source.name)
    eps_text = "not DP" if drawn.epsilon is None else f"{drawn.epsilon:.6g}"
    return SurveyRelease(
        tables={"randomized": released},
        privacy=privacy,
        owner={
            "quarantine.csv": checked.quarantine,
            "alias_report.csv": checked.alias_report,
            "input_report.json": release.input_report(counts),
        },
        warnings=drawn.warnings,
        file_name="randomized.csv",
        summary=f"randomized {released.height:,} rows (epsilon {eps_text}, {drawn.mechanism}); "
        f"quarantined {checked.quarantine.height:,}",
    )


def _randomize_report(
    spec: RandomizeSpec,
    declared: Declared,
    drawn: _Drawn,
    public: dict[str, str],
    sampler: str,
) -> RandomizePrivacyReport:
    """The typed privacy report: public parameters and the epsilon computed from them only."""
    reasons = [REPORT_REPLACEMENT_NOT_DP] if drawn.epsilon is None else []
    entry = None
    if drawn.epsilon is not None:
        name = f"randomize {spec.column}"
        entry = ledger(spec.budget_epsilon, name, drawn.epsilon, "respondent", drawn.mechanism)
    return RandomizePrivacyReport(
        command=spec.command,
        unit="respondent",
        neighbouring=NEIGHBOURING,
        column=spec.column,
        within=spec.within,
        public_columns=release.declaration(public),
        declared_categories=declared.lists,
        mechanism=drawn.mechanism,
        epsilon=drawn.epsilon,
        epsilon_is_dp=spec.method == "krr",
        sampler=sampler,
        detail=drawn.detail,
        ledger=entry,
        not_dp_reasons=reasons,
        differentially_private=not reasons,
    )


def estimate_table(data: Path, label: str, spec: RandomizeSpec) -> pl.DataFrame:
    """De-biased shares with 95 % CIs (report eq. 6): post-processing of a randomized column, no budget; only
    the release's public parameters (``spec``'s column, declared lists, epsilon or theta) are used."""
    column, within, epsilon, theta = spec.column, spec.within, spec.epsilon, spec.theta
    release.exactly_one(epsilon=epsilon, theta=theta)
    declared = declared_categories(spec.categories, spec.categories_file, within)
    frame = read_table(data, spec.separator)
    require_columns(frame, Path(label), column, *([within] if within else []))
    tables = []
    for g, cats in declared.lists.items():
        sub = frame.filter(pl.col(within) == g) if within else frame
        if sub.height == 0:
            continue
        col = sub.get_column(column).cast(pl.String)
        bad = sorted(col.filter(~col.is_in(cats) | col.is_null()).unique().fill_null("<missing>").to_list())
        if bad:
            raise InputError(f"{label}: value(s) outside the declared list: {', '.join(map(str, bad[:5]))}")
        codes = col.replace_strict(cats, list(range(len(cats))), return_dtype=pl.Int64).to_numpy()
        counts = np.bincount(codes, minlength=len(cats))
        prob = (1.0 + theta) / 2.0 if theta is not None else rr.krr_prob(len(cats), float(epsilon))  # type: ignore[arg-type]
        share = sub.height / frame.height
        est, se = rr.debias_counts(counts, prob)  # the 95 % interval clipped to [0, 1], the estimate unbiased
        low, high = np.maximum(est - rr.Z95 * se, 0.0), np.minimum(est + rr.Z95 * se, 1.0)
        shares = {"estimate": est * share, "ci_low": low * share, "ci_high": high * share}
        tables.append(pl.DataFrame({"group": g, "category": cats, **shares}))
    empty = pl.DataFrame(  # no row in any declared group: the table with no row
        schema={"group": pl.String, "category": pl.String, "estimate": pl.Float64, "ci_low": pl.Float64,
                "ci_high": pl.Float64}
    )  # fmt: skip
    table = pl.concat(tables) if tables else empty
    return table if within else table.drop("group")
