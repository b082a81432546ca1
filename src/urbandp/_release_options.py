"""A release's options declared once, as the fields of one pydantic model.

Each release has one model (:class:`urbandp.counts._options.CountsReleaseSpec`,
:class:`urbandp.survey._rr_release.RandomizeSpec`, :class:`urbandp.sensing._options.DpMapOptions`, ...), a
:class:`ReleaseOptions`. Each option is one field made with :func:`option`: its name (the Python keyword; the flag
is ``--`` and the name with dashes unless the field says otherwise), its type, its default, its bounds (pydantic's
``gt``/``ge``/``lt``/``le``) or choices, its help (the field's ``description``) and what the command line needs
besides (flag, command-line type, ``--no-`` form), in one place. From the fields:

- :class:`urbandp._cli_spec.OptionsOf` makes them the command's Typer options, so ``--help`` shows the field's
  default and its help, and ``--config`` reads the flags' keys (:mod:`urbandp._cli_config`);
- :func:`takes_options` gives the Python API function (``ud.counts.release``, ``ud.survey.randomize``, ...) that
  takes ``**options`` the signature ``help()`` shows, and :mod:`urbandp._option_types` (generated from the fields
  by :mod:`urbandp._option_types_gen`) types those ``**options`` for type checkers and editors;
- the docs' option tables are read from the commands (``docs/gen_from_code.py``).

Validation is pydantic's, with the types held strictly for Python callers (scikit-learn's parameter validation,
Tumult's frozen specs): a switch takes ``True`` or ``False`` only, a number is never text, every number is finite
(an ``int`` too large for a float is refused, not an ``OverflowError``), a whole float is taken for an integer and
numpy's numbers for Python's; a list is taken where a tuple is declared, and a ``datetime.date`` where ISO text is.
A refusal is one :class:`~urbandp.errors.InvalidParameterError` naming the option; the model's
``model_post_init`` then holds the checks between options.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticUndefined

from urbandp._arguments import check_keywords, check_number, check_switch, did_you_mean, runtime_types, shown
from urbandp.errors import InvalidParameterError, flag_of


class _AsField:
    def __repr__(self) -> str:
        return "<the field's default>"


AS_FIELD: Any = _AsField()
"""The ``cli_default`` of an option that the command line takes with the field's own default."""

DATASET_HELP = "Charge this dataset in the budget store, see urbandp budget (default: no store is charged)."
BUDGET_STORE_HELP = (
    "Budget store path or postgresql:// URL (default: $URBANDP_BUDGET_STORE, else ./urbandp-budget.sqlite)."
)
"""The help of the budget session's options, ``--dataset`` and ``--budget-store``, of every release command."""

_LIMITS: tuple[tuple[type, str, str], ...] = (
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Le, "le", "<="),
    (annotated_types.Lt, "lt", "<"),
)


@dataclasses.dataclass(frozen=True)
class CommandLine:
    """What a field adds for the command line and for refusals (kept in the field's metadata, which pydantic
    leaves alone): the flag and type where they are not the name's (``id_column`` is ``--id``; a box given as a
    tuple is text there), its default as text it parses, a ``--no-`` form, the choices and the bounds' reason."""

    flag: str | None = None
    cli_type: Any = None
    choices: tuple[str, ...] | None = None
    cli_default: Any = AS_FIELD
    negatable: bool = False
    why: str | None = None
    table: str | None = None


def option(
    default: Any = PydanticUndefined,
    *,
    help: str,
    flag: str | None = None,
    cli_type: Any = None,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
    choices: Sequence[str] | None = None,
    cli_default: Any = AS_FIELD,
    negatable: bool = False,
    why: str | None = None,
    table: str | None = None,
) -> Any:
    """A field that is an option of its release (no ``default``: the option is required).

    ``help`` may say the field's default as ``{default}`` (a float as ``%g``, a tuple comma-separated;
    ``{default[0]}`` is its first item), so the help never restates it. ``cli_default``: the default as the
    command line takes it, where ``cli_type`` is text the command parses (``"0.5,1,10"`` for the tuple
    ``(0.5, 1.0, 10.0)``), or None where a flag left out must let a config file's value through; ``negatable``: a
    switch that also takes ``--no-<flag>``; ``why``: the reason for the bounds, said when a value is refused;
    ``table``: the TOML table of a ``--config`` file that sets it, where the release's file has tables."""
    field: Any = Field(default, description=help, gt=gt, ge=ge, lt=lt, le=le)
    chosen = None if choices is None else tuple(choices)
    field.metadata.append(CommandLine(flag, cli_type, chosen, cli_default, negatable, why, table))
    return field


