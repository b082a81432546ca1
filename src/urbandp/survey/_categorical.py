"""Declared category lists, alias normalisation and validation for categorical survey answers.

A value is mapped only through the user's alias table (e.g. ``Chevy -> Chevrolet``, report section 4.1.1) and
only to a declared category; anything else is quarantined with a reason, never mapped silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from urbandp.errors import InputError, InvalidParameterError
from urbandp.survey._io import read_list
from urbandp.survey._published import exactly_one


@dataclass(frozen=True)
class Declared:
    """Declared categories: one flat list, or one list per sub-category (group) when ``within`` is used."""

    lists: dict[str, list[str]]  # group -> categories; the flat case uses the single group ""

    def __post_init__(self) -> None:
        for g, cats in self.lists.items():
            if len(set(cats)) != len(cats):
                raise InputError(f"duplicate categories in the declared list{f' of {g!r}' if g else ''}")
            if len(cats) < 2:
                raise InputError(
                    f"a declared list needs at least 2 categories{f' (group {g!r})' if g else ''}"
                )

    @property
    def grouped(self) -> bool:
        return list(self.lists) != [""]


def declared_categories(categories: str | None, categories_file: Path | None, within: str | None) -> Declared:
    """From ``--categories A,B,...`` or ``--categories-file`` (``group,category`` lines with ``--within``)."""
    exactly_one(categories=categories, categories_file=categories_file)
    if categories is not None:
        if within:
            raise InvalidParameterError(
                "within needs categories_file with lines 'group,category'",
                parameters=("within", "categories_file"),
            )
        return Declared({"": [c.strip() for c in categories.split(",") if c.strip()]})
    assert categories_file is not None
    lines = read_list(categories_file)
    if not within:
        return Declared({"": lines})
    lists: dict[str, list[str]] = {}
    for g, c in _pairs(categories_file, lines, "group,category"):
        lists.setdefault(g, []).append(c)
    return Declared(lists)


def read_aliases(path: Path | None) -> dict[str, str]:
    """Alias table ``alias,canonical`` (one pair per line)."""
    return {} if path is None else dict(_pairs(path, read_list(path), "alias,canonical"))


def _pairs(path: Path, lines: list[str], form: str) -> list[tuple[str, str]]:
    """The ``a,b`` pairs of the lines of ``path`` (each split at its first comma, stripped)."""
    bad = [line for line in lines if "," not in line]
    if bad:
        raise InputError(f"{path}: line {bad[0]!r} is not '{form}'")
    return [(a.strip(), b.strip()) for a, _, b in (line.partition(",") for line in lines)]


@dataclass
class Validated:
    """Rows that passed (codes within their group list) and the quarantined rows with reasons."""

    good: pl.DataFrame
    codes: np.ndarray
    groups: np.ndarray
    quarantine: pl.DataFrame
    alias_report: pl.DataFrame
    filled: np.ndarray  # rows of ``good`` whose answer was missing or off the list (code -1)


def validate(
    frame: pl.DataFrame,
    column: str,
    declared: Declared,
    within: str | None,
    aliases: dict[str, str],
) -> Validated:
    """Apply aliases, then keep rows whose value is in the (group's) declared list; quarantine the rest.

    A missing or off-list answer in a declared group stays in ``good`` with code -1 (marked in ``filled``) for the
    caller to replace by a uniform draw over the group's list, as OpenDP's randomized response does; dropping the
    row would let its absence reveal the answer. Such rows are still listed in the quarantine (owner only) with
    their reason.
    """
    raw = frame.get_column(column).cast(pl.String).str.strip_chars()
    mapped = raw.replace(aliases) if aliases else raw
    alias_report = (
        pl.DataFrame({"original": raw, "normalised": mapped})
        .filter(pl.col("original") != pl.col("normalised"))
        .group_by("original", "normalised")
        .len("rows")
        .sort("rows", descending=True)
    )
    group_names = list(declared.lists)
    declared_rows = pl.DataFrame(
        {
            "__g": [g for g in group_names for _ in declared.lists[g]],
            "__v": [c for g in group_names for c in declared.lists[g]],
            "__code": [j for g in group_names for j in range(len(declared.lists[g]))],
        },
        schema={"__g": pl.String, "__v": pl.String, "__code": pl.Int64},
    )
    gcol = (
        frame.get_column(within).cast(pl.String).str.strip_chars()
        if within
        else pl.Series([""] * frame.height, dtype=pl.String)
    )
    keyed = pl.DataFrame({"__g": gcol, "__v": mapped}).join(
        declared_rows, on=["__g", "__v"], how="left", maintain_order="left"
    )
    known_group = gcol.is_in(group_names)
    reason = keyed.select(
        pl.when(pl.col("__v").is_null() | (pl.col("__v") == ""))
        .then(pl.lit("missing_value"))
        .when(~pl.lit(known_group))
        .then(pl.lit("group_not_declared"))
        .when(pl.col("__code").is_null())
        .then(pl.lit("not_in_declared_list"))
        .otherwise(pl.lit(None, dtype=pl.String))
        .alias("reason")
    ).to_series()
    listed = reason.is_not_null()
    drawn = reason.is_in(["missing_value", "not_in_declared_list"]).fill_null(False)
    ok_series = ~listed | drawn
    reason = (reason + ": released as a uniform draw over the declared list").zip_with(drawn, reason)
    ok = ok_series.to_numpy()
    codes = keyed.get_column("__code").fill_null(-1).to_numpy()
    index = gcol.fill_null("").replace_strict(
        group_names, range(len(group_names)), default=-1, return_dtype=pl.Int64
    )
    groups = index.to_numpy()
    quarantine = frame.with_row_index("row", offset=1).filter(listed).with_columns(reason.filter(listed))
    filled = codes[ok] < 0
    return Validated(frame.filter(ok_series), codes[ok], groups[ok], quarantine, alias_report, filled)


def decode(declared: Declared, groups: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Category names for (group index, code) pairs, vectorised through one flat lookup table."""
    names = list(declared.lists)
    flat = np.array([c for g in names for c in declared.lists[g]], dtype=object)
    offsets = np.cumsum([0] + [len(declared.lists[g]) for g in names])[:-1]
    return flat[offsets[groups] + codes]
