"""``--config FILE.toml`` for the release commands of the counts, survey and sensing wings (docs/counts.md, "Options
from a file"; the fleet's ``urbandp release`` reads its ``[release]``, ``[input]`` and ``[columns]`` tables through
the same reader, :func:`urbandp.fleet._options_input.read_config`).

An eager ``--config`` callback reads the command's table (:data:`urbandp._config_tables.CONFIG_TABLES`) and hands it
to Click's ``default_map`` (Typer's own copy of Click) as the defaults of the command's options, so a value from the
file is converted and checked by exactly the code that checks the flag, and a flag typed on the command line wins.
Each command reads only its own table and refuses a file without it, so a file written for one command is never
half-applied to another. :data:`COMMAND_LINE_ONLY` stays on the command line. A bad table, key or value is one line
naming the file and the key, exit 2 (:class:`ConfigError`). privacy.json does not record the file: the release's
``spec_sha256`` is that of the resolved options, equal to the flag-driven release's.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import typer
from typer import _click
from typer.core import TyperOption

from urbandp._arguments import did_you_mean, runtime_types
from urbandp._config_tables import CONFIG_TABLES, check_tables, file_value, read_document, table_of
from urbandp.errors import EXIT_UNUSABLE_INPUT, InputDataError, InvalidParameterError, flag_of

CONFIG_NAMES = "urbandp.config_names"
"""``ctx.meta`` key: parameter name -> how an error names a value read from the file (``epsilon in cfg.toml
[counts.release]``); :func:`urbandp._cli_support.cli_guard` uses it when the value did come from the file."""

COMMAND_LINE_ONLY = frozenset({"config", "out", "overwrite", "allow_meaningless_epsilon", "dry_run", "help"})
"""Options a config file cannot set: the output target and the switches that authorise or change the run."""

CONFIG_HELP = "TOML file whose [{table}] table sets this command's options by flag name, e.g. epsilon = 1; flags typed here win (default: none)."


class ConfigError(_click.exceptions.ClickException):
    """An unusable ``--config`` file: one ``urbandp: error:`` line, exit 2 (printed by :func:`urbandp.cli.main`)."""

    exit_code = EXIT_UNUSABLE_INPUT


def toml_key(param: _click.core.Parameter) -> str | None:
    """The key of an option in its command's table: its long flag without dashes, ``-`` as ``_``; None for an
    argument or an option left to the command line."""
    if not isinstance(param, TyperOption) or param.name in COMMAND_LINE_ONLY:
        return None
    long = [o for o in param.opts if o.startswith("--")]
    return long[0][2:].replace("-", "_") if long else None


def config_keys(command: _click.core.Command) -> dict[str, TyperOption]:
    """Every key a command's table may hold -> the option it sets."""
    return {key: p for p in command.params if isinstance(p, TyperOption) and (key := toml_key(p)) is not None}


def config_option(table: str) -> Any:
    """The ``--config`` option of the command whose table is ``table`` (one of :data:`CONFIG_TABLES`), for an
    ``Annotated[Path | None, config_option(table)] = None`` field (:mod:`urbandp._cli_spec`)."""
    if table not in CONFIG_TABLES:
        raise ValueError(f"{table} is not in CONFIG_TABLES")

    def load(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
        if value is None or ctx.resilient_parsing:
            return value
        path = Path(value)
        ctx.default_map = {**(ctx.default_map or {}), **read_config(path, table, ctx)}
        return path

    return typer.Option(
        "--config",
        is_eager=True,
        callback=load,
        help=CONFIG_HELP.format(table=table),
        show_default=False,
    )


def check_value(key: str, value: object, param: TyperOption, ctx: _click.Context, where: str) -> object:
    """``value`` for ``param`` if it has the option's TOML type (:func:`urbandp._config_tables.file_value`, the
    rule of the Python API's ``config=`` too; each item of a list for a repeatable option) and Typer's coercion
    takes it (the coercion a typed flag goes through); else a :class:`ConfigError` naming ``where`` (the file and
    table) and the key.

    The TOML type is checked first because the coercion is lenient for text typed on a command line: it would
    read ``window_minutes = "60"`` as 60 and ``consistent = "yes"`` as true."""
    annotation = param.type_descriptor.annotation
    allowed = runtime_types(typing.get_args(annotation)[0] if param.multiple else annotation)
    try:
        if param.multiple and isinstance(value, list):
            value = [file_value(key, item, allowed, where, flag_of(key)) for item in value]
        else:
            value = file_value(key, value, allowed, where, flag_of(key))
    except InvalidParameterError as err:
        raise ConfigError(str(err)) from None
    try:
        param.get_runtime_param().coerce(value, param=param, ctx=ctx)
    except _click.exceptions.BadParameter as err:
        raise ConfigError(f"--config {where}: {key} = {value!r}: {err.format_message()}") from None
    return value


def read_config(path: Path, table: str, ctx: _click.Context) -> dict[str, object]:
    """The ``default_map`` of the command run in ``ctx`` from ``[table]`` of ``path``: parameter name -> value. A
    missing, unreadable or malformed file, a key outside a table, an unknown table, a file without ``[table]``,
    an unknown key or a bad value is a :class:`ConfigError`."""
    try:
        data = read_document(path)
        check_tables(data, CONFIG_TABLES, path, table)
        section = table_of(data, table, path)
    except InputDataError as err:  # the library's reader, its message naming the flag
        raise ConfigError(err.naming(flag_of)) from None
    keys = config_keys(ctx.command)
    where = f"{path} [{table}]"
    found: dict[str, object] = {}
    for key, value in section.items():
        param = keys.get(key.replace("-", "_"))
        if param is None or param.name is None:
            flag = flag_of(key)
            if any(flag in p.opts for p in ctx.command.params):
                raise ConfigError(f"--config {where}: {key} is set on the command line only ({flag})")
            raise ConfigError(f"--config {where}: unknown key '{key}'" + did_you_mean(key, sorted(keys)))
        found[param.name] = check_value(key, value, param, ctx, where)
        ctx.meta.setdefault(CONFIG_NAMES, {})[param.name] = f"{key} in {where}"
    return found