def _help(description: str | None, default: Any) -> str:
    """The field's help with its default said where it writes ``{default}`` (:func:`option`)."""
    text = description or ""
    if "{default" not in text:
        return text
    shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
    return text.replace("{default}", f"{shown:g}" if isinstance(shown, float) else str(shown)).format(
        default=default
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class DeclaredOption(CommandLine):
    """One option of a release as its model declares it: the field's name, type, default, help and bounds, and
    what it adds for the command line, its flag and command-line type filled in."""

    name: str
    type: Any
    default: Any
    help: str
    flag: str
    cli_type: Any
    limits: tuple[tuple[str, float], ...]

    @property
    def required(self) -> bool:
        return self.default is PydanticUndefined

    @property
    def command_line_default(self) -> Any:
        """The default as the command line takes it (the field's, unless the field declares its text)."""
        return self.default if self.cli_default is AS_FIELD else self.cli_default

    @property
    def kinds(self) -> tuple[Any, ...]:
        """The runtime types the field's annotation allows (``float | None`` -> ``(float, NoneType)``, a
        ``Literal`` of words as ``str``: ``int | Literal["observed"]`` -> ``(int, str)``)."""
        return tuple(str if kind is typing.Literal else kind for kind in runtime_types(self.type))

    @property
    def integer(self) -> bool:
        return int in self.kinds

    @property
    def number(self) -> bool:
        return int in self.kinds or float in self.kinds

    @property
    def switch(self) -> bool:
        return bool in self.kinds

    def rule(self) -> str | None:
        """What the option admits, said as a refusal says it (``a finite number > 0``, ``one of a, b``,
        ``True or False``); None for an option whose values are judged elsewhere (a column name, a file)."""
        if self.choices is not None:
            return "one of " + ", ".join(self.choices)
        if self.switch:
            return "True or False"
        if not self.number:
            return None
        limits = " and ".join(f"{sign} {limit:g}" for sign, limit in self.limits)
        return " ".join(["an integer" if self.integer else "a finite number", limits]).rstrip()

    def refusal(self, value: object) -> InvalidParameterError:
        rule = self.rule()
        if rule is None:
            return InvalidParameterError(
                f"{self.name}: {value!r} is not a value it takes", parameters=self.name
            )
        why = f" ({self.why})" if self.why and self.limits else ""
        return InvalidParameterError(
            f"{self.name} must be {rule}{why}, got {shown(value)}", parameters=self.name
        )

    def normalised(self, value: object) -> object:
        """``value`` as the model keeps it, or its refusal: numbers as Python ``int``/``float`` (numpy's too; a
        whole float for an integer), a switch a real bool, a date as ISO text where text is declared, a choice
        one of the declared words. Bounds are pydantic's."""
        if value is None:
            if type(None) in self.kinds or self.rule() is None:
                return value
            raise self.refusal(value)
        try:
            if self.switch and not self.number:
                return check_switch(value, self.name)
            if self.number and not (isinstance(value, str) and str in self.kinds):  # m_ub: word or integer
                return check_number(value, self.name, integer=self.integer)
        except InvalidParameterError:
            raise self.refusal(value) from None
        if self.choices is not None and value not in self.choices:
            raise self.refusal(value)
        if isinstance(value, (dt.date, dt.time)) and str in self.kinds and dt.date not in self.kinds:
            return value.isoformat()
        return value


class ReleaseOptions(BaseModel):
    """The options of one release: a frozen pydantic model whose fields made with :func:`option` are the
    options; other fields (the input path, where the loss is booked) are the run's. Construction checks each
    option's type, bounds and choices and refuses the first bad one in one line naming it; ``model_post_init``
    (a subclass's) holds the checks between options."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    def __init__(self, **values: Any) -> None:
        declared = {o.name: o for o in declared_options(type(self))}
        kept = {n: declared[n].normalised(v) if n in declared else v for n, v in values.items()}
        try:
            super().__init__(**kept)
        except ValidationError as err:
            first = err.errors()[0]
            name = str(first["loc"][0]) if first["loc"] else ""
            if first["type"] == "extra_forbidden":
                hint = did_you_mean(name, list(type(self).model_fields), "{}")
                refusal = InvalidParameterError(f"{name} is not an option{hint}", parameters=name)
            elif first["type"] == "missing":
                refusal = InvalidParameterError(f"{name} is required: give it", parameters=name)
            elif name in declared:
                refusal = declared[name].refusal(values.get(name, first["input"]))  # the value as given
            else:
                refusal = InvalidParameterError(
                    f"{name}: {first['msg'].lower()}, got {first['input']!r}", parameters=name
                )
            raise refusal from None


def given_kinds(hint: Any) -> tuple[Any, ...]:
    """The members of a union other than None (``int | None`` -> ``(int,)``), or the hint itself."""
    members = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    return tuple(k for k in members if k is not type(None))


def _words(hint: Any) -> tuple[str, ...] | None:
    """The choices a ``Literal`` annotation declares (``Literal["a", "b"] | None`` -> ``("a", "b")``), None for
    any other annotation."""
    members = given_kinds(hint)
    if not members or not all(typing.get_origin(m) is typing.Literal for m in members):
        return None
    return tuple(word for m in members for word in typing.get_args(m))


@functools.cache
def declared_options(model: type[BaseModel]) -> tuple[DeclaredOption, ...]:
    """The options of ``model``, in field order; fields that are not options are left out."""
    found = []
    for name, field in model.model_fields.items():
        info = next((m for m in field.metadata if isinstance(m, CommandLine)), None)
        if info is None:
            continue
        limits = tuple(
            (sign, getattr(m, a)) for kind, a, sign in _LIMITS for m in field.metadata if isinstance(m, kind)
        )
        cli_type = info.cli_type if info.cli_type is not None else field.annotation
        choices = info.choices if info.choices is not None else _words(field.annotation)
        found.append(
            DeclaredOption(
                **{
                    **vars(info),
                    "flag": info.flag or flag_of(name),
                    "cli_type": cli_type,
                    "choices": choices,
                },
                name=name,
                type=field.annotation,
                default=field.default,
                help=_help(field.description, field.default),
                limits=limits,
            )
        )
    return tuple(found)


F = TypeVar("F", bound=Callable[..., Any])


def takes_options(model: type[ReleaseOptions], only: Sequence[str] | None = None) -> Callable[[F], F]:
    """Give an API function that takes ``**options`` every option of ``model`` (or the ones named in ``only``) as
    a keyword, with the field's default, in the signature ``help()``, editors and
    :func:`urbandp._config_tables.takes_config` read (a required option of a function that takes ``config``
    defaults to :data:`urbandp._config_tables.REQUIRED`: given by keyword or from a config file). A keyword that
    is neither the function's own nor an option is refused in one line naming it."""
    from urbandp._config_tables import REQUIRED

    declared = tuple(o for o in declared_options(model) if only is None or o.name in only)

    def decorate(fn: F) -> F:
        own = inspect.signature(fn).parameters
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in own.values()):
            raise TypeError(f"{fn.__name__} must take **options")
        missing = REQUIRED if "config" in own else inspect.Parameter.empty  # without a file: a plain keyword
        options = [(o.name, missing if o.required else o.default, o.type) for o in declared]

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            _check_run_keywords(kwargs)
            return fn(*args, **kwargs)

        call.__signature__ = with_keywords(fn, options)  # type: ignore[attr-defined]
        return typing.cast(F, check_keywords(call))  # refuses a keyword the spelled-out signature lacks

    return decorate


def with_keywords(fn: Callable[..., Any], options: Sequence[tuple[str, Any, Any]]) -> inspect.Signature:
    """``fn``'s signature with its ``**options`` spelled out: ``options`` (name, default, type) as keyword-only
    parameters after its positional ones and before its own keywords."""
    signature = inspect.signature(fn)
    own = list(signature.parameters.values())
    positional = [p for p in own if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keywords = [p for p in own if p.kind is p.KEYWORD_ONLY]
    spelled = [
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=t) for n, d, t in options
    ]
    return inspect.Signature(
        [*positional, *spelled, *keywords], return_annotation=signature.return_annotation
    )


def _check_run_keywords(kwargs: dict[str, Any]) -> None:
    """The keywords every release function shares beside its options, checked before anything is read:
    ``overwrite`` a switch (``"no"`` is not False), ``session`` a :class:`urbandp.Session`."""
    from urbandp._session import check_session

    if "overwrite" in kwargs:
        kwargs["overwrite"] = check_switch(kwargs["overwrite"], "overwrite")
    check_session(kwargs.get("session"))
