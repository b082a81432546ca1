"""The options several survey releases share, each declared once (:func:`urbandp._release_options.option`) and
used as a field of each release's model (:class:`~urbandp.survey._rr_release.RandomizeSpec`, ...)."""

from __future__ import annotations

from typing import Any

from urbandp._release_options import option
from urbandp.survey._sampling import SOURCES


def sampler() -> Any:
    """``--sampler``: where the randomized response draws its bits."""
    return option(
        "opendp",
        help="Random source: 'opendp' (OpenDP bit-vector RR, default) or 'os' (OS CSPRNG, integer-exact, faster).",
        choices=tuple(SOURCES),
    )


def separator() -> Any:
    """``--separator``: the CSV field separator of the input."""
    return option(",", help="CSV field separator.")


def id_column() -> Any:
    """``--id``: a row identifier copied through unchanged (declared public)."""
    return option(
        None,
        help="Row identifier column copied through unchanged (declared public). Default: none (rows keep the "
        "input order).",
        flag="--id",
    )


def keep_columns() -> Any:
    """``--keep-columns``: columns of the input declared public, copied through."""
    return option(
        None,
        help="Comma list of columns copied through unchanged: you declare them public (they are not protected). "
        "Default: none (only --id, and the columns the command needs).",
    )


def budget_epsilon() -> Any:
    """``--budget-epsilon`` of the releases charged epsilon per privacy unit (answers, trips)."""
    return option(None, help="Refuse to spend more than this (default: no cap).", gt=0)


def max_trips_per_person(loss: str) -> Any:
    """``--max-trips-per-person``: the public bound K of the releases per trip (:func:`urbandp.survey._trips.keep_per_person` keeps
    them); ``loss`` says what a person loses with it."""
    return option(
        None,
        help="Public bound K on the trips released per person (the others are dropped; which ones is a keyed "
        f"hash of the person's own trips): {loss} (default: none).",
        ge=1,
    )
