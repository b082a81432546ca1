"""What the ``urbandp survey`` commands share: the Typer app, the parameters of a release command that are not
options of its spec (:func:`head`, :func:`tail`: the input, ``--out``, ``--config``, the budget store's options,
``--overwrite``), and :func:`run_release`, which calls a release of :mod:`urbandp.survey._api` and prints its
warnings and its summary (parse -> library -> print; the guards, the charge and the writing are the library's).

A release's own options are declared once, on the fields of its spec (:mod:`urbandp._release_options`), and become
the command's flags through :func:`urbandp._cli_spec.spec_parameters`."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import typer

from urbandp._cli_config import config_option
from urbandp._cli_options import Overwrite
from urbandp._cli_spec import command_signature, keyword, spec_parameters
from urbandp._cli_support import cli_text
from urbandp._release_options import declared_options

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)

DATASET_HELP = "Charge this dataset in the budget store, see urbandp budget; needs --survey-date (default: no store is charged)."
STORE_HELP = "Budget store path or postgresql:// URL (default $URBANDP_BUDGET_STORE)."
SURVEY_DATE_HELP = (
    "Day the answers were collected (YYYY-MM-DD): the store books this release's charge on it (a survey has no "
    "per-day structure; its dataset's --epsilon-total composes all its releases). Default: none; required with --dataset."
)


PUBLIC_OPTIONS = ("id_column", "keep_columns")
"""The spec options that name columns copied through (``--id``, ``--keep-columns``): listed after ``--out`` and
the store's options in ``--help``, as they always were."""


def argument(help: str) -> list[inspect.Parameter]:
    """The release command's input (a CSV or Parquet file)."""
    return [
        inspect.Parameter(
            "input",
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=typer.Argument(..., help=help),
            annotation=Path,
        )
    ]


def outputs(out_help: str, table: str) -> list[inspect.Parameter]:
    """``--out``, ``--config`` (the ``[table]`` of its file), and where and on which day the release is charged
    (``--dataset``, ``--budget-store``, ``--survey-date``): the release command's parameters that are not options
    of its spec, but ``--overwrite``."""
    return [
        keyword("out", Path, typer.Option(..., "--out", help=out_help)),
        keyword("config", Path | None, config_option(table)),
        keyword("dataset", str | None, typer.Option(None, "--dataset", help=DATASET_HELP)),
        keyword("budget_store", str | None, typer.Option(None, "--budget-store", help=STORE_HELP)),
        keyword("survey_date", str | None, typer.Option(None, "--survey-date", help=SURVEY_DATE_HELP)),
    ]


def public_options(spec: type) -> list[str]:
    """The options of ``spec`` among :data:`PUBLIC_OPTIONS`, in that order."""
    names = {o.name for o in declared_options(spec)}
    return [n for n in PUBLIC_OPTIONS if n in names]


def overwrite() -> list[inspect.Parameter]:
    """``--overwrite``, the last parameter of every release command."""
    return [keyword("overwrite", Overwrite, False)]


def release_signature(spec: type, input_help: str, out_help: str, table: str) -> Callable[[Any], Any]:
    """The Typer signature of a survey release command: its input, the options of ``spec`` (those naming public
    columns after ``--out`` and the store's options, as ``--help`` always listed them), ``--overwrite``."""
    return command_signature(
        argument(input_help),
        spec_parameters(spec, leave_out=PUBLIC_OPTIONS),
        outputs(out_help, table),
        spec_parameters(spec, only=public_options(spec)),
        overwrite(),
    )


def run_spec_release(release: Callable[..., Any], spec: type, options: Mapping[str, Any]) -> None:
    """:func:`run_release` of a command taking ``**options``: its input, ``--out``, the store's options,
    ``--overwrite`` and every option of ``spec`` (by the field's name, the keyword of ``release``)."""
    run_release(
        release,
        options["input"],
        options["out"],
        options["dataset"],
        options["budget_store"],
        survey_date=options["survey_date"],
        overwrite=options["overwrite"],
        **{o.name: options[o.name] for o in declared_options(spec)},
    )


def run_release(
    release: Callable[..., Any],
    data: Path,
    out: Path,
    dataset: str | None,
    budget_store: str | None,
    **options: Any,
) -> None:
    """Run ``release`` (a function of :mod:`urbandp.survey._api`) on ``data`` charged to ``dataset``; print its
    warnings as ``urbandp: warning:`` lines on stderr and, once its charge is committed, its summary."""
    from urbandp._session import Session
    from urbandp.results import OwnerWarning, ReleaseWarning
    from urbandp.survey._io import command_line

    session = Session(store=budget_store, dataset=dataset)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rel = release(data, session=session, out=out, command_line=command_line(), **options)
    for item in caught:
        if issubclass(item.category, (ReleaseWarning, OwnerWarning)):
            typer.echo(f"urbandp: warning: {cli_text(item.message)}", err=True)
        else:
            warnings.showwarning(item.message, item.category, item.filename, item.lineno)
    typer.echo(f"{rel.summary} -> {out}")
