"""What the ``urbandp survey`` commands share: the Typer app, the budget options' help, and :func:`run_release`,
which calls a release of :mod:`urbandp.survey.api` and prints its warnings and its summary (parse -> library ->
print; the guards, the charge and the writing are the library's)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)

SAMPLER_HELP = (
    "Random source: 'opendp' (OpenDP bit-vector RR, default) or 'os' (OS CSPRNG, integer-exact, faster)."
)
DATASET_HELP = "Charge this dataset in the budget store, see urbandp budget; needs --survey-date (default: no store is charged)."
STORE_HELP = "Budget store path or postgresql:// URL (default $URBANDP_BUDGET_STORE)."
SURVEY_DATE_HELP = (
    "Day the answers were collected (YYYY-MM-DD): the store books this release's charge on it (a survey has no "
    "per-day structure; its dataset's --epsilon-total composes all its releases). Default: none; required with --dataset."
)


def run_release(
    release: Callable[..., Any],
    data: Path,
    out: Path,
    dataset: str | None,
    budget_store: str | None,
    **options: Any,
) -> None:
    """Run ``release`` (a function of :mod:`urbandp.survey.api`) on ``data`` charged to ``dataset``; print its
    warnings as ``urbandp: warning:`` lines on stderr and, once its charge is committed, its summary."""
    from urbandp.results import OwnerWarning, ReleaseWarning
    from urbandp.session import Session
    from urbandp.survey.io import command_line

    session = Session(store=budget_store, dataset=dataset)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rel = release(data, session=session, out=out, command_line=command_line(), **options)
    for item in caught:
        if issubclass(item.category, (ReleaseWarning, OwnerWarning)):
            typer.echo(f"urbandp: warning: {item.message}", err=True)
        else:
            warnings.showwarning(item.message, item.category, item.filename, item.lineno)
    typer.echo(f"{rel.summary} -> {out}")
