"""``urbandp mpc serve``'s options are declared once, on :class:`urbandp.mpc._spec.ServeOptions`: its flags, help
and defaults are the fields', and a value outside an option's bounds is refused naming that option alone (the
command once refused five options in one line: ``need --alpha >= 1, --epsilon > 0, ...``). Needs no SPU: the
options are checked before the server starts."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from urbandp_process import assert_refused, run_urbandp

from urbandp._release_options import declared_options
from urbandp.errors import InvalidParameterError
from urbandp.mpc._spec import ServeOptions


def test_every_serve_option_is_a_flag_with_the_field_s_default_and_help() -> None:
    from urbandp.mpc._cli import app

    params = {p.name: p for p in typer.main.get_command(app).commands["serve"].params}  # type: ignore[attr-defined]
    for o in declared_options(ServeOptions):
        assert o.flag in params[o.name].opts and params[o.name].help == o.help, o.name
        assert params[o.name].required == o.required, o.name
        if not o.required:
            assert params[o.name].default == o.default, o.name
    assert set(params) - {o.name for o in declared_options(ServeOptions)} == {"budget_store"}


@pytest.mark.parametrize(
    ("given", "line"),
    [
        ({"alpha": 0}, "alpha must be an integer >= 1, got 0"),
        ({"max_clients": -1}, "max_clients must be an integer >= 1, got -1"),
        ({"timeout": 0.0}, "timeout must be a finite number > 0 and <= 86400, got 0.0"),
        ({"epsilon_budget": 0.1}, "epsilon_budget must be at least epsilon (one query), got 0.1 < 0.5"),
        ({"sigma2_min": 10.0}, "sigma2_min must be below sigma2_max, got 10 and 9"),
    ],
)
def test_a_bad_serve_option_is_refused_naming_it(given: dict[str, object], line: str) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        ServeOptions(grid=Path("grid.csv"), sigma2_max=9.0, **given)  # type: ignore[arg-type]
    assert str(caught.value) == line


def test_the_command_names_the_flag_of_the_bad_option(tmp_path: Path) -> None:
    grid = tmp_path / "grid.csv"
    grid.write_text("cell_id,lat,lon,window,mu,sigma2\n")
    res = run_urbandp("mpc", "serve", "--grid", str(grid), "--sigma2-max", "9", "--alpha", "0", cwd=tmp_path)
    assert_refused(res, "--alpha must be an integer >= 1, got 0", others="none")


def test_the_server_holds_its_options_and_tells_clients_the_public_ones(tmp_path: Path) -> None:
    import numpy as np

    from urbandp.errors import InputError
    from urbandp.mpc._server import Server, ServerGrid, public_parameters

    one = np.array([1.0])
    grid = ServerGrid(np.array([7], dtype=np.int64), one, one, one, one, "2023-10-09T00:00", "g")
    store = tmp_path / "b.sqlite"
    with pytest.raises(InputError, match=r"^expected HOST:PORT, got 'nohost'$"):
        Server(
            grid, ServeOptions(grid=Path("g.csv"), sigma2_max=9.0, listen="nohost"), budget_store=str(store)
        )
    assert not store.exists()  # refused before the default dataset is declared
    options = ServeOptions(grid=Path("g.csv"), sigma2_max=9.0, listen="127.0.0.1:7701", epsilon=0.25)
    server = Server(grid, options, budget_store=str(store))
    assert (server.host, server.port, server.dataset) == ("127.0.0.1", 7701, "mpc:g:2023-10-09T00:00")
    assert public_parameters(options) == {
        "alpha": 5,
        "epsilon_budget": 5.0,
        "sigma2_min": 0.0,
        "sigma2_max": 9.0,
        "rho": 1.0,
        "steepness": 1.0,
        "epsilon_per_query": 0.25,
        "max_cells": 500,
    }
