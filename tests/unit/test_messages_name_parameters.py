"""Library messages (errors, warnings, advice, privacy.json texts) name parameters; only the CLI names flags.

The library writes ``suppress_below=3`` and lists the parameter (``Advice.parameters``, ``InputError.parameters``);
each wing's command shows it through the one renaming (``_cli_support.cli_text``) as ``--suppress-below 3``.
"""

from __future__ import annotations

import ast
import json
import pickle
import re
import sys
import warnings
from pathlib import Path

import pytest

from urbandp._privacy.guards import refuse_not_dp
from urbandp.counts._threshold_advice import advice_line
from urbandp.errors import Advice, InvalidParameterError, flag_of, name_parameters
from urbandp.results import ReleaseWarning

SRC = Path(__file__).resolve().parents[2] / "src" / "urbandp"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+")

ALLOWED: dict[str, set[str]] = {
    # not a message: a shell command, a script's own argument
    "mpc/__init__.py": {"--no-deps"},  # the pip command that installs the extra
    "_option_types_gen.py": {"--check"},  # the generator's own argv
    "survey/_demo.py": {"*"},  # make demo: runs the commands as a user types them
    # the fleet's advice (guardrails, plan, forecast) and its release options, reworded by their own change:
    # drop each entry as it goes (test_every_allowance_is_still_needed says when)
    "fleet/_guardrails.py": {"--start", "--end", "--dates", "--max-hats-per-vehicle-day"},
    "fleet/_plan.py": {"--noise-scale"},
    "fleet/_plan_forecast.py": {
        "--domain-gtfs",
        "--epsilon-per-day",
        "--histogram-epsilon",
        "--max-hats-per-vehicle-day",
    },
    "fleet/_options.py": {"--delta"},
}


def _is_cli_module(path: Path) -> bool:
    """The command-line layer: cli.py, cli_*.py, *_command.py and __main__.py (docs/architecture.md), internal
    (``_cli.py``) or not."""
    name = path.name.lstrip("_") if path.name != "__main__.py" else path.name
    return (
        name == "cli.py" or name.startswith("cli_") or name.endswith("_command.py") or name == "__main__.py"
    )


