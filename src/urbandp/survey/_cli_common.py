"""What the ``urbandp survey`` commands share: the Typer app and the arguments of a release command
(:class:`SurveyArguments`: the input, the options of its spec, ``--out``, ``--config``, the budget store's options,
``--overwrite``), whose :meth:`SurveyArguments.run` calls a release of :mod:`urbandp.survey._api` and prints its
warnings and its summary (parse -> library -> print; the guards, the charge and the writing are the library's).

A release's own options are declared once, on the fields of its spec (:mod:`urbandp._release_options`), and become
the command's flags through :class:`urbandp._cli_spec.OptionsOf`."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from urbandp._cli_config import config_option
from urbandp._cli_options import Overwrite
from urbandp._cli_spec import OptionsOf
from urbandp._cli_support import cli_text
from urbandp._release_options import declared_options

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)

DATASET_HELP = "Charge this dataset in the budget store, see urbandp budget; needs --survey-date (default: no store is charged)."
STORE_HELP = "Budget store path or postgresql:// URL (default $URBANDP_BUDGET_STORE)."
SURVEY_DATE_HELP = (
    "Day the answers were collected (YYYY-MM-DD): the store books this release's charge on it (a survey has no "
    "per-day structure; its dataset's --epsilon-total composes all its releases). Default: none; required with --dataset."
)


Separator = Annotated[str, typer.Option("--separator", help="CSV field separator.")]
"""``--separator`` of the commands that read a CSV file without a spec (``estimate``, ``od-estimate``, ``escape``)."""

PUBLIC_OPTIONS = ("id_column", "keep_columns")
"""The spec options that name columns copied through (``--id``, ``--keep-columns``): listed after ``--out`` and
the store's options in ``--help``, as they always were."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class SurveyArguments:
    """A survey release command's arguments, in ``--help`` order: :func:`release_arguments` declares the input,
    the spec's options (those naming public columns in ``public``), ``--out`` and ``--config`` of each command."""

    input: Path
    options: dict[str, Any]
    out: Path
    config: Path | None = None  # read by its callback into the options' defaults
    dataset: Annotated[str | None, typer.Option("--dataset", help=DATASET_HELP)] = None
    budget_store: Annotated[str | None, typer.Option("--budget-store", help=STORE_HELP)] = None
    survey_date: Annotated[str | None, typer.Option("--survey-date", help=SURVEY_DATE_HELP)] = None
    public: dict[str, Any]
    overwrite: Overwrite = False

    def run(self, release: Callable[..., Any]) -> None:
        """Run ``release`` (a function of :mod:`urbandp.survey._api`) charged to ``dataset``; print its warnings
        as ``urbandp: warning:`` lines on stderr and, once its charge is committed, its summary."""
        from urbandp._session import Session
        from urbandp.results import OwnerWarning, ReleaseWarning
        from urbandp.survey._io import command_line

        session = Session(store=self.budget_store, dataset=self.dataset)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rel = release(
                self.input,
                session=session,
                out=self.out,
                command_line=command_line(),
                survey_date=self.survey_date,
                overwrite=self.overwrite,
                **self.options,
                **self.public,
            )
        for item in caught:
            if issubclass(item.category, (ReleaseWarning, OwnerWarning)):
                typer.echo(f"urbandp: warning: {cli_text(item.message)}", err=True)
            else:
                warnings.showwarning(item.message, item.category, item.filename, item.lineno)
        typer.echo(f"{rel.summary} -> {self.out}")


def release_arguments(spec: type, input_help: str, out_help: str, table: str) -> type[SurveyArguments]:
    """The arguments of the release command of ``spec``: its input, its options, ``--out`` and the ``[table]``
    of a ``--config`` file, each with the command's help."""
    names = {o.name for o in declared_options(spec)}
    fields: list[Any] = [
        ("input", Annotated[Path, typer.Argument(help=input_help)]),
        ("options", Annotated[dict[str, Any], OptionsOf(spec, leave_out=PUBLIC_OPTIONS)]),
        ("out", Annotated[Path, typer.Option("--out", help=out_help)]),
        ("config", Annotated[Path | None, config_option(table)], None),
        (
            "public",
            Annotated[dict[str, Any], OptionsOf(spec, only=[n for n in PUBLIC_OPTIONS if n in names])],
        ),
    ]
    return dataclasses.make_dataclass(
        f"{spec.__name__}Arguments", fields, bases=(SurveyArguments,), frozen=True, kw_only=True
    )
