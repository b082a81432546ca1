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


def os_error_line(err: OSError) -> str:
    """One line for a failed file operation: what failed and on which path (no traceback, no errno tuple)."""
    what = err.strerror or type(err).__name__
    paths = [str(p) for p in (err.filename, err.filename2) if p is not None]
    return f"{what}: {' -> '.join(paths)}" if paths else what


def cli_guard(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap a Typer command so that unusable input ends the process with one line and exit code 2.

    Besides :class:`InputError`, two classes of failure are the user's input rather than a bug and get the same
    treatment in every command: a path that cannot be read or written (``--out`` naming an existing file or a
    path under one, a read-only or missing directory, a FIFO refused by the reader: any :class:`OSError`), and
    input bytes that are not UTF-8 text (:class:`UnicodeDecodeError`).
    """

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        import typer

        try:
            return fn(*args, **kwargs)
        except InputError as err:
            print(f"urbandp: error: {err}", file=sys.stderr)
            raise typer.Exit(EXIT_UNUSABLE_INPUT) from None
        except UnicodeDecodeError as err:
            print(
                f"urbandp: error: input is not UTF-8 text ({err.reason} at byte {err.start})", file=sys.stderr
            )
            raise typer.Exit(EXIT_UNUSABLE_INPUT) from None
        except OSError as err:
            print(f"urbandp: error: {os_error_line(err)}", file=sys.stderr)
            raise typer.Exit(EXIT_UNUSABLE_INPUT) from None

    return wrapper
