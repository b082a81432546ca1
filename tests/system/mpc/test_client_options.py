"""``urbandp mpc query`` and ``routes`` take their options from :class:`urbandp.mpc._spec.PrivateQuery` and
:class:`urbandp.mpc._spec.ClientOptions`, declared once: the flags, help and defaults are the fields', and the
checks :meth:`urbandp.mpc._client.Client.query` makes are made by the command on its flags, before SPU is needed
or a server is reached. Needs no SPU."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from urbandp_process import assert_refused, run_urbandp

from urbandp._release_options import declared_options
from urbandp.errors import InvalidParameterError
from urbandp.mpc._spec import ClientOptions, PrivateQuery


def test_query_and_routes_flags_are_the_fields_of_their_options() -> None:
    from urbandp.mpc._cli import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    declared = {o.name: o for model in (PrivateQuery, ClientOptions) for o in declared_options(model)}
    for command, own in (("query", {"cells", "route"}), ("routes", {"route", "png", "overwrite"})):
        params = {p.name: p for p in commands[command].params}
        for name in set(params) - own:
            o = declared[name]
            assert o.flag in params[name].opts and params[name].help == o.help, (command, name)
            assert params[name].default == (None if o.required else o.command_line_default), (command, name)
    query_flags = {p.name for p in commands["query"].params}
    assert query_flags == {*declared, "cells", "route"} - {"theta2"}  # --theta takes T1,T2


@pytest.mark.parametrize(
    ("given", "line"),
    [
        ({"function": "count"}, "count needs theta"),
        ({"function": "range", "theta": 5.0, "theta2": 1.0}, "range needs theta T1,T2 with T1 < T2"),
        ({"rect": (1.0, 2.0, 3.0, float("inf"))}, "rect must hold finite numbers, got (1.0, 2.0, 3.0, inf)"),
    ],
)
def test_a_bad_query_is_refused_naming_the_option(given: dict[str, object], line: str) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        PrivateQuery(**{"rect": (1.0, 2.0, 3.0, 4.0), **given})  # type: ignore[arg-type]
    assert str(caught.value) == line
    assert caught.value.parameters == ("rect",) if "rect" in given else ("theta",)


def test_query_refuses_count_without_theta_before_spu_or_a_server(tmp_path: Path) -> None:
    cells = tmp_path / "c.txt"
    cells.write_text("1\n")
    res = run_urbandp(
        "mpc", "query", "--server", "127.0.0.1:9", "--rect", "1,2,3,4", "--cells", str(cells),
        "--function", "count", cwd=tmp_path,
    )  # fmt: skip
    assert_refused(res, "count needs --theta", others="none")


def test_routes_refuses_a_timeout_out_of_bounds_naming_the_flag(tmp_path: Path) -> None:
    (tmp_path / "r.geojson").write_text("{}")
    res = run_urbandp(
        "mpc", "routes", "--route", "r.geojson", "--rect", "1,2,3,4", "--timeout", "0", cwd=tmp_path
    )
    assert_refused(res, "--timeout must be a finite number > 0 and <= 86400, got 0.0", others="none")
