"""Typer options built from a release's spec: the command line declares no option of its own.

:func:`spec_parameters` turns the fields of a spec (:mod:`urbandp._release_options`) into Typer parameters: the flag,
the help and the default (shown by ``--help``) are the field's. :func:`command_signature` gives a command
function taking ``**options`` the signature Typer reads.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

import typer

from urbandp._release_options import DeclaredOption, declared_options

F = TypeVar("F", bound=Callable[..., Any])


def spec_parameters(
    spec: type, *, leave_out: Collection[str] = (), only: Sequence[str] | None = None
) -> list[inspect.Parameter]:
    """The Typer parameters of ``spec``'s options, in field order (or in the order of ``only``)."""
    options = {o.name: o for o in declared_options(spec)}
    names = list(only) if only is not None else [n for n in options if n not in leave_out]
    return option_parameters([options[name] for name in names])


def option_parameters(options: Sequence[DeclaredOption]) -> list[inspect.Parameter]:
    """The Typer parameters of declared options, in the order given (options of several models)."""
    params = []
    for declared in options:
        default = ... if declared.required else declared.command_line_default
        flag = declared.flag
        if declared.negatable:
            flag = f"{flag}/--no-{flag[2:]}"
        params.append(
            inspect.Parameter(
                declared.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=typer.Option(default, flag, help=declared.help),
                annotation=declared.cli_type,
            )
        )
    return params


def keyword(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    """A command parameter that is not a spec option (``--out``, ``--dataset``, ``--overwrite``, ...)."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def command_signature(*groups: Sequence[inspect.Parameter]) -> Callable[[F], F]:
    """Give the decorated command (``def cmd(**options)``) the parameters of ``groups``, in order, for Typer to
    read (set before :func:`urbandp._cli_support.cli_guard`, which copies it)."""
    params = [p for group in groups for p in group]

    def decorate(fn: F) -> F:
        fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        fn.__annotations__ = {p.name: p.annotation for p in params}
        return fn

    return decorate
