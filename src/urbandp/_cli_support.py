"""How every command runs: one guard that turns unusable input into one line and an exit code (the CLI's side of
:mod:`urbandp.errors`), checks the run's paths and numbers first, and sets the run's output policy.

The library never imports this module: a Python caller gets the exceptions themselves (:mod:`urbandp.errors`).
"""

from __future__ import annotations

import functools
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from urbandp._outputs import check_output_target, check_report_dir, output_policy
from urbandp.errors import (
    DEBUG_ENV,
    EXIT_INTERNAL,
    EXIT_UNUSABLE_INPUT,
    InputError,
    calibration_error_line,
    flag_of,
    name_parameters,
    one_line,
    os_error_line,
)

P = ParamSpec("P")
R = TypeVar("R")

OUTPUT_PARAMETERS = frozenset({"out", "report", "png", "gtfs_out"})
"""Command parameters that name what a run writes; every other path argument is one of its inputs."""


def _each(value: object) -> list[object]:
    """An argument's values: the items of a repeatable option, else the one value."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _input_paths(kwargs: dict[str, object]) -> list[tuple[str, Path]]:
    """(parameter, path) for every path a command reads (inputs, config, domain, a SQLite store): never overwritten."""
    found: list[tuple[str, Path]] = []
    for name, value in kwargs.items():
        if name in OUTPUT_PARAMETERS:
            continue
        found.extend((name, v) for v in _each(value) if isinstance(v, Path))
        if name == "budget_store" and isinstance(value, str) and "://" not in value:
            found.append((name, Path(value)))  # a SQLite store file (a postgresql:// URL is not a path)
    return found


@functools.cache
def option_flags(fn: Callable[..., object]) -> dict[str, str]:
    """Parameter name -> the flag a user types (``p`` -> ``--keep-probability``), from the command Typer makes of
    ``fn``."""
    import typer

    app = typer.Typer(add_completion=False)
    app.command()(fn)
    return _command_flags(typer.main.get_command(app))


def _cli_names(fn: Callable[..., object] | None = None) -> Callable[[str], str]:
    """How the command line calls a library parameter: its flag (``speed_max`` -> ``--speed-max``), or the file
    key when the command took the value from its ``--config`` file (``speed_max in cfg.toml [counts.release]``).

    A library parameter is found by the command's parameter name or by its flag (the CLI's ``p`` is the
    library's ``keep_probability``, the flag ``--keep-probability``). The flags are those of ``fn``, or of the
    command running now when ``fn`` is None."""
    from typer._click.core import ParameterSource
    from typer._click.globals import get_current_context

    from urbandp._cli_config import CONFIG_NAMES

    ctx = get_current_context(silent=True)
    flags = option_flags(fn) if fn is not None else _command_flags(getattr(ctx, "command", None))
    command_param = {flag[2:].replace("-", "_"): name for name, flag in flags.items()} | {n: n for n in flags}
    from_file: dict[str, str] = ctx.meta.get(CONFIG_NAMES, {}) if ctx is not None else {}

    def name_of(parameter: str) -> str:
        name = command_param.get(parameter)
        if (
            ctx is not None
            and name in from_file
            and ctx.get_parameter_source(name) is ParameterSource.DEFAULT_MAP
        ):
            return from_file[name]
        return flags[name] if name else flag_of(parameter)

    return name_of


def _command_flags(command: object) -> dict[str, str]:
    """Parameter name -> flag of a Click command's parameters (none without a command): the long one, else (an
    argument) by the one rule."""
    params = [p for p in getattr(command, "params", ()) if p.name]
    return {p.name: next((d for d in p.opts if d.startswith("--")), flag_of(p.name)) for p in params}


def cli_text(text: object) -> str:
    """A library text as the command line shows it: the parameters an :class:`~urbandp.errors.Advice` (or an
    error) names, renamed to the running command's flags, or to its ``--config`` file's keys. The one renaming
    of every wing's ``urbandp: warning:`` lines (a Python caller reads the same text with the parameters).

    ``text`` may be the Python warning that carries it (``warnings.warn(advice, ReleaseWarning)``)."""
    if isinstance(text, Warning) and text.args:
        text = text.args[0]
    parameters = getattr(text, "parameters", ())
    return name_parameters(str(text), parameters, _cli_names()) if parameters else str(text)


def quietly(release: Callable[..., R], *args: Any, **keywords: Any) -> R:
    """``release(*args, **keywords)`` with its release and owner warnings left to the command, which prints them
    as its own ``urbandp: warning:`` lines once the charge is committed."""
    import warnings

    from urbandp.results import OwnerWarning, ReleaseWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)
        warnings.simplefilter("ignore", OwnerWarning)
        return release(*args, **keywords)


def check_finite_numbers(kwargs: dict[str, object], flags: dict[str, str]) -> None:
    """Refuse NaN or an infinity in any numeric option of any command (no urbandp option means either).

    Typer parses ``nan``, ``inf`` and ``1e999`` as floats; a command would then compute with them (noise of scale
    nan, an endless sampler, an OpenDP overflow). One rule, here, for every wing.
    """
    for name, value in kwargs.items():
        for v in _each(value):
            if isinstance(v, float) and not math.isfinite(v):
                raise InputError(f"{flags.get(name, name)} must be a finite number, got {v}")


def check_input_paths(paths: list[tuple[str, Path]], flags: dict[str, str]) -> None:
    """Every path a command reads must exist, even one the run would not use (``--gtfs`` with ``--no-map``), and a
    budget store (created when missing) must not be a folder: a typo is said at once, not ignored."""
    for name, path in paths:
        if name == "budget_store":
            if path.is_dir():
                raise InputError(f"--budget-store {path} is a folder; give the path of a SQLite file")
        elif not path.exists():
            raise InputError(f"{flags.get(name, name)} {path}: not found")


def cli_guard(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap a Typer command so that unusable input ends the process with one line and exit code 2.

    Besides :class:`InputError`, two classes of failure are the user's input rather than a bug and get the same
    treatment in every command: a path that cannot be read or written (``--out`` naming an existing file or a
    path under one, a read-only or missing directory, a FIFO refused by the reader, a full disk: any
    :class:`OSError`), and input bytes that are not UTF-8 text (:class:`UnicodeDecodeError`).

    It also sets the run's output policy (:func:`urbandp._outputs.output_policy`): every path argument
    that is not an output (:data:`OUTPUT_PARAMETERS`) is protected from being overwritten, and the command's
    ``overwrite`` argument (``--overwrite``), where it has one, allows replacing an earlier urbandp output.
    """

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        import typer

        try:
            flags = option_flags(fn)
            check_finite_numbers(kwargs, flags)
            inputs = _input_paths(kwargs)
            check_input_paths(inputs, flags)
            with output_policy([p for _, p in inputs], overwrite=bool(kwargs.get("overwrite", False))):
                for name in sorted(OUTPUT_PARAMETERS & kwargs.keys()):
                    target = kwargs[name]
                    if isinstance(target, Path):  # before any work: no input is ever overwritten
                        check = check_report_dir if name == "report" else check_output_target
                        check(target, flags.get(name, "--" + name))
                return fn(*args, **kwargs)
        except InputError as err:
            print(f"urbandp: error: {one_line(err.naming(_cli_names(fn)))}", file=sys.stderr)
            raise typer.Exit(err.exit_code) from None
        except UnicodeDecodeError as err:
            print(
                f"urbandp: error: input is not UTF-8 text ({err.reason} at byte {err.start})", file=sys.stderr
            )
            raise typer.Exit(EXIT_UNUSABLE_INPUT) from None
        except OSError as err:
            print(f"urbandp: error: {os_error_line(err)}", file=sys.stderr)
            raise typer.Exit(EXIT_UNUSABLE_INPUT) from None
        except (typer.Exit, typer.Abort):  # a command's own exit status (--strict: 3), not an error
            raise
        except Exception as err:
            line = calibration_error_line(err)
            if line is None:
                if os.environ.get(DEBUG_ENV):
                    raise
                print(
                    f"urbandp: internal error (a bug in urbandp, please report it): {type(err).__name__}: "
                    f"{one_line(str(err))}; set {DEBUG_ENV}=1 for the traceback",
                    file=sys.stderr,
                )
                raise typer.Exit(EXIT_INTERNAL) from None
            print(f"urbandp: error: {line}", file=sys.stderr)
            raise typer.Exit(EXIT_UNUSABLE_INPUT) from None

    return wrapper
