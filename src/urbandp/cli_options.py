"""Command-line options shared by every wing, declared once (typed ``Annotated`` aliases)."""

from __future__ import annotations

from typing import Annotated

import typer

Overwrite = Annotated[
    bool,
    typer.Option(
        "--overwrite",
        help="Replace an earlier urbandp output at --out. Only a folder urbandp wrote (its marker and nothing "
        "else in it) is ever replaced; any other existing folder is refused.",
    ),
]
"""``--overwrite``: read by :func:`urbandp.errors.cli_guard` into the run's output policy."""
