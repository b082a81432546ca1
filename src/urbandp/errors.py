"""Errors that the command line turns into one clear line on stderr and exit code 2."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

EXIT_UNUSABLE_INPUT = 2


class InputError(Exception):
    """Unusable input: missing file, missing required column, empty input, bad config or bad option.

    Raised by library code; the CLI prints ``urbandp: error: <message>`` and exits with code 2.
    """


class BudgetExceededError(InputError):
    """A release asked for more privacy budget than the ledger has left (DESIGN.md privacy rule 5)."""


def cli_guard(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap a Typer command so that :class:`InputError` ends the process with one line and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        import typer

        try:
            return fn(*args, **kwargs)
        except InputError as err:
            print(f"urbandp: error: {err}", file=sys.stderr)
            raise typer.Exit(EXIT_UNUSABLE_INPUT) from None

    return wrapper
