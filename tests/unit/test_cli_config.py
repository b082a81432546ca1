"""``--config FILE.toml`` of every release command outside the fleet (issue 31), checked option by option as
scikit-learn checks its estimators: every option a table may set has a flag and help; a TOML key of its name
resolves to the value its flag gives (through Click's parsing: ``make_context``, no release is run); a flag
typed on the command line wins; an unknown key, and a value of the wrong TOML type, are refused in one line
naming the file and the key, exit 2."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer import _click
from typer.core import TyperOption

from urbandp._cli_config import COMMAND_LINE_ONLY, CONFIG_TABLES, config_keys
from urbandp.errors import flag_of


def _command(table: str) -> _click.core.Command:
    """The Click command of ``table`` (``survey.randomize`` -> ``urbandp survey randomize``)."""
    import importlib

    group, name = table.split(".", 1)
    app = importlib.import_module(f"urbandp.{group}._cli").app
    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined, no-any-return]


def _sample(param: TyperOption) -> Any:
    """A TOML value of the option's type that differs from its default."""
    annotation = param.type_descriptor.annotation
    if param.is_flag or annotation is bool:
        return not param.default
    if annotation is int:
        return 7
    if annotation is float:
        return 0.25
    if param.multiple:  # a repeatable flag (counts release --column): a TOML array
        return ["day=x1"]
    return "x1"


def _flag_args(param: TyperOption, value: Any) -> list[str]:
    flag = next(o for o in param.opts if o.startswith("--"))
    if param.is_flag:
        assert value is True
        return [flag]
    if isinstance(value, list):
        return [arg for item in value for arg in (flag, str(item))]
    return [flag, str(value)]


def _base_args(command: _click.core.Command, tmp: Path, leave_out: str | None = None) -> list[str]:
    """The arguments and required options a command needs to parse (``leave_out``: one the test gives)."""
    args: list[str] = []
    for param in command.params:
        if param.name == leave_out or not param.required:
            continue
        if isinstance(param, TyperOption):
            args += _flag_args(param, str(tmp / "o") if param.name == "out" else _sample(param))
        else:
            args.append(str(tmp / "input.csv"))
    return args


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def _write(tmp: Path, table: str, body: str) -> Path:
    path = tmp / "config.toml"
    path.write_text(f"[{table}]\n{body}")
    return path


CASES = [(table, key) for table in CONFIG_TABLES for key in config_keys(_command(table))]


def test_every_release_command_takes_config() -> None:
    for table in CONFIG_TABLES:
        command = _command(table)
        config = next(p for p in command.params if p.name == "config")
        assert config.opts == ["--config"] and f"[{table}]" in (config.help or "")  # type: ignore[attr-defined]
        assert len(config_keys(command)) >= 10, table
        left = {p.name for p in command.params if isinstance(p, TyperOption)} - {
            p.name for p in config_keys(command).values()
        }
        assert left <= COMMAND_LINE_ONLY, (table, left)  # every other option has a key


@pytest.mark.parametrize(("table", "key"), CASES)
def test_each_option_has_flag_help_and_a_key_that_resolves_as_its_flag(
    table: str, key: str, tmp_path: Path
) -> None:
    command = _command(table)
    param = config_keys(command)[key]
    assert param.opts[0] == "--" + key.replace("_", "-") and param.help, (table, key)
    value = _sample(param)
    by_flag = command.make_context(
        table, [*_base_args(command, tmp_path, param.name), *_flag_args(param, value)]
    )
    config = _write(tmp_path, table, f"{key} = {_toml(value)}\n")
    by_file = command.make_context(
        table, [*_base_args(command, tmp_path, param.name), "--config", str(config)]
    )
    assert by_file.params[param.name] == by_flag.params[param.name] != param.default
    assert by_file.get_parameter_source(param.name) == _click.core.ParameterSource.DEFAULT_MAP
    dashed = _write(tmp_path, table, f"{key.replace('_', '-')} = {_toml(value)}\n")
    again = command.make_context(table, [*_base_args(command, tmp_path, param.name), "--config", str(dashed)])
    assert again.params[param.name] == by_flag.params[param.name]


