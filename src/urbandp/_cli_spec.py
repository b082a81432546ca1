"""Typed commands: a command takes one object, its arguments, whose fields are its Typer parameters.

A command's arguments are a frozen, keyword-only dataclass; each field is either

- a Typer parameter written as Typer reads it, ``out: Annotated[Path, typer.Option("--out", help="...")]`` (its
  default after ``=``), or
- the options of a release, declared once on the fields of its model (:mod:`urbandp._release_options`):
  ``spec: Annotated[CountsReleaseSpec, OptionsOf()]`` is the model's flags (the field's flag, help and default,
  shown by ``--help``), and the command gets the model built from them; a field typed ``dict[str, Any]``,
  ``Annotated[dict[str, Any], OptionsOf(DpMapOptions)]``, gets the options as given, for a library function
  that takes them as keywords and checks them itself.

:func:`typed_command` builds the signature Typer reads from the fields, in field order (the one place a command's
``__signature__`` is written), and calls the command with the object, which mypy checks.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

import typer
from pydantic import BaseModel

from urbandp._cli_support import cli_guard
from urbandp._release_options import DeclaredOption, declared_options

A = TypeVar("A")
R = TypeVar("R")


@dataclasses.dataclass(frozen=True)
class OptionsOf:
    """Marks a field of a command's arguments as options declared on a model (or a list of declared options):
    ``leave_out`` or ``only`` pick some (``only`` also orders them); ``parse`` turns the text a flag takes into
    the model's value (``{"utility_epsilons": parse_utility_epsilons}``) before the model is built. Without
    ``source`` the options are those of the field's own type."""

    source: type[BaseModel] | Sequence[DeclaredOption] | None = None
    leave_out: Collection[str] = ()
    only: Sequence[str] | None = None
    parse: Mapping[str, Callable[[Any], Any]] = dataclasses.field(default_factory=dict)

    def declared(self, field_type: Any) -> list[DeclaredOption]:
        source = self.source if self.source is not None else field_type
        found = declared_options(source) if isinstance(source, type) else tuple(source)
        options = {o.name: o for o in found}
        names = list(self.only) if self.only is not None else [n for n in options if n not in self.leave_out]
        return [options[name] for name in names]


def option_parameters(options: Sequence[DeclaredOption]) -> list[inspect.Parameter]:
    """The Typer parameters of declared options, in the order given (options of several models)."""
    params = []
    for declared in options:
        default = ... if declared.required else declared.command_line_default
        flag = f"{declared.flag}/--no-{declared.flag[2:]}" if declared.negatable else declared.flag
        params.append(
            inspect.Parameter(
                declared.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=typer.Option(default, flag, help=declared.help),
                annotation=declared.cli_type,
            )
        )
    return params


@dataclasses.dataclass(frozen=True)
class _Group:
    """A field holding options: their names, and how the field's value is made from theirs."""

    field: str
    names: tuple[str, ...]
    model: type[BaseModel] | None
    parse: Mapping[str, Callable[[Any], Any]]

    def value(self, given: Mapping[str, Any]) -> Any:
        values = {n: self.parse[n](given[n]) if n in self.parse else given[n] for n in self.names}
        return self.model(**values) if self.model is not None else values


def _fields(arguments: type) -> tuple[list[inspect.Parameter], list[_Group]]:
    """The Typer parameters of a command's arguments, in field order, and the fields that hold options."""
    hints = typing.get_type_hints(arguments, include_extras=True)
    params: list[inspect.Parameter] = []
    groups: list[_Group] = []
    for field in dataclasses.fields(arguments):
        hint = hints[field.name]
        marks = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, OptionsOf)]
        if not marks:
            default = inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default
            params.append(
                inspect.Parameter(
                    field.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint
                )
            )
            continue
        field_type = typing.get_args(hint)[0]
        declared = marks[0].declared(field_type)
        params += option_parameters(declared)
        model = field_type if isinstance(field_type, type) and issubclass(field_type, BaseModel) else None
        groups.append(_Group(field.name, tuple(o.name for o in declared), model, marks[0].parse))
    return params, groups


def typed_command(arguments: type[A]) -> Callable[[Callable[[A], R]], Callable[..., R]]:
    """Make ``fn(args: arguments)`` a Typer command: Typer reads the parameters of ``arguments``' fields, and
    ``fn`` is called with one ``arguments`` object built from them (its name and docstring are the command's)."""
    params, groups = _fields(arguments)
    grouped = {name for group in groups for name in group.names}

    def decorate(fn: Callable[[A], R]) -> Callable[..., R]:
        def run(**given: Any) -> R:
            values = {name: value for name, value in given.items() if name not in grouped}
            values.update({group.field: group.value(given) for group in groups})
            return fn(arguments(**values))

        functools.update_wrapper(run, fn, ("__module__", "__name__", "__qualname__", "__doc__"), ())
        typer_reads: Any = run  # Typer reads these parameters (inspect.signature stops at __signature__)
        typer_reads.__signature__ = inspect.Signature(params)
        typer_reads.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return decorate


def command(
    app: typer.Typer, arguments: type[A], name: str | None = None
) -> Callable[[Callable[[A], R]], Callable[..., R]]:
    """Register ``fn(args: arguments)`` on ``app`` as the command ``name`` (default: the function's), a
    :func:`typed_command` behind the error guard (:func:`urbandp._cli_support.cli_guard`)."""

    def register(fn: Callable[[A], R]) -> Callable[..., R]:
        guarded = cli_guard(typed_command(arguments)(fn))
        app.command(name)(guarded)
        return guarded

    return register
