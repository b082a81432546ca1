"""Library errors name the parameter; the command line names its flag, or the config file's key (issue 31)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from urbandp.cli import app
from urbandp.errors import InputDataError, InputError, InvalidParameterError, flag_of
from urbandp.sensing._options import InterpolateOptions

RUN = CliRunner()


def test_naming_renames_whole_words_only() -> None:
    err = InvalidParameterError(
        "give both start and end (start_date and --start are other words)", parameters=("start", "end")
    )
    assert err.naming(flag_of) == "give both --start and --end (start_date and --start are other words)"
    assert str(err) == "give both start and end (start_date and --start are other words)"


def test_naming_leaves_the_values_a_message_echoes() -> None:
    """A path or URL segment, a file name and a quoted value are the user's text, not the parameter."""
    err = InputError(
        "out /data/out/x and out.csv: give out, got 'out'; start/end, start/out/x, https://h/tiles/{z}.png",
        parameters=("out", "start", "end", "tiles"),
    )
    assert err.naming(flag_of) == (
        "--out /data/out/x and out.csv: give --out, got 'out'; --start/--end, start/out/x, https://h/tiles/{z}.png"
    )


def test_naming_without_parameters_is_the_message() -> None:
    assert InputError("input not found: a.csv").naming(lambda p: "X") == "input not found: a.csv"


def test_renamed_keeps_the_class_and_the_other_parameters() -> None:
    err = InputDataError("a and b are both wrong", parameters=("a", "b"))
    err.extra = 7  # type: ignore[attr-defined]
    new = err.renamed(lambda p: "a in c.toml [t]" if p == "a" else None)
    assert type(new) is InputDataError and new.exit_code == err.exit_code
    assert str(new) == "a in c.toml [t] and b are both wrong"
    assert new.parameters == ("b",) and new.extra == 7  # type: ignore[attr-defined]


def test_library_message_names_the_parameter() -> None:
    with pytest.raises(
        InvalidParameterError, match=r"^cell_metres must be a finite number > 0, got -1$"
    ) as caught:
        InterpolateOptions(input_path=Path("r.csv"), out=Path("o"), cell_metres=-1)
    assert caught.value.parameters == ("cell_metres",)


@pytest.fixture(scope="module")
def readings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("naming") / "readings.csv"
    assert RUN.invoke(app, ["sensing", "synth", str(path), "--readings", "200"]).exit_code == 0
    return path


def test_cli_names_the_flag(readings: Path, tmp_path: Path) -> None:
    res = RUN.invoke(
        app, ["sensing", "dp-map", str(readings), "--out", str(tmp_path / "o"), "--cell-metres", "-5"]
    )
    assert res.exit_code == 2
    assert res.stderr.strip() == "urbandp: error: --cell-metres must be a finite number > 0, got -5.0"


def test_cli_names_the_config_key_for_a_value_from_the_file(readings: Path, tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[sensing.dp-map]\ncell_metres = -5\n")
    base = ["sensing", "dp-map", str(readings), "--out", str(tmp_path / "o"), "--config", str(config)]
    res = RUN.invoke(app, base)
    assert res.exit_code == 2
    assert (
        res.stderr.strip()
        == f"urbandp: error: cell_metres in {config} [sensing.dp-map] must be a finite number > 0, got -5.0"
    )
    # a flag typed on the command line wins over the file, and the error names the flag
    res = RUN.invoke(app, [*base, "--cell-metres", "-3"])
    assert res.stderr.strip() == "urbandp: error: --cell-metres must be a finite number > 0, got -3.0"


SRC = Path(__file__).resolve().parents[2] / "src" / "urbandp"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+")


def _is_cli_module(path: Path) -> bool:
    """The command-line layer: cli.py, cli_*.py, *_command.py and __main__.py (docs/architecture.md), internal
    (``_cli.py``) or not."""
    name = path.name.lstrip("_") if path.name != "__main__.py" else path.name
    return (
        name == "cli.py" or name.startswith("cli_") or name.endswith("_command.py") or name == "__main__.py"
    )


def _flag_naming_raises() -> list[str]:
    """``file:line flag`` for every raise in a library module whose message text names a CLI flag."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if _is_cli_module(path):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                texts = [
                    n.value
                    for n in ast.walk(node.exc)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)
                ]
                flags = [f for text in texts for f in FLAG.findall(text)]
                if flags:
                    found.append(f"{path.relative_to(SRC)}:{node.lineno} {' '.join(flags)}")
    return found


def test_no_library_error_names_a_flag() -> None:
    """The library names parameters; only the CLI knows flags (it renames them, above)."""
    assert _flag_naming_raises() == []


def test_the_scan_finds_a_flag_in_a_library_raise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lib.py").write_text('def f(x):\n    raise ValueError(f"--speed-max must be > 0, got {x}")\n')
    (tmp_path / "cli.py").write_text('raise SystemExit("--speed-max")\n')
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    assert _flag_naming_raises() == ["lib.py:2 --speed-max"]