@pytest.mark.parametrize("table", CONFIG_TABLES)
def test_a_flag_typed_wins_over_the_file(table: str, tmp_path: Path) -> None:
    command = _command(table)
    param = next(p for p in config_keys(command).values() if p.type_descriptor.annotation is float)
    key = next(k for k, p in config_keys(command).items() if p is param)
    config = _write(tmp_path, table, f"{key} = 0.25\n")
    ctx = command.make_context(
        table, [*_base_args(command, tmp_path, param.name), "--config", str(config), *_flag_args(param, 0.5)]
    )
    assert ctx.params[param.name] == 0.5
    assert ctx.get_parameter_source(param.name) == _click.core.ParameterSource.COMMANDLINE


def _refusal(table: str, body: str, tmp: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``urbandp GROUP COMMAND ... --config FILE`` (FILE holding ``body``) through the console entry point: its one
    stderr line, after checking exit 2 and no other output."""
    from urbandp.cli import main

    config = tmp / "bad.toml"
    config.write_text(body)
    group, name = table.split(".", 1)
    argv = ["urbandp", group, name, *_base_args(_command(table), tmp), "--config", str(config)]
    saved = sys.argv
    sys.argv = argv
    try:
        with pytest.raises(SystemExit) as stop:
            main()
    finally:
        sys.argv = saved
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert stop.value.code == 2 and len(lines) == 1 and lines[0].startswith("urbandp: error:"), err
    assert "Traceback" not in err and str(config) in lines[0], err
    return lines[0]


def _wrong_types(param: TyperOption) -> list[Any]:
    annotation = param.type_descriptor.annotation
    if param.is_flag or annotation is bool:
        return ["yes", 1]
    if annotation is int:
        return [2.5, "7", True]
    if annotation is float:
        return ["0.5", True]
    return [5, True]


@pytest.mark.parametrize(("table", "key"), CASES)
def test_a_value_of_the_wrong_type_is_refused_in_one_line(
    table: str, key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    param = config_keys(_command(table))[key]
    for value in _wrong_types(param):
        line = _refusal(table, f"[{table}]\n{key} = {_toml(value)}\n", tmp_path, capsys)
        where = f"{tmp_path / 'bad.toml'} [{table}]"  # the Python API's config= says it alike
        assert line == f"urbandp: error: {key} in {where} = {value!r} is not a value {flag_of(key)} takes", (
            line
        )


@pytest.mark.parametrize("table", CONFIG_TABLES)
def test_unknown_keys_tables_and_command_line_only_options_are_refused(
    table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = next(iter(config_keys(_command(table))))
    line = _refusal(table, f"[{table}]\n{key}x = 1\n", tmp_path, capsys)
    assert f"unknown key '{key}x' (did you mean '{key}'?)" in line
    group, name = table.split(".", 1)
    line = _refusal(table, f"[{group}.{name}s]\n{key} = 1\n", tmp_path, capsys)
    assert f"unknown table [{table}s] (did you mean [{table}]?)" in line
    assert "outside a table" in _refusal(table, f"{key} = 1\n", tmp_path, capsys)
    other = next(t for t in CONFIG_TABLES if t != table)
    assert f"has no [{table}] table" in _refusal(table, f"[{other}]\n", tmp_path, capsys)
    assert "not TOML" in _refusal(table, f"[{table}\n", tmp_path, capsys)
    line = _refusal(table, f"[{table}]\nout = 'elsewhere'\n", tmp_path, capsys)
    assert "out is set on the command line only (--out)" in line


def test_a_toml_date_is_read_as_its_iso_text(tmp_path: Path) -> None:
    command = _command("sensing.pm-map")
    config = _write(tmp_path, "sensing.pm-map", "start = 2023-09-15\nend = 2023-10-31T06:30:00\n")
    args = [
        str(tmp_path / "r.csv"),
        "--out",
        str(tmp_path / "o"),
        "--bbox",
        "1,2,3,4",
        "--config",
        str(config),
    ]
    ctx = command.make_context("pm-map", args)
    assert (ctx.params["start"], ctx.params["end"]) == ("2023-09-15", "2023-10-31T06:30:00")
