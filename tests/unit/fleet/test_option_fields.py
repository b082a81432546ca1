"""Each option of ``urbandp fleet release`` is one pydantic field made with ``option()``: the command's flags and
help, the TOML tables, ``help(ud.fleet.release)`` and the generated keyword types all come from the fields."""

from __future__ import annotations

import inspect
import typing

import click
import pytest
import typer
from pydantic import BaseModel

import urbandp as ud
from urbandp import _option_types as option_types
from urbandp._release_options import declared_options, option
from urbandp.cli import app
from urbandp.errors import InputError
from urbandp.fleet import _options_flags as fleet_options
from urbandp.fleet._options import HatReleaseConfig
from urbandp.fleet._options_flags import OPTION_NAMES, RecordOptions, RunOptions, release_options
from urbandp.fleet._options_input import read_config


def _command(*path: str) -> click.Command:
    cmd: typing.Any = typer.main.get_command(app)
    for name in path:
        cmd = cmd.get_command(click.Context(cmd), name)
    return typing.cast(click.Command, cmd)


def _options(cmd: click.Command) -> dict[str, click.Parameter]:
    return {p.name: p for p in cmd.params if p.param_type_name == "option" and p.name}


def test_every_spec_field_is_a_declared_option_and_nothing_else_declares_one() -> None:
    """Every field of the release spec is an option of the command; the module of ``ReleaseOption``s is gone."""
    assert [o.name for o in declared_options(HatReleaseConfig)] == list(HatReleaseConfig.model_fields)
    assert not hasattr(fleet_options, "RELEASE_OPTIONS") and not hasattr(fleet_options, "ReleaseOption")
    assert (
        len(release_options()) == len(HatReleaseConfig.model_fields) + len(RecordOptions.model_fields) == 46
    )


def test_the_command_s_flags_and_help_are_the_fields() -> None:
    """``urbandp fleet release``: each declared option's flag, with the field's help, its default filled in."""
    params = _options(_command("fleet", "release"))
    for o in (*release_options(), *declared_options(RunOptions)):
        assert params[o.name].opts == [o.flag], o.name
        assert params[o.name].help == o.help, o.name
    assert params["hours"].help == "Daily hour window START-END (default: 9-21)."
    assert params["speed_max"].help == "U: speeds clipped to [0, U] km/h for Query 1 (default: 65)."
    assert params["delta"].help == "Target delta per vehicle-day of DP selection (default: 1e-06)."
    assert params["min_vehicles_per_day"].help.endswith(
        "(default: 0 for DP selection, 10 for public-threshold)."
    )
    assert params["engine"].help.endswith("(default: polars).")
    # a flag left out is None, so a config file's value (or the field's default) applies
    assert all(params[o.name].default is None for o in release_options())


def test_the_alias_and_the_plan_take_the_same_options() -> None:
    release = _options(_command("fleet", "release"))
    assert {n: (p.opts, p.help) for n, p in _options(_command("release")).items()} == {
        n: (p.opts, p.help) for n, p in release.items()
    }
    plan = _options(_command("fleet", "plan"))
    assert {o.name for o in release_options()} <= set(plan)


def test_a_help_says_its_field_s_default_once() -> None:
    class Spec(BaseModel):
        window: tuple[int, int] = option((6, 22), help="Window (default: {default[0]}-{default[1]}).")
        share: float = option(0.25, help="Share (default: {default}).")
        days: tuple[str, ...] = option(("mon", "tue"), help="Days (default: {default}).")
        plain: str = option("x", help="No default said; braces {z} left alone.")

    helps = {o.name: o.help for o in declared_options(Spec)}
    assert helps == {
        "window": "Window (default: 6-22).",
        "share": "Share (default: 0.25).",
        "days": "Days (default: mon,tue).",
        "plain": "No default said; braces {z} left alone.",
    }


def test_the_toml_tables_are_the_fields(tmp_path: typing.Any) -> None:
    assert tuple(o.name for o in declared_options(RecordOptions) if o.table == "input") == (
        "speed_unit",
        "speed_unit_since",
        "timezone",
        "speed_reject_above",
        "timestamp_format",
    )
    assert {o.table for o in declared_options(HatReleaseConfig)} == {"release"}
    assert {o.name: o.table for o in declared_options(RecordOptions)}["column"] == "columns"
    path = tmp_path / "c.toml"
    path.write_text('[input]\ndates_file = "days.txt"\n')
    with pytest.raises(InputError) as err:  # the day file is a flag, not an [input] key
        read_config(path)
    assert str(err.value) == f"dates_file in {path} [input] is not an option"


def test_help_of_the_api_and_its_keyword_types_are_the_fields() -> None:
    keywords = inspect.signature(ud.fleet.release).parameters
    hints = typing.get_type_hints(option_types.FleetReleaseKeywords)
    assert list(hints) == list(OPTION_NAMES)
    for o in release_options():
        if o.name in OPTION_NAMES:
            assert keywords[o.name].default == (None if o.default == () else o.default), o.name
            assert keywords[o.name].annotation == hints[o.name], o.name
    assert keywords["hours"].annotation == tuple[int, int] | str | None
    assert keywords["selection"].annotation == typing.Literal["dp", "public-threshold"] | None
    assert keywords["speed_reject_above"].default == 150.0 and keywords["coarsen_share"].default == 0.3


def test_the_run_s_options_are_a_typed_object() -> None:
    from urbandp.fleet._cli import ReleaseArguments

    assert (
        typing.get_args(typing.get_type_hints(ReleaseArguments, include_extras=True)["run"])[0] is RunOptions
    )
    run = RunOptions(no_map=True, engine="polars")
    assert run.no_map is True and run.engine == "polars" and run.dataset is None
