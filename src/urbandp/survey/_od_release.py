"""The release of origin-destination trips over declared blocks (report eq. 13 and section 6.3): the body behind
:func:`urbandp.survey.od_randomize`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import urbandp.survey._published as release
import urbandp.survey._shared_options as shared
import urbandp.survey._trips as tr
from urbandp._release_options import ReleaseOptions, option
from urbandp._table_reader import read_table
from urbandp.errors import Advice, InputError, InvalidParameterError
from urbandp.survey._charge import PERSON, TRIP, SurveyCharge
from urbandp.survey._io import read_list, require_columns
from urbandp.survey._report import OdPrivacyReport, ledger
from urbandp.survey._result import SurveyRelease

NEIGHBOURING = (
    "replace-one (one trip's origin-destination pair, any value: a pair with a block outside the declared list is "
    "released as a uniform draw over all pairs)"
)
NEIGHBOURING_PERSON = (
    "replace one person's trips by as many other trips (any origin-destination pairs): at most "
    "max_trips_per_person of a person's trips are released, chosen by a keyed hash with a fixed public seed that "
    "reads only that person's trips; how many trips a person made, up to the bound, is not protected (the number "
    "of released rows is published)"
)
UNBOUNDED_PERSON = (
    "unbounded: no max_trips_per_person, so a person with n trips in the input loses n x epsilon_per_trip "
    "(basic composition); give person and max_trips_per_person to bound it"
)
HISTOGRAM_NOT_DP = "section 6.3 histogram-preserving reporting draws replacements from the TRUE histogram: NOT differentially private"
METHODS = ("rr", "histogram", "histogram-joint")


class OdSpec(ReleaseOptions):
    """The options of ``survey od-randomize`` (``origin``/``dest`` are --from/--to; :mod:`urbandp._release_options`)."""

    origin: str = option(help="Origin block column.", flag="--from")
    dest: str = option(help="Destination block column.", flag="--to")
    blocks_file: Path | None = option(
        None, help="Declared block ids, one per line (default: none; give this or --blocks)."
    )
    blocks: int | None = option(
        None,
        help="Declared blocks are 1..N (default: none; give this or --blocks-file).",
        ge=2,
    )
    keep_probability: float | None = option(
        None,
        help="Report eq. 13 keep probability p (default: none; give this or --epsilon).",
        ge=0,
        lt=1,
    )
    epsilon: float | None = option(
        None,
        help="Target epsilon per trip instead of p (default: none; give this or --keep-probability).",
        gt=0,
    )
    person: str | None = option(
        None,
        help="Person (respondent) id column: with --max-trips-per-person the release protects a person "
        "(default: none; the unit is one trip and the loss per person is unbounded).",
    )
    max_trips_per_person: int | None = shared.max_trips_per_person(
        "the loss per person is K x epsilon per trip"
    )
    method: str = option(
        "rr",
        help="'rr' (eq. 13, DP) | 'histogram' | 'histogram-joint' (sec. 6.3, NOT DP).",
        choices=METHODS,
    )
    sampler: str = shared.sampler()
    separator: str = shared.separator()
    budget_epsilon: float | None = shared.budget_epsilon()
    id_column: str | None = shared.id_column()
    keep_columns: str | None = shared.keep_columns()
    command: str = "urbandp.survey.od_randomize (Python)"

    def model_post_init(self, context: Any, /) -> None:
        check_person(self.person, self.max_trips_per_person)

    @property
    def per_person(self) -> bool:
        """Whether the release protects a person (trips bounded per person) rather than one trip."""
        return self.max_trips_per_person is not None

    def block_ids(self) -> list[str]:
        """The declared block list (--blocks-file, or 1..--blocks)."""
        release.exactly_one(blocks_file=self.blocks_file, blocks=self.blocks)
        if self.blocks_file is not None:
            ids = read_list(self.blocks_file)
        else:
            assert self.blocks is not None  # exactly one of the two is given (checked above)
            ids = [str(i) for i in range(1, self.blocks + 1)]
        if len(ids) < 2 or len(set(ids)) != len(ids):
            raise InputError("the declared block list needs at least 2 distinct ids")
        return ids

    def keep(self, nb: int) -> float:
        """The keep probability p of eq. 13 (given, or from --epsilon)."""
        p = self.keep_probability
        release.exactly_one(keep_probability=p, epsilon=self.epsilon)
        if self.epsilon is not None:
            release.check_epsilon(self.epsilon, "trip")
            p = tr.od_keep_probability(nb, self.epsilon)
        assert p is not None  # in [0, 1): the field's bounds, or eq. 13 solved for epsilon
        return p


ESTIMATE_OPTIONS = ("origin", "dest", "blocks_file", "blocks", "keep_probability", "epsilon", "separator")
"""The options of :class:`OdSpec` that de-biasing a release reads (:func:`urbandp.survey.od_estimate`)."""


def check_person(person: str | None, max_trips: int | None) -> None:
    """``person`` and ``max_trips_per_person`` come together: a bound needs whose trips it counts, and a person
    column without a bound would leave the loss per person unbounded."""
    if (person is None) != (max_trips is None):
        raise InvalidParameterError(
            "give person and max_trips_per_person together (the person column and the public bound on the trips "
            "released per person)",
            parameters=("person", "max_trips_per_person"),
        )


def _block_codes(frame: pl.DataFrame, spec: OdSpec, ids: list[str]) -> tuple[pl.DataFrame, np.ndarray]:
    """The input with each block's index (``__oi``, ``__di``; null when undeclared), and which rows have both."""
    index = pl.DataFrame({"__id": ids, "__i": np.arange(len(ids))})
    f = frame.with_row_index("row", offset=1).with_columns(
        pl.col(spec.origin).cast(pl.String).str.strip_chars().alias("__o"),
        pl.col(spec.dest).cast(pl.String).str.strip_chars().alias("__d"),
    )
    f = f.join(index.rename({"__id": "__o", "__i": "__oi"}), on="__o", how="left", maintain_order="left")
    f = f.join(index.rename({"__id": "__d", "__i": "__di"}), on="__d", how="left", maintain_order="left")
    ok = (f.get_column("__oi").is_not_null() & f.get_column("__di").is_not_null()).to_numpy()
    return f, ok


