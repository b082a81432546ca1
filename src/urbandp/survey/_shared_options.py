"""The options every survey release shares, each declared once (:func:`urbandp._release_options.option`) and used
as a field of each release's model (:class:`~urbandp.survey._rr_release.RandomizeSpec`, ...): the sampler, the
CSV separator and the public columns copied through."""

from __future__ import annotations

from typing import Any

from urbandp._release_options import option
from urbandp.survey._published import ID_COLUMN_HELP, KEEP_COLUMNS_HELP, SAMPLER_HELP, SEPARATOR_HELP
from urbandp.survey._sampling import SOURCES


def sampler() -> Any:
    """``--sampler``: where the randomized response draws its bits."""
    return option("opendp", help=SAMPLER_HELP, choices=tuple(SOURCES))


def separator() -> Any:
    """``--separator``: the CSV field separator of the input."""
    return option(",", help=SEPARATOR_HELP)


def id_column() -> Any:
    """``--id``: a row identifier copied through unchanged (declared public)."""
    return option(None, help=ID_COLUMN_HELP, flag="--id")


def keep_columns() -> Any:
    """``--keep-columns``: columns of the input declared public, copied through."""
    return option(None, help=KEEP_COLUMNS_HELP)
