"""Command-line options shared by every wing, declared once (typed ``Annotated`` aliases)."""

from __future__ import annotations

from typing import Annotated

import typer

from urbandp._release_options import BUDGET_STORE_HELP, DATASET_HELP

Overwrite = Annotated[
    bool,
    typer.Option(
        "--overwrite",
        help="Replace an earlier urbandp output at --out. Only a folder urbandp wrote (its marker and nothing "
        "else in it) is ever replaced; any other existing folder is refused.",
    ),
]
"""``--overwrite``: read by :func:`urbandp._cli_support.cli_guard` into the run's output policy."""

Dataset = Annotated[
    str | None,
    typer.Option("--dataset", help=DATASET_HELP),
]
"""``--dataset``: the budget-store dataset a release is charged to (:class:`urbandp._privacy.session.ReleaseCharge`)."""

BudgetStoreUrl = Annotated[
    str | None,
    typer.Option("--budget-store", help=BUDGET_STORE_HELP),
]
"""``--budget-store``: where the budget lives (SQLite file or PostgreSQL URL)."""

AllowMeaninglessEpsilon = Annotated[
    bool,
    typer.Option(
        "--allow-meaningless-epsilon",
        help="Run a release whose loss per unit is above epsilon 100 (or rho 50); it is then labelled NOT "
        "differentially private and cannot be charged to a budget.",
    ),
]
"""``--allow-meaningless-epsilon``: see :func:`urbandp._privacy.loss.meaningless_reasons`."""