def _draw(
    spec: OdSpec, o: np.ndarray, de: np.ndarray, ok: np.ndarray, nb: int, p: float, charge: SurveyCharge
) -> tuple[np.ndarray, np.ndarray, float | None]:
    """Eq. 13 (reserved first, per trip or per person) or section 6.3 (NOT DP); an undeclared block becomes a
    uniform pair. Returns the epsilon per trip (None when not DP)."""
    eps = tr.od_epsilon(nb, p) if spec.method == "rr" else None
    if eps is not None:
        params: dict[str, object] = {"blocks": nb, "keep_probability": p, "epsilon_per_trip": eps}
        if spec.max_trips_per_person is not None:
            params["max_trips_per_person"] = spec.max_trips_per_person
        charge.reserve(_unit_epsilon(spec, nb, p, eps), "survey-od-rr", params)
        source = charge.bits(spec.sampler)
        ro, rd = tr.od_randomize(o, de, nb, p, source)
    else:
        source = charge.ungated_bits(spec.sampler)
        ro, rd = o.copy(), de.copy()
        if ok.any():
            joint = spec.method == "histogram-joint"
            ro[ok], rd[ok] = tr.histogram_block_reporting(o[ok], de[ok], p, joint=joint, source=source)
    bad = np.flatnonzero(~ok)
    if bad.size:  # an undeclared block: the pair is a uniform draw over all pairs (eq. 13's floor)
        pair = source.uniform_int(bad.size, nb * nb)
        ro[bad], rd[bad] = pair // nb, pair % nb
    return ro, rd, eps


