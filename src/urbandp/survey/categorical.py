"""Declared category lists, alias normalisation and validation for categorical survey answers.

A value is mapped only through the user's alias table (e.g. ``Chevy -> Chevrolet``, report section 4.1.1) and
only to a declared category; anything else is quarantined with a reason, never mapped silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from urbandp.errors import InputError
from urbandp.survey.io import read_list


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
    if (categories is None) == (categories_file is None):
        raise InputError("give exactly one of --categories or --categories-file")
    if categories is not None:
        if within:
            raise InputError("--within needs --categories-file with lines 'group,category'")
        return Declared({"": [c.strip() for c in categories.split(",") if c.strip()]})
    assert categories_file is not None
    lines = read_list(categories_file)
    if not within:
        return Declared({"": lines})
    lists: dict[str, list[str]] = {}
    for line in lines:
        if "," not in line:
            raise InputError(f"{categories_file}: line {line!r} is not 'group,category'")
        g, c = (s.strip() for s in line.split(",", 1))
        lists.setdefault(g, []).append(c)
    return Declared(lists)


def read_aliases(path: Path | None) -> dict[str, str]:
    """Alias table ``alias,canonical`` (one pair per line)."""
    if path is None:
        return {}
    table: dict[str, str] = {}
    for line in read_list(path):
        if "," not in line:
            raise InputError(f"{path}: line {line!r} is not 'alias,canonical'")
        a, c = (s.strip() for s in line.split(",", 1))
        table[a] = c
    return table


@dataclass
class Validated:
    """Rows that passed (codes within their group list) and the quarantined rows with reasons."""

    good: pl.DataFrame
    codes: np.ndarray
    groups: np.ndarray
    quarantine: pl.DataFrame
    alias_report: pl.DataFrame


def validate(
    frame: pl.DataFrame, column: str, declared: Declared, within: str | None, aliases: dict[str, str]
) -> Validated:
    """Apply aliases, then keep rows whose value is in the (group's) declared list; quarantine the rest."""
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
    gcol = (
        frame.get_column(within).cast(pl.String).str.strip_chars()
        if within
        else pl.Series([""] * frame.height)
    )
    group_idx = {g: i for i, g in enumerate(group_names)}
    cat_idx = {g: {c: j for j, c in enumerate(cats)} for g, cats in declared.lists.items()}
    codes = np.full(frame.height, -1, dtype=np.int64)
    groups = np.full(frame.height, -1, dtype=np.int64)
    reasons: list[str | None] = []
    for r, (v, g) in enumerate(zip(mapped.to_list(), gcol.to_list(), strict=True)):
        if v is None or v == "":
            reasons.append("missing_value")
        elif g not in group_idx:
            reasons.append("group_not_declared")
        elif v not in cat_idx[g]:
            reasons.append("not_in_declared_list")
        else:
            codes[r] = cat_idx[g][v]
            groups[r] = group_idx[g]
            reasons.append(None)
    reason = pl.Series("reason", reasons, dtype=pl.String)
    ok = reason.is_null().to_numpy()
    with_row = frame.with_row_index("row", offset=1)
    quarantine = with_row.filter(~pl.Series(ok)).with_columns(reason.filter(~pl.Series(ok)))
    return Validated(frame.filter(pl.Series(ok)), codes[ok], groups[ok], quarantine, alias_report)
