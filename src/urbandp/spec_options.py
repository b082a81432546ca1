"""A release's options declared once, on the fields of its frozen spec (issue 31).

Each option of a release is a field of its spec (:class:`urbandp.counts.spec.CountsReleaseSpec`,
:class:`urbandp.survey.rr_release.RandomizeSpec`, ...) made with :func:`option`: the field states the option's
name (the Python keyword; the flag is ``--`` and the name with dashes unless the field says otherwise), its type,
its default and its help. The spec's ``__post_init__`` holds its bounds and the checks between options, so a value
is refused in one place whichever way it came. From the fields:

- :func:`urbandp.cli_spec.spec_parameters` builds the command's Typer options, so ``--help`` shows the field's
  default and its help, and the ``--config`` table takes the flags' keys (:mod:`urbandp.cli_config`);
- the Python API (``ud.counts.release``, ``ud.survey.randomize``, ...) keeps the same keywords with the same
  defaults, written out for type checkers and editors; ``tests/unit/test_spec_options.py`` holds each API
  function and each command to its spec's fields (names, defaults, flags, help), as scikit-learn's common tests
  hold estimators to their ``_parameter_constraints``.

The fleet's release declares its options the same way in one table (:data:`urbandp.fleet.options.RELEASE_OPTIONS`).
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any

OPTION_KEY = "urbandp.option"
"""The key of a field's ``metadata`` that holds its :class:`OptionInfo`."""

REQUIRED_OPTION: Any = dataclasses.MISSING
"""The default of a :class:`DeclaredOption` that has none (the option must be given)."""


@dataclass(frozen=True)
class OptionInfo:
    """What a spec field adds to its name, type and default: the help, and the flag and command-line type where
    they are not the name's (``id_column`` is ``--id``; a domain given as an object is a file on the command line)."""

    help: str
    flag: str | None = None
    cli_type: Any = None


def option(
    default: Any = dataclasses.MISSING, *, help: str, flag: str | None = None, cli_type: Any = None
) -> Any:
    """A spec field that is an option of its release (no ``default``: the option is required)."""
    metadata = {OPTION_KEY: OptionInfo(help, flag, cli_type)}
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclass(frozen=True)
class DeclaredOption:
    """One option of a release as its spec declares it."""

    name: str
    type: Any
    default: Any
    help: str
    flag: str
    cli_type: Any

    @property
    def required(self) -> bool:
        return self.default is REQUIRED_OPTION


def declared_options(spec: type) -> tuple[DeclaredOption, ...]:
    """The options of ``spec`` (a dataclass), in field order; fields that are not options are left out."""
    hints = typing.get_type_hints(spec)
    found = []
    for f in dataclasses.fields(spec):
        info = f.metadata.get(OPTION_KEY)
        if not isinstance(info, OptionInfo):
            continue
        found.append(
            DeclaredOption(
                name=f.name,
                type=hints[f.name],
                default=f.default,
                help=info.help,
                flag=info.flag or "--" + f.name.replace("_", "-"),
                cli_type=info.cli_type if info.cli_type is not None else hints[f.name],
            )
        )
    return tuple(found)


def option_defaults(spec: type) -> dict[str, Any]:
    """Option name -> its default, for the options that have one."""
    return {o.name: o.default for o in declared_options(spec) if not o.required}
