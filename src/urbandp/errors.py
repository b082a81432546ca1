"""The error tree: every failure the command line shows as one line on stderr, with one exit code per kind.

===================================  =====  ============================================================
class                                exit   meaning
===================================  =====  ============================================================
:class:`InvalidParameterError`       2      an option is unusable (out of range, meaningless, contradictory)
:class:`InputDataError`              2      an input is unusable (missing file or column, no valid row)
:class:`InputError` (their parent)   2      either of the above: unusable input (docs/design.md)
:class:`BudgetExceededError`         4      the release would pass a privacy cap (store or ``--budget-*``)
internal error (any other exception) 70     a bug in urbandp: one line, ``URBANDP_DEBUG=1`` for the traceback
===================================  =====  ============================================================

Exit 3 is not an error: ``urbandp release --strict`` ends with 3 when the release is useless (all noise).

Library messages name a parameter as Python calls it (``epsilon_per_day must be > 0``) and list it in the
error's ``parameters``; whoever shows the message renames them with :meth:`InputError.naming`: the command line
to its flags (``--epsilon-per-day must be > 0``), a TOML file to its key (``epsilon_per_day in cfg.toml
[counts.release] must be > 0``). One message, written once, in the library. Warnings and advice do the same
as an :class:`Advice` (a ``str`` with ``parameters``); privacy.json, read from Python and from the command line
alike, names parameters only.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Callable, Iterable

EXIT_UNUSABLE_INPUT = 2
EXIT_BUDGET_EXCEEDED = 4
EXIT_INTERNAL = 70  # EX_SOFTWARE (sysexits.h)
DEBUG_ENV = "URBANDP_DEBUG"


class UrbandpError(Exception):
    """Root of the error tree; ``exit_code`` is what the command line exits with."""

    exit_code = EXIT_INTERNAL


class _NamesParameters:
    """A library text that names parameters (:attr:`parameters`, by their Python names), renamed for another
    reader by :meth:`naming`."""

    parameters: tuple[str, ...]

    def _name(self, parameters: str | Iterable[str]) -> None:
        self.parameters = (parameters,) if isinstance(parameters, str) else tuple(parameters)

    def naming(self, name_of: Callable[[str], str]) -> str:
        """The text with each of its :attr:`parameters`, as a whole word, replaced by ``name_of(parameter)``
        (``start`` -> ``--start``); see :func:`name_parameters`."""
        return name_parameters(str(self), self.parameters, name_of)


class InputError(_NamesParameters, UrbandpError):
    """Unusable input: missing file, missing required column, empty input, bad config or bad option.

    Raised by library code; the CLI prints ``urbandp: error: <message>`` and exits with code 2. ``parameters``
    are the parameters the message names, by their Python names (``start``, ``speed_max``): the words that
    :meth:`naming` renames for another reader.
    """

    exit_code = EXIT_UNUSABLE_INPUT

    def __init__(self, message: str = "", *, parameters: str | Iterable[str] = ()) -> None:
        super().__init__(message)
        self._name(parameters)

    def renamed(self, name_of: Callable[[str], str | None]) -> InputError:
        """The same error (same class) with the parameters for which ``name_of`` gives a name renamed in its
        message and dropped from :attr:`parameters`; the others stay for the next reader to rename."""
        new = {p: name_of(p) for p in self.parameters}
        text = self.naming(lambda p: new[p] or p)
        copy = type(self).__new__(type(self))
        InputError.__init__(copy, text, parameters=[p for p in self.parameters if new[p] is None])
        copy.__dict__.update({k: v for k, v in self.__dict__.items() if k != "parameters"})
        return copy


QUOTE = '"'


def name_parameters(text: str, parameters: Iterable[str], name_of: Callable[[str], str]) -> str:
    """``text`` with each of ``parameters``, as a whole word, replaced by ``name_of(parameter)`` (``start`` ->
    ``--start``): the one renaming of every library message, error or :class:`Advice`, for another reader.

    Never inside another word or a value the text echoes: ``start_date``, ``--start``, a path or URL segment
    (``/out/``, ``out.csv``) and a quoted value (``got 'start'``) stay. A parameter given a value as Python
    spells it (``suppress_below=3``, ``speed_unit="m/s"``) becomes the flag and the value as a shell takes them
    (``--suppress-below 3``, ``--speed-unit m/s``), or as a TOML file does for its key (``speed_unit in c.toml
    [input] = "m/s"``).
    """
    names = sorted(set(parameters), key=len, reverse=True)
    if not names:
        return text
    one = "(?:" + "|".join(map(re.escape, names)) + ")"
    # a parameter, or several joined by "/" (start/end), standing alone: not in a path, a file name or a word;
    # optionally with a value in Python's spelling (name=3, name="m/s")
    word = re.compile(rf'(?<![\w\-/.])({one}(?:/{one})*)(?![\w\-/]|\.\w)(?:=("[^"\n]*"|[^\s,;)"]+))?')

    def rename(match: re.Match[str]) -> str:
        renamed = "/".join(name_of(name) for name in match.group(1).split("/"))
        value = match.group(2)
        if value is None:
            return renamed
        if renamed.startswith("-"):  # a flag: its value as a shell takes it
            return f"{renamed} {value.strip(QUOTE)}"
        return f"{renamed} = {value}"

    # a single-quoted value is copied as it is; the text around it is renamed
    parts = re.split(r"('[^'\n]*')", text)
    return "".join(part if i % 2 else word.sub(rename, part) for i, part in enumerate(parts))


class Advice(_NamesParameters, str):
    """A library text that names parameters: a warning, an advice, a finding (``raise suppress_below=3``).

    It is the text itself (a ``str``: printed, compared, written to JSON as it is, so a Python caller reads the
    parameter as it passes it) and lists the parameters it names in :attr:`parameters`, as
    :class:`InputError` does, so that whoever shows it renames them: the command line to its flags
    (``--suppress-below 3``) with :meth:`naming`.
    """

    def __new__(cls, text: str, *, parameters: str | Iterable[str] = ()) -> Advice:
        self = super().__new__(cls, text)
        self._name(parameters)
        return self


class InvalidParameterError(InputError):
    """An option or configuration value is unusable (out of range, meaningless, contradictory)."""


class InputDataError(InputError):
    """An input file is unusable (missing, unreadable, missing a column, no valid row)."""


class BudgetExceededError(InputError):
    """A release asked for more privacy budget than is left (docs/design.md privacy rule 5); exit code 4."""

    exit_code = EXIT_BUDGET_EXCEEDED


def flag_of(parameter: str) -> str:
    """The command-line flag of a parameter by the project's one rule: ``speed_max`` -> ``--speed-max``."""
    return "--" + parameter.replace("_", "-")


def os_error_line(err: OSError) -> str:
    """One line for a failed file operation: what failed and on which path (no traceback, no errno tuple)."""
    if is_disk_full(err):
        return disk_full_line(err)
    what = err.strerror or one_line(str(err)) or type(err).__name__
    paths = [str(p) for p in (err.filename, err.filename2) if p is not None]
    return f"{what}: {' -> '.join(paths)}" if paths else what


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


def one_line(text: str) -> str:
    """``text`` with its line breaks folded, so every error is exactly one line."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())