def _unit_epsilon(spec: OdSpec, nb: int, p: float, eps: float) -> float:
    """The epsilon per privacy unit: per trip (eq. 13), or per person (K trips composed)."""
    if spec.max_trips_per_person is None:
        return eps
    return tr.per_person_epsilon(nb, p, spec.max_trips_per_person)


def _bounded(frame: pl.DataFrame, spec: OdSpec) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The trips released (at most --max-trips-per-person per person; all without a bound) and those dropped,
    for the owner, with their reason (``missing_person``, ``over_max_trips_per_person``)."""
    if spec.person is None or spec.max_trips_per_person is None:
        return frame, frame.clear().with_columns(pl.lit("").alias("reason"))
    f = frame.with_columns(
        pl.int_range(pl.len()).over(spec.person, spec.origin, spec.dest).alias("__occurrence")
    )
    key = [spec.origin, spec.dest, "__occurrence"]
    keep = tr.keep_per_person(f, spec.person, key, spec.max_trips_per_person)
    missing = f.get_column(spec.person).is_null().to_numpy()
    why = np.where(missing, "missing_person", "over_max_trips_per_person")
    dropped = (
        frame.with_row_index("row", offset=1).with_columns(pl.Series("reason", why)).filter(~pl.Series(keep))
    )
    return frame.filter(pl.Series(keep)), dropped


def od_body(spec: OdSpec, path: Path, label: str, charge: SurveyCharge) -> SurveyRelease:
    """Read, reserve, draw and describe one ``survey od-randomize`` release."""
    ids = spec.block_ids()
    nb = len(ids)
    p = spec.keep(nb)
    if spec.method != "rr":
        charge.refuse_not_dp(
            Advice(f'method="{spec.method}" draws replacements from the true histogram', parameters="method")
        )
    elif spec.max_trips_per_person is not None:  # the loss per person, against the one limit, before the data
        k, per_trip = spec.max_trips_per_person, tr.od_epsilon(nb, p)
        what = f"max_trips_per_person x epsilon per trip ({k} x {per_trip:.4g}) ="
        release.check_epsilon(_unit_epsilon(spec, nb, p, per_trip), "person", what, ("max_trips_per_person",))
    whole = read_table(path, spec.separator)
    require_columns(whole, Path(label), spec.origin, spec.dest, *([spec.person] if spec.person else []))
    protected = [spec.origin, spec.dest]
    public = release.public_columns(whole, Path(label), spec.keep_columns, spec.id_column, {}, protected)
    frame, dropped = _bounded(whole, spec)
    f, ok = _block_codes(frame, spec, ids)
    o = f.get_column("__oi").fill_null(0).to_numpy().astype(np.int64)
    de = f.get_column("__di").fill_null(0).to_numpy().astype(np.int64)
    ro, rd, eps = _draw(spec, o, de, ok, nb, p, charge)
    arr = np.array(ids, dtype=object)
    moved = frame.with_columns(
        pl.Series(spec.origin, arr[ro].astype(str)), pl.Series(spec.dest, arr[rd].astype(str))
    )
    released = release.select_released(moved, public, protected)
    reason = pl.lit("block_not_declared: released as a uniform draw over all pairs").alias("reason")
    undeclared = int((~ok).sum())
    counts: dict[str, object] = {"trips_in": whole.height, "trips_with_undeclared_block": undeclared}
    for why in ("over_max_trips_per_person", "missing_person") if spec.per_person else ():
        counts[f"trips_dropped_{why}"] = int((dropped.get_column("reason") == why).sum())
    eps_text = "not DP" if eps is None else f"{eps:.4g} per trip"
    if eps is not None and spec.max_trips_per_person is not None:
        eps_text += f", {_unit_epsilon(spec, nb, p, eps):.4g} per person"
    return SurveyRelease(
        tables={"trips": released},
        privacy=_od_report(spec, nb, p, eps, public),
        owner={
            "utility.json": tr.utility(o[ok], de[ok], ro[ok], rd[ok], nb),
            "quarantine.csv": pl.concat(
                [
                    f.filter(pl.Series(~ok)).drop("__o", "__d", "__oi", "__di").with_columns(reason),
                    dropped,
                ],
                how="diagonal_relaxed",
            ),
            "input_report.json": release.input_report(counts),
        },
        file_name="trips.csv",
        summary=f"randomized {released.height:,} trips over {nb} blocks ({spec.method}, epsilon {eps_text}); "
        f"undeclared block {undeclared:,}"
        + (
            f"; dropped over the per-person bound or without a person {dropped.height:,}"
            if spec.per_person
            else ""
        ),
    )


def _od_report(spec: OdSpec, nb: int, p: float, eps: float | None, public: dict[str, str]) -> OdPrivacyReport:
    """The typed privacy report (public parameters only): the epsilon per trip and per person."""
    reasons = [] if eps is not None else [HISTOGRAM_NOT_DP]
    unit_eps = None if eps is None else _unit_epsilon(spec, nb, p, eps)
    extra: dict[str, object] = {}
    if eps is None:
        extra["epsilon_reason"] = "not DP: replacement drawn from the true histogram"
    elif not spec.per_person:
        extra["epsilon_per_person_reason"] = UNBOUNDED_PERSON
    unit = PERSON if spec.per_person else TRIP
    return OdPrivacyReport(
        command=spec.command,
        unit=unit,
        neighbouring=NEIGHBOURING_PERSON if spec.per_person else NEIGHBOURING,
        mechanism="OD randomized response (report eq. 13)"
        if eps is not None
        else f"report section 6.3 ({spec.method})",
        blocks=nb,
        od_pairs=nb * nb,
        keep_probability=p,
        epsilon=unit_eps,
        epsilon_per_trip=eps,
        epsilon_per_person=unit_eps if spec.per_person else None,
        max_trips_per_person=spec.max_trips_per_person,
        person_column=spec.person,
        **extra,
        public_columns=release.declaration(public),
        ledger=None
        if unit_eps is None
        else ledger(spec.budget_epsilon, "od-randomize", unit_eps, unit, spec.method),
        not_dp_reasons=reasons,
        differentially_private=not reasons,
    )


def od_estimate_table(path: Path, label: str, spec: OdSpec) -> pl.DataFrame:
    """The de-biased OD table of a released trips table (:func:`urbandp.survey._trips.od_estimate`): one row per
    declared pair (``spec.origin``, ``spec.dest``) with its released count, unbiased estimate, standard deviation
    and 95 % interval. Post-processing: only the release's public parameters (blocks, keep probability) are used."""
    ids = spec.block_ids()
    nb = len(ids)
    p = spec.keep(nb)
    if p <= 0:
        raise InvalidParameterError(
            "keep_probability 0 releases pure noise: nothing can be de-biased", parameters="keep_probability"
        )
    frame = read_table(path, spec.separator)
    require_columns(frame, Path(label), spec.origin, spec.dest)
    f, ok = _block_codes(frame, spec, ids)
    if not ok.all():
        bad = f.filter(pl.Series(~ok)).select("row", spec.origin, spec.dest).head(3).rows()
        raise InputError(
            f"{label}: {int((~ok).sum()):,} released trip(s) name a block outside the declared list (first: "
            f"row, {spec.origin}, {spec.dest} = {bad}); give the blocks the release was made with"
        )
    pairs = f.get_column("__oi").to_numpy() * nb + f.get_column("__di").to_numpy()
    est = tr.od_estimate(pairs, nb, p)
    arr = np.array(ids, dtype=object)
    t = np.arange(nb * nb)
    return pl.DataFrame(
        {
            spec.origin: arr[t // nb].astype(str),
            spec.dest: arr[t % nb].astype(str),
            "released": est["released"].astype(np.int64),
            **{k: est[k] for k in ("estimate", "sd", "ci_low", "ci_high")},
        }
    )
