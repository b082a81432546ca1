"""A release's options declared once, on the fields of its frozen spec.

Each option of a release is a field of its spec (:class:`urbandp.counts.spec.CountsReleaseSpec`,
:class:`urbandp.survey.rr_release.RandomizeSpec`, ...) made with :func:`option`: the field states the option's
name (the Python keyword; the flag is ``--`` and the name with dashes unless the field says otherwise), its type,
its default, its bounds or choices and its help. The spec's ``__post_init__`` calls :func:`check_options` first
(the declared bounds, checked in one place whichever way a value came) and then holds the checks between
options. From the fields:

- :func:`urbandp.cli_spec.spec_parameters` builds the command's Typer options, so ``--help`` shows the field's
  default and its help, and the ``--config`` table takes the flags' keys (:mod:`urbandp.cli_config`);
- the Python API (``ud.counts.release``, ``ud.survey.randomize``, ...) keeps the same keywords with the same
  defaults, written out for type checkers and editors; a common test holds each API
  function and each command to its spec's fields (names, defaults, flags, help), as scikit-learn's common tests
  hold estimators to their ``_parameter_constraints``.

The fleet's release declares its options the same way in one table (:data:`urbandp.fleet.options.RELEASE_OPTIONS`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from urbandp.errors import InvalidParameterError

OPTION_KEY = "urbandp.option"
"""The key of a field's ``metadata`` that holds its :class:`OptionInfo`."""

REQUIRED_OPTION: Any = dataclasses.MISSING
"""The default of a :class:`DeclaredOption` that has none (the option must be given)."""


class _AsField:
    def __repr__(self) -> str:
        return "<the field's default>"


AS_FIELD: Any = _AsField()
"""The ``cli_default`` of an option that the command line takes with the field's own default."""


@dataclass(frozen=True)
class Bounds:
    """The numbers an option admits: finite, and above / at least / at most / below the limits given."""

    above: float | None = None
    at_least: float | None = None
    at_most: float | None = None
    below: float | None = None

    def admits(self, value: int | float) -> bool:
        """Whether ``value`` is finite and within the limits (an int is compared exactly, however large)."""
        return (
            (isinstance(value, int) or math.isfinite(value))
            and (self.above is None or value > self.above)
            and (self.at_least is None or value >= self.at_least)
            and (self.at_most is None or value <= self.at_most)
            and (self.below is None or value < self.below)
        )

    def describe(self, integer: bool) -> str:
        """``a finite number > 0``, ``an integer >= 1``, ``an integer >= 0 and <= 15``."""
        limits = [
            f"{sign} {limit:g}"
            for sign, limit in (
                (">", self.above),
                (">=", self.at_least),
                ("<=", self.at_most),
                ("<", self.below),
            )
            if limit is not None
        ]
        return " ".join(["an integer" if integer else "a finite number", " and ".join(limits)]).rstrip()


@dataclass(frozen=True)
class OptionInfo:
    """What a spec field adds to its name, type and default: the help; the values it admits (``bounds`` for a
    number, ``choices`` for a word; None admits any); and the flag and command-line type where they are not the
    name's (``id_column`` is ``--id``; a domain given as an object is a file on the command line)."""

    help: str
    flag: str | None = None
    cli_type: Any = None
    bounds: Bounds | None = None
    choices: tuple[str, ...] | None = None
    cli_default: Any = AS_FIELD
    negatable: bool = False
    why: str | None = None


def option(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    flag: str | None = None,
    cli_type: Any = None,
    bounds: Bounds | None = None,
    choices: Sequence[str] | None = None,
    cli_default: Any = AS_FIELD,
    negatable: bool = False,
    why: str | None = None,
) -> Any:
    """A spec field that is an option of its release (no ``default``: the option is required).

    ``cli_default``: the default as the command line takes it, where ``cli_type`` is text the command parses
    (``"0.5,1,10"`` for the tuple ``(0.5, 1.0, 10.0)``); ``negatable``: a switch that also takes ``--no-<flag>``;
    ``why``: the reason for the bounds, said when a value is refused."""
    chosen = None if choices is None else tuple(choices)
    info = OptionInfo(help, flag, cli_type, bounds, chosen, cli_default, negatable, why)
    metadata = {OPTION_KEY: info}
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
    bounds: Bounds | None
    choices: tuple[str, ...] | None
    cli_default: Any
    negatable: bool
    why: str | None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED_OPTION

    @property
    def command_line_default(self) -> Any:
        """The default as the command line takes it (the field's, unless the field declares its text)."""
        return self.default if self.cli_default is AS_FIELD else self.cli_default

    @property
    def integer(self) -> bool:
        return int in typing.get_args(self.type) or self.type is int

    def check(self, value: object) -> object:
        """``value`` as the spec keeps it, or refused in one line naming the option when its bounds or choices do
        not admit it. A number comes back as a Python ``int`` or ``float`` (numpy's ``np.int64(4)`` is 4, and a
        whole float ``4.0`` for an integer option is 4); None is the spec's to judge where the field's type admits
        it, and refused where it does not."""
        if value is None:
            if self.admits_none or (self.bounds is None and self.choices is None):
                return value
            self._refuse(value)
        if self.choices is not None and value not in self.choices:
            self._refuse(value)
        if self.bounds is None:
            return value
        # numbers.Real / Integral: numpy's numbers too; True is a switch, not the number 1
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            self._refuse(value)
        number: int | float
        if isinstance(value, numbers.Integral):
            number = int(value)
        elif self.integer and float(value).is_integer():
            number = int(float(value))
        elif self.integer:
            self._refuse(value)
        else:
            number = float(value)
        if not self.bounds.admits(number):
            self._refuse(value)
        return number if self.integer else float(number)

    @property
    def admits_none(self) -> bool:
        return self.type is type(None) or type(None) in typing.get_args(self.type)

    def _refuse(self, value: object) -> typing.NoReturn:
        if self.choices is not None:
            rule = "one of " + ", ".join(self.choices)
        else:
            assert self.bounds is not None
            rule = self.bounds.describe(self.integer) + (f" ({self.why})" if self.why else "")
        raise InvalidParameterError(f"{self.name} must be {rule}, got {value!r}", parameters=self.name)


@functools.cache
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
                bounds=info.bounds,
                choices=info.choices,
                cli_default=info.cli_default,
                negatable=info.negatable,
                why=info.why,
            )
        )
    return tuple(found)


def option_defaults(spec: type) -> dict[str, Any]:
    """Option name -> its default, for the options that have one."""
    return {o.name: o.default for o in declared_options(spec) if not o.required}


def check_options(spec: object) -> None:
    """Refuse, in field order, the first option of ``spec`` (a frozen dataclass instance, from its
    ``__post_init__``) whose declared bounds or choices do not admit its value: the one place those are checked,
    whichever way the value came. An admitted number is kept as a Python ``int`` or ``float``, so that nothing
    below the spec meets numpy's ``float32`` arithmetic or an ``np.int64`` that is not an ``int``."""
    kind: type = type(spec)
    for declared in declared_options(kind):
        value = getattr(spec, declared.name)
        kept = declared.check(value)
        if kept is not value:
            object.__setattr__(spec, declared.name, kept)
