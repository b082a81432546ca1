"""Read a count table of any column names: the ``--column ROLE=NAME`` mapping and the value forms of real tables.

How the mapping and the value forms are read is in docs/counts.md, section "Tables of any layout":
:func:`column_map` checks the mapping, :func:`apply_columns` renames, :func:`normalise_days` reads ``YYYYMMDD``
days and :func:`fill_daily_bin` gives a daily table its one bin.

Renaming is the same for every input row (a per-row rule on public column names): it changes nothing in the
privacy analysis, so it is not part of the release's spec hash.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from urbandp.counts._domain import CountDomain
from urbandp.errors import InputError, InvalidParameterError

EVENT_ROLES = ("mode", "timestamp", "tap", "location", "card_id")
COUNT_ROLES = ("mode", "day", "tap", "bin", "location", "count")

ColumnsLike = list[str] | tuple[str, ...] | dict[str, str] | None
"""A column mapping: ``ROLE=NAME`` items (the command line's ``--column``), a mapping role -> name, or None."""


def column_map(columns: ColumnsLike, input_kind: str = "counts") -> dict[str, str]:
    """``columns`` as role -> input column name, checked: ``ROLE=NAME`` items, known roles, each role and each
    name at most once. Raises :class:`InvalidParameterError` naming ``column``."""
    if columns is None:
        return {}
    roles = EVENT_ROLES if input_kind == "events" else COUNT_ROLES
    pairs: list[tuple[str, str]] = []
    if isinstance(columns, Mapping):
        pairs = [(str(k).strip(), str(v).strip()) for k, v in columns.items()]
    else:
        for item in columns:
            if "=" not in item:
                raise InvalidParameterError(
                    f"column must look like ROLE=NAME (e.g. location=loc), got {item!r}", parameters="column"
                )
            role, name = item.split("=", 1)
            pairs.append((role.strip(), name.strip()))
    found: dict[str, str] = {}
    for role, name in pairs:
        if role not in roles:
            raise InvalidParameterError(
                f"column {role}={name}: {role!r} is not a role of {input_kind} input (roles: {', '.join(roles)})",
                parameters="column",
            )
        if not name:
            raise InvalidParameterError(f"column {role}=: name the input's field", parameters="column")
        if role in found:
            raise InvalidParameterError(
                f"column: role {role!r} is mapped twice ({found[role]}, {name})", parameters="column"
            )
        if name in found.values():
            raise InvalidParameterError(
                f"column: the input's field {name!r} is given two roles", parameters="column"
            )
        found[role] = name
    return found


def apply_columns(frame: pl.DataFrame, mapping: Mapping[str, str]) -> pl.DataFrame:
    """``frame`` with each mapped column renamed to its role (:func:`column_map`); other columns kept."""
    renames = {name: role for role, name in mapping.items() if name != role}
    for role, name in mapping.items():
        if name not in frame.columns:
            raise InvalidParameterError(
                f"column {role}={name}: the input has no field {name!r} (its header: {', '.join(frame.columns)})",
                parameters="column",
            )
        if role != name and role in frame.columns and role not in renames:
            raise InvalidParameterError(
                f"column {role}={name}: the input also has a field named {role!r}; give that one another role "
                "or drop it",
                parameters="column",
            )
    return frame.rename(renames) if renames else frame


def normalise_days(day: pl.Expr) -> pl.Expr:
    """A day column as ISO dates: ``20160814`` (Opal's form) becomes ``2016-08-14``; other text is kept (an
    ISO date stays, anything else is quarantined against the domain's days)."""
    text = day.cast(pl.String).str.strip_chars()
    compact = text.str.contains(r"^\d{8}$")
    iso = pl.concat_str([text.str.slice(0, 4), text.str.slice(4, 2), text.str.slice(6, 2)], separator="-")
    return pl.when(compact).then(iso).otherwise(text)


def fill_daily_bin(frame: pl.DataFrame, domain: CountDomain) -> pl.DataFrame:
    """A counts table without a ``bin`` column: its rows are whole days, the one bin of a domain with
    ``bin_minutes`` 1440; refused over finer bins (the table cannot say which bin a row is)."""
    if "bin" in frame.columns:
        return frame
    if len(domain.bins) != 1:
        raise InputError(
            "count input has no bin column: it is a daily table, but the domain has "
            f"{len(domain.bins)} bins a day; use a domain with bin_minutes 1440, or give the table's bin column "
            "the role bin (column bin=NAME)"
        )
    return frame.with_columns(bin=pl.lit(domain.bins[0]))
