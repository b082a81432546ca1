"""The release of origin-destination trips over declared blocks (report eq. 13 and section 6.3): the body behind
:func:`urbandp.survey.od_randomize`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

import urbandp.survey.release as release
import urbandp.survey.trips as tr
from urbandp.errors import InputError, InvalidParameterError
from urbandp.spec_options import Bounds, check_options, option
from urbandp.survey.charge import SurveyCharge
from urbandp.survey.io import read_list, read_table, require_columns
from urbandp.survey.report import OdPrivacyReport, ledger
from urbandp.survey.result import SurveyRelease
from urbandp.survey.sampling import SOURCES

NEIGHBOURING = (
    "replace-one (one trip's origin-destination pair, any value: a pair with a block outside the declared list is "
    "released as a uniform draw over all pairs)"
)
HISTOGRAM_NOT_DP = "section 6.3 histogram-preserving reporting draws replacements from the TRUE histogram: NOT differentially private"
OWNER_FILES = ["utility.json", "quarantine.csv", "input_report.json"]
METHODS = ("rr", "histogram", "histogram-joint")


@dataclass(frozen=True)
class OdSpec:
    """The options of ``survey od-randomize`` (``origin``/``dest`` are --from/--to), each declared once on its
    field (:func:`urbandp.spec_options.option`): the command's flags are built from the fields and
    :func:`urbandp.survey.api.od_randomize` takes them as keywords with the same defaults."""

    origin: str = option(help="Origin block column.", flag="--from")
    dest: str = option(help="Destination block column.", flag="--to")
    blocks_file: Path | None = option(
        None, help="Declared block ids, one per line (default: none; give this or --blocks)."
    )
    blocks: int | None = option(
        None,
        help="Declared blocks are 1..N (default: none; give this or --blocks-file).",
        bounds=Bounds(at_least=2),
    )
    keep_probability: float | None = option(
        None,
        help="Report eq. 13 keep probability p (default: none; give this or --epsilon).",
        bounds=Bounds(at_least=0, below=1),
    )
    epsilon: float | None = option(
        None,
        help="Target epsilon per trip instead of p (default: none; give this or --keep-probability).",
        bounds=Bounds(above=0),
    )
    method: str = option(
        "rr",
        help="'rr' (eq. 13, DP) | 'histogram' | 'histogram-joint' (sec. 6.3, NOT DP).",
        choices=("rr", "histogram", "histogram-joint"),
    )
    sampler: str = option("opendp", help=release.SAMPLER_HELP, choices=tuple(SOURCES))
    separator: str = option(",", help=release.SEPARATOR_HELP)
    budget_epsilon: float | None = option(
        None, help="Refuse to spend more than this (default: no cap).", bounds=Bounds(above=0)
    )
    id_column: str | None = option(None, help=release.ID_COLUMN_HELP, flag="--id")
    keep_columns: str | None = option(None, help=release.KEEP_COLUMNS_HELP)
    command: str = "urbandp.survey.od_randomize (Python)"

    def __post_init__(self) -> None:
        check_options(self)  # each option's declared bounds or choices, before the data is read

    def block_ids(self) -> list[str]:
        """The declared block list (--blocks-file, or 1..--blocks)."""
        if (self.blocks_file is None) == (self.blocks is None):
            raise InvalidParameterError(
                "give exactly one of blocks_file or blocks", parameters=("blocks_file", "blocks")
            )
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
        if (p is None) == (self.epsilon is None):
            raise InvalidParameterError(
                "give exactly one of keep_probability or epsilon", parameters=("keep_probability", "epsilon")
            )
        if self.epsilon is not None:
            release.check_epsilon(self.epsilon, "trip")
            p = tr.od_keep_probability(nb, self.epsilon)
        assert p is not None
        if not 0 <= p < 1:
            raise InvalidParameterError(
                f"keep_probability must be in [0, 1), got {p}", parameters="keep_probability"
            )
        return p


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
    """Eq. 13 (reserved first) or section 6.3 (NOT DP); an undeclared block becomes a uniform pair."""
    eps = tr.od_epsilon(nb, p) if spec.method == "rr" else None
    if eps is not None:
        charge.reserve(eps, "survey-od-rr", {"blocks": nb, "keep_probability": p})
        source = charge.bits(spec.sampler)
        ro, rd = tr.od_randomize(o, de, nb, p, source)
    else:
        source = charge.ungated_bits(spec.sampler)
        ro, rd = o.copy(), de.copy()
        if ok.any():
            joint = spec.method == "histogram-joint"
            ro[ok], rd[ok] = tr.histogram_block_reporting(o[ok], de[ok], p, joint=joint, source=source)
    bad = np.flatnonzero(~ok)
    if (
        bad.size
    ):  # an undeclared block: the pair is released as a uniform draw over all pairs (eq. 13's floor)
        pair = source.uniform_int(bad.size, nb * nb)
        ro[bad], rd[bad] = pair // nb, pair % nb
    return ro, rd, eps


def od_body(spec: OdSpec, path: Path, label: str, charge: SurveyCharge) -> SurveyRelease:
    """Read, reserve, draw and describe one ``survey od-randomize`` release."""
    from urbandp.survey.sampling import bit_source

    bit_source(spec.sampler)  # the option, checked before anything else
    ids = spec.block_ids()
    nb = len(ids)
    p = spec.keep(nb)
    if spec.method in ("histogram", "histogram-joint"):
        charge.refuse_not_dp(f"--method {spec.method} draws replacements from the true histogram")
    frame = read_table(path, spec.separator)
    require_columns(frame, Path(label), spec.origin, spec.dest)
    protected = [spec.origin, spec.dest]
    public = release.public_columns(frame, Path(label), spec.keep_columns, spec.id_column, {}, protected)
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
    counts = {"trips_in": frame.height, "trips_with_undeclared_block": undeclared}
    eps_text = "not DP" if eps is None else f"{eps:.4g}"
    return SurveyRelease(
        tables={"trips": released},
        privacy=_od_report(spec, nb, p, eps, public, charge),
        owner={
            "utility.json": tr.utility(o[ok], de[ok], ro[ok], rd[ok], nb),
            "quarantine.csv": f.filter(pl.Series(~ok))
            .drop("__o", "__d", "__oi", "__di")
            .with_columns(reason),
            "input_report.json": release.input_report(counts),
        },
        file_name="trips.csv",
        summary=f"randomized {released.height:,} trips over {nb} blocks ({spec.method}, epsilon {eps_text}); "
        f"undeclared block {undeclared:,}",
    )


def _od_report(
    spec: OdSpec, nb: int, p: float, eps: float | None, public: dict[str, str], charge: SurveyCharge
) -> OdPrivacyReport:
    """The typed privacy report (public parameters only)."""
    reasons = charge.not_dp_reasons + ([HISTOGRAM_NOT_DP] if eps is None else [])
    extra = {"epsilon_reason": "not DP: replacement drawn from the true histogram"} if eps is None else {}
    return OdPrivacyReport(
        command=spec.command,
        unit="trip",
        neighbouring=NEIGHBOURING,
        mechanism="OD randomized response (report eq. 13)"
        if eps is not None
        else f"report section 6.3 ({spec.method})",
        blocks=nb,
        od_pairs=nb * nb,
        keep_probability=p,
        epsilon=eps,
        **extra,
        public_columns=release.declaration(public),
        ledger=None if eps is None else ledger(spec.budget_epsilon, "od-randomize", eps, "trip", spec.method),
        not_dp_outputs=OWNER_FILES,
        not_dp_reasons=reasons,
        differentially_private=not reasons,
    )
