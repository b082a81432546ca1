"""CLI group ``urbandp mpc``: secure two-party queries over sensor maps (Prac2PC on SPU CHEETAH)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from urbandp._cli_options import BudgetStoreUrl, Overwrite
from urbandp._cli_spec import OptionsOf, command
from urbandp._cli_support import cli_guard
from urbandp._outputs import check_output_file, dumps_strict
from urbandp.errors import InputError
from urbandp.mpc._spec import MAX_TIMEOUT_S, ServeOptions
from urbandp.sensing._options import parse_numbers

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


def _need_spu() -> None:
    from urbandp.mpc import spu_missing_reason

    reason = spu_missing_reason()
    if reason is not None:
        raise InputError(reason)


def _check_timeout(timeout: float) -> None:
    """A wait in seconds: above 0 and at most a day (0 or less would fail every query at once)."""
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise InputError(
            f"--timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:,.0f}, got {timeout:g}"
        )


def _rect(text: str) -> tuple[float, float, float, float]:
    """``--rect`` as four numbers, read as `sensing query` reads its own."""
    a, b, c, d = parse_numbers(text, 4, "rect") or ()
    return a, b, c, d


def _theta(text: str | None) -> tuple[float | None, float | None]:
    """``--theta``: T (count) or T1,T2 (range), the client's secret thresholds; (None, None) when not given."""
    if text is None:
        return None, None
    try:
        ts = [float(t) for t in text.split(",")]
    except ValueError:
        raise InputError(f"--theta needs numbers, got {text!r}") from None
    return ts[0], (ts[1] if len(ts) > 1 else None)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServeArguments:
    """``urbandp mpc serve``: the server's options, and the budget store its dataset is charged in."""

    o: Annotated[ServeOptions, OptionsOf()]
    budget_store: BudgetStoreUrl = None


@command(app, ServeArguments)
def serve(a: ServeArguments) -> None:
    """Serve private queries over one window of an interpolated grid (privacy unit: one reading).

    Example: urbandp mpc serve --grid out/ka/grid.parquet --window 2023-10-09T11:00 --sigma2-max 800 --alpha 5
    """
    o = a.o
    from urbandp.mpc._server import Server, ServerConfig, ServerGrid

    g = ServerGrid.read(
        o.grid, o.window
    )  # a grid with NaN or inf values is refused before SPU is even needed
    _need_spu()
    from urbandp.mpc._client import parse_hostport

    host, port = parse_hostport(o.listen)
    cfg = ServerConfig(
        o.alpha, o.epsilon, o.epsilon_budget, o.sigma2_min, o.sigma2_max, o.rho, o.steepness, o.timeout
    )
    server = Server(g, cfg, host, port, dataset=o.dataset, budget_store=a.budget_store)
    server.log = lambda msg: typer.echo(msg, err=True)
    server.serve_forever(max_clients=o.max_clients)


@app.command()
@cli_guard
def query(
    rect: Annotated[str, typer.Option(help="Obfuscation rectangle LAT1,LON1,LAT2,LON2 (sent in the clear).")],
    server: Annotated[str, typer.Option(help="HOST:PORT of `urbandp mpc serve`.")] = "127.0.0.1:7700",
    cells: Annotated[
        Path | None,
        typer.Option(help="Cells of interest: one cell_id per line (default: none; give this or --route)."),
    ] = None,
    route: Annotated[
        Path | None,
        typer.Option(
            help="Cells of interest: the cells a GeoJSON route crosses (default: none; give this or --cells)."
        ),
    ] = None,
    function: Annotated[
        str, typer.Option(help="average|min|max|min-exact|max-exact|count|range.")
    ] = "average",
    theta: Annotated[
        str | None,
        typer.Option(
            help="count: T; range: T1,T2, secret inputs (default: none; required for count and range)."
        ),
    ] = None,
    client_id: Annotated[
        str | None, typer.Option(help="Name the server keys the budget on (default: your IP).")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the server.")] = 60.0,
) -> None:
    """One private query; prints one JSON object: function, value, error, beta, n_cells, seconds.

    Example: urbandp mpc query --server 127.0.0.1:7700 --route home.geojson --rect 22.50,88.32,22.56,88.37
    """
    _check_timeout(timeout)
    r = _rect(rect)
    _need_spu()
    from urbandp.mpc import _wire as wire
    from urbandp.mpc._client import Client, route_points
    from urbandp.mpc._routes import ANSWER_KEYS
    from urbandp.sensing._queries import read_cells_file

    if (cells is None) == (route is None):
        raise InputError("give exactly one of --cells FILE and --route GEOJSON")
    t1, t2 = _theta(theta)
    ids = read_cells_file(cells) if cells is not None else None
    pts = route_points(route) if route is not None else None
    try:
        c = Client(server, client_id, timeout)
        try:
            ans = c.query(function, r, cells=ids, route=pts, theta=t1, theta2=t2)
        finally:
            c.close()
    except wire.PeerError as err:
        raise InputError(str(err)) from None
    typer.echo(dumps_strict({k: ans[k] for k in ANSWER_KEYS}, indent=None))
    if "error2_interval95" in ans:
        from urbandp.sensing._queries import describe_error2

        typer.echo(describe_error2(ans["noisy_error2"], ans), err=True)
    typer.echo(
        f"epsilon {ans['epsilon']:.6g} spent on the noisy error, {ans['epsilon_left']:.6g} left; "
        f"{ans['n_cells']} of {ans['n_rect']} cells of the rectangle selected",
        err=True,
    )


@app.command()
@cli_guard
def routes(
    route: Annotated[
        list[Path], typer.Option(help="A GeoJSON route; give it twice or more to compare routes.")
    ],
    rect: Annotated[str, typer.Option(help="Obfuscation rectangle LAT1,LON1,LAT2,LON2 holding every route.")],
    server: Annotated[str, typer.Option(help="HOST:PORT of `urbandp mpc serve`.")] = "127.0.0.1:7700",
    png: Annotated[
        Path | None, typer.Option(help="Draw the routes with their private answers here (default: no PNG).")
    ] = None,
    client_id: Annotated[
        str | None,
        typer.Option(help="Name the server keys the budget on (default: the client's IP address)."),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the server.")] = 60.0,
    overwrite: Overwrite = False,
) -> None:
    """The paper's app: private average (and noisy error) along alternative routes, over one connection.

    Example: urbandp mpc routes --server 127.0.0.1:7700 --rect 22.49,88.32,22.61,88.42 --route a.geojson --route b.geojson --png routes.png

    Prints one JSON object per route (the `mpc query` keys plus `route`). Only the rectangle and the function
    reach the server; the PNG shows what the client knows: its routes and answers, not the server's map.
    """
    _check_timeout(timeout)
    r = _rect(rect)
    if png is not None:
        check_output_file(png, "--png")
    _need_spu()
    from urbandp.mpc._client import route_points
    from urbandp.mpc._routes import plot_routes, query_routes

    if len(route) < 1:
        raise InputError("give at least one --route")
    pts = [route_points(p) for p in route]
    answers = query_routes(
        server, client_id, timeout, r, route, pts, lambda a: typer.echo(dumps_strict(a, indent=None))
    )
    if png is not None:
        plot_routes(png, r, answers, pts)
        typer.echo(f"-> {png}", err=True)
