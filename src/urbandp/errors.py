"""The error tree: every failure the command line shows as one line on stderr, with one exit code per kind.

===================================  =====  ============================================================
class                                exit   meaning
===================================  =====  ============================================================
:class:`InvalidParameterError`       2      an option is unusable (out of range, meaningless, contradictory)
:class:`InputDataError`              2      an input is unusable (missing file or column, no valid row)
:class:`InputError` (their parent)   2      either of the above: unusable input (DESIGN.md)
:class:`BudgetExceededError`         4      the release would pass a privacy cap (store or ``--budget-*``)
internal error (any other exception) 70     a bug in urbandp: one line, ``URBANDP_DEBUG=1`` for the traceback
===================================  =====  ============================================================

Exit 3 is not an error: ``urbandp release --strict`` ends with 3 when the release is useless (all noise).
"""

from __future__ import annotations

import errno
import functools
import math
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

EXIT_UNUSABLE_INPUT = 2
EXIT_BUDGET_EXCEEDED = 4
EXIT_INTERNAL = 70  # EX_SOFTWARE (sysexits.h)
DEBUG_ENV = "URBANDP_DEBUG"


class UrbandpError(Exception):
    """Root of the error tree; ``exit_code`` is what the command line exits with."""

    exit_code = EXIT_INTERNAL


class InputError(UrbandpError):
    """Unusable input: missing file, missing required column, empty input, bad config or bad option.

    Raised by library code; the CLI prints ``urbandp: error: <message>`` and exits with code 2.
    """

    exit_code = EXIT_UNUSABLE_INPUT


class InvalidParameterError(InputError):
    """An option or configuration value is unusable (out of range, meaningless, contradictory)."""


class InputDataError(InputError):
    """An input file is unusable (missing, unreadable, missing a column, no valid row)."""


class BudgetExceededError(InputError):
    """A release asked for more privacy budget than is left (DESIGN.md privacy rule 5); exit code 4."""

    exit_code = EXIT_BUDGET_EXCEEDED


def os_error_line(err: OSError) -> str:
    """One line for a failed file operation: what failed and on which path (no traceback, no errno tuple)."""
    if is_disk_full(err):
        return disk_full_line(err)
    what = err.strerror or one_line(str(err)) or type(err).__name__
    paths = [str(p) for p in (err.filename, err.filename2) if p is not None]
    return f"{what}: {' -> '.join(paths)}" if paths else what


OUTPUT_PARAMETERS = frozenset({"out", "report", "png"})
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
    """Parameter name -> the flag a user types (``p`` -> ``--keep-probability``), from the Typer declarations."""
    import inspect
    import typing

    flags: dict[str, str] = {}
    for name, param in inspect.signature(fn, eval_str=True).parameters.items():
        infos = [param.default, *getattr(param.annotation, "__metadata__", ())]
        for info in infos:
            decls = list(getattr(info, "param_decls", None) or ())
            default = getattr(info, "default", None)
            if typing.get_origin(param.annotation) is typing.Annotated and isinstance(default, str):
                decls.insert(0, default)  # Annotated style: Option("--flag") stores the flag as its default
            long = [d for d in decls if isinstance(d, str) and d.startswith("--")]
            if long:
                flags[name] = long[0]
                break
        flags.setdefault(name, "--" + name.replace("_", "-"))
    return flags


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


def calibration_error_line(err: Exception) -> str | None:
    """One line for OpenDP refusing to calibrate or account (an overflow, a scale it cannot reach), else None.

    Every OpenDP constructor and map call in urbandp is driven by the user's privacy parameters (epsilon, delta,
    the bounds, the window length), so a refusal there means those parameters are out of range, not a bug.
    """
    if type(err).__name__ != "OpenDPException" or not type(err).__module__.startswith("opendp"):
        return None
    variant = getattr(err, "variant", "") or "error"
    message = re.sub(
        r"\d{12,}(\.\d+)?", "<huge>", one_line(str(getattr(err, "message", "") or "")) or variant
    )
    return (
        f"OpenDP cannot calibrate noise for these privacy parameters ({variant}: {message}); check epsilon, "
        "delta, the bounds and the length of the window"
    )


def is_disk_full(err: BaseException) -> bool:
    """A write that failed for lack of room (ENOSPC, also as Polars' or Arrow's "os error 28" text)."""
    text = str(err)
    return (
        (isinstance(err, OSError) and err.errno == errno.ENOSPC)
        or "No space left" in text
        or "os error 28" in text
    )


def disk_full_line(err: OSError, where: object = None) -> str:
    """One line for a write that failed for lack of room, naming the path (``where`` when the error has none)."""
    where = next((str(p) for p in (err.filename, err.filename2) if p is not None), where)
    return f"no space left on device{f' writing {where}' if where else ''}; free some space and run again"


def cli_guard(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap a Typer command so that unusable input ends the process with one line and exit code 2.

    Besides :class:`InputError`, two classes of failure are the user's input rather than a bug and get the same
    treatment in every command: a path that cannot be read or written (``--out`` naming an existing file or a
    path under one, a read-only or missing directory, a FIFO refused by the reader, a full disk: any
    :class:`OSError`), and input bytes that are not UTF-8 text (:class:`UnicodeDecodeError`).

    It also sets the run's output policy (:func:`urbandp.reports.outputs.output_policy`): every path argument
    that is not an output (:data:`OUTPUT_PARAMETERS`) is protected from being overwritten, and the command's
    ``overwrite`` argument (``--overwrite``), where it has one, allows replacing an earlier urbandp output.
    """

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        import typer

        from urbandp.reports.outputs import check_output_target, check_report_dir, output_policy

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
            print(f"urbandp: error: {one_line(str(err))}", file=sys.stderr)
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


def one_line(text: str) -> str:
    """``text`` with its line breaks folded, so every error is exactly one line."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())