def _not_messages(tree: ast.AST) -> set[int]:
    """ids of the string constants that are no message: docstrings (of modules, classes, functions and
    attributes), ``help=`` and ``flag=`` arguments (the command's own text), ``*_HELP`` constants."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))
        elif (isinstance(node, ast.keyword) and node.arg in ("help", "flag")) or (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id.endswith("_HELP") for t in node.targets)
        ):
            skip.update(id(n) for n in ast.walk(node.value))
    return skip


def _flags_in_messages(src: Path) -> dict[str, set[str]]:
    """file -> the flags its library messages write (CLI modules, docstrings and help texts aside)."""
    found: dict[str, set[str]] = {}
    for path in sorted(src.rglob("*.py")):
        if _is_cli_module(path):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _not_messages(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                flags = set(FLAG.findall(node.value))
                if flags:
                    found.setdefault(path.relative_to(src).as_posix(), set()).update(flags)
    return found


def _not_allowed(found: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{file} {flag}"
        for file, flags in found.items()
        for flag in flags
        if "*" not in ALLOWED.get(file, set()) and flag not in ALLOWED.get(file, set())
    )


def test_no_library_message_names_a_flag() -> None:
    """Errors, warnings, advice and privacy.json texts of the library name parameters (the CLI renames them)."""
    assert _not_allowed(_flags_in_messages(SRC)) == []


def test_every_allowance_is_still_needed() -> None:
    """An allowance whose file no longer writes the flag goes, so that the flag cannot come back there."""
    found = _flags_in_messages(SRC)
    stale = sorted(
        f"{file} {flag}"
        for file, flags in ALLOWED.items()
        for flag in flags
        if (flag == "*" and file not in found) or (flag != "*" and flag not in found.get(file, set()))
    )
    assert stale == []


def test_the_scan_finds_a_flag_in_a_warning_and_passes_docstrings_and_help(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lib.py").write_text(
        '"""Module doc: --speed-max is fine here."""\n'
        "X_HELP = 'Clip bound (--speed-max).'\n"
        "def f(x):\n"
        '    """Docstring: --speed-max."""\n'
        "    option(1, help='see --speed-max', flag='--speed-cap')\n"
        '    warnings.append(f"speeds above {x}; lower --speed-max")\n'
    )
    (tmp_path / "cli.py").write_text('print("--speed-max")\n')
    assert _not_allowed(_flags_in_messages(tmp_path)) == ["lib.py --speed-max"]
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    with pytest.raises(AssertionError):
        test_no_library_message_names_a_flag()


def test_an_advice_is_its_text_with_its_parameters() -> None:
    """Python sees the parameter as it passes it; JSON and pickle keep the text; the CLI renames it."""
    a = Advice(
        'suppress_below=42 keeps it below one; give speed_unit="m/s"',
        parameters=("suppress_below", "speed_unit"),
    )
    assert a == 'suppress_below=42 keeps it below one; give speed_unit="m/s"'
    assert json.loads(json.dumps({"w": a})) == {"w": str(a)}
    assert pickle.loads(pickle.dumps(a)).parameters == ("suppress_below", "speed_unit")
    assert a.naming(flag_of) == "--suppress-below 42 keeps it below one; give --speed-unit m/s"
    # a configuration key takes the value as TOML writes it
    assert a.naming(lambda p: f"{p} in c.toml [counts.release]") == (
        "suppress_below in c.toml [counts.release] = 42 keeps it below one; give speed_unit in c.toml "
        '[counts.release] = "m/s"'
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn(a, ReleaseWarning, stacklevel=1)
    assert caught[0].message.args[0].parameters == a.parameters  # type: ignore[union-attr]


def test_an_error_renames_a_value_given_in_python_spelling() -> None:
    err = InvalidParameterError(
        'method="histogram" is not DP; use epsilon=1', parameters=("method", "epsilon")
    )
    assert err.naming(flag_of) == "--method histogram is not DP; use --epsilon 1"
    assert name_parameters("no parameter here", (), flag_of) == "no parameter here"


def test_counts_advice_names_the_parameter() -> None:
    advised = {
        "recommended_suppress_below": 39,
        "target_expected_noise_only_cells": 1.0,
        "expected_noise_only_cells_at_most": 0.94,
        "cells": 28800,
        "noise_scale": 4.0,
    }
    text = advice_line(advised, "card-day")
    assert text == (
        "suppress_below=39 keeps the expected noise-only cells at most 1 (0.94 over 28,800 cells at noise scale 4, "
        "unit card-day)"
    )
    assert text.parameters == ("suppress_below",)


def test_a_not_dp_refusal_names_the_parameters_of_its_reasons() -> None:
    """A refusal quoting a NOT DP reason lists that reason's parameters too: the CLI renames them as well."""
    reason = Advice("the bounding box was taken from the readings (bbox_from_data_not_private)",
                    parameters="bbox_from_data_not_private")  # fmt: skip
    with pytest.raises(InvalidParameterError) as caught:
        refuse_not_dp("city", [reason])
    assert caught.value.parameters == ("dataset", "bbox_from_data_not_private")
    assert "(--bbox-from-data-not-private)" in caught.value.naming(flag_of)


def test_an_audit_finding_names_the_parameter() -> None:
    """The finding is JSON, printed as it is by ``urbandp audit zero-skipping``: it names the parameter."""
    import numpy as np

    from urbandp.audit._zero_skipping_attack import zero_skipping_attack

    res = zero_skipping_attack(np.array([20.0, 25.0, 30.0, 19.0]), threshold=18, method="unknown", scale=None)
    assert res["finding"] == (
        "zeros may be skipped; noise scale unknown (estimate it with the noise-scale attack, or give scale)"
    )
