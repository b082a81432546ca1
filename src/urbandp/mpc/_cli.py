"""CLI group ``urbandp mpc``: secure two-party queries over sensor maps (Prac2PC on SPU CHEETAH)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer

from urbandp._cli_options import BudgetStoreUrl, Overwrite
from urbandp._cli_spec import OptionsOf, command
from urbandp._outputs import check_output_file, dumps_strict
from urbandp.errors import InputError
from urbandp.mpc._spec import ClientOptions, PrivateQuery, ServeOptions
from urbandp.sensing._options import as_box

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


def _need_spu() -> None:
    from urbandp.mpc import spu_missing_reason

    reason = spu_missing_reason()
    if reason is not None:
        raise InputError(reason)


RECT = {"rect": as_box("rect")}
"""``--rect`` as four numbers, read as `sensing query` reads its own."""


def _query(given: dict[str, Any]) -> PrivateQuery:
    """The query of ``urbandp mpc query``'s flags: ``--theta`` is T, or T1,T2 (``theta`` and ``theta2``)."""
    text = given["theta"]
    t1, _, t2 = (text or "").partition(",")
    try:
        theta = {"theta": float(t1), "theta2": float(t2) if t2 else None} if text is not None else {}
    except ValueError:
        raise InputError(f"--theta needs numbers, got {text!r}") from None
    return PrivateQuery(**{**given, **theta})


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
    from urbandp.mpc._server import Server, ServerGrid

    g = ServerGrid.read(o.grid, o.window)  # a grid with NaN or inf values is refused before SPU is needed
    _need_spu()
    server = Server(g, o, budget_store=a.budget_store)
    server.log = lambda msg: typer.echo(msg, err=True)
    server.serve_forever()


@dataclasses.dataclass(frozen=True, kw_only=True)
class QueryArguments:
    """``urbandp mpc query``: the query (:class:`~urbandp.mpc._spec.PrivateQuery`, its ``--theta`` as text), the
    connection, and the cells of interest."""

    query: Annotated[dict[str, Any], OptionsOf(PrivateQuery, leave_out=("theta2",), parse=RECT)]
    client: Annotated[ClientOptions, OptionsOf()]
    cells: Annotated[
        Path | None,
        typer.Option(help="Cells of interest: one cell_id per line (default: none; give this or --route)."),
    ] = None
    route: Annotated[
        Path | None,
        typer.Option(
            help="Cells of interest: the cells a GeoJSON route crosses (default: none; give this or --cells)."
        ),
    ] = None


@command(app, QueryArguments)
def query(a: QueryArguments) -> None:
    """One private query; prints one JSON object: function, value, error, beta, n_cells, seconds.

    Example: urbandp mpc query --server 127.0.0.1:7700 --route home.geojson --rect 22.50,88.32,22.56,88.37
    """
    q, c = _query(a.query), a.client
    _need_spu()
    from urbandp.mpc._client import route_points
    from urbandp.mpc._routes import ANSWER_KEYS, connected
    from urbandp.sensing._queries import read_cells_file

    if (a.cells is None) == (a.route is None):
        raise InputError("give exactly one of --cells FILE and --route GEOJSON")
    ids = read_cells_file(a.cells) if a.cells is not None else None
    pts = route_points(a.route) if a.route is not None else None
    with connected(c) as client:
        ans = client.query(q.function, q.rect, cells=ids, route=pts, theta=q.theta, theta2=q.theta2)
    typer.echo(dumps_strict({k: ans[k] for k in ANSWER_KEYS}, indent=None))
    if "error2_interval95" in ans:
        from urbandp.sensing._queries import describe_error2

        typer.echo(describe_error2(ans["noisy_error2"], ans), err=True)
    typer.echo(
        f"epsilon {ans['epsilon']:.6g} spent on the noisy error, {ans['epsilon_left']:.6g} left; "
        f"{ans['n_cells']} of {ans['n_rect']} cells of the rectangle selected",
        err=True,
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class RoutesArguments:
    """``urbandp mpc routes``: the routes, the rectangle holding them, the connection and the PNG."""

    route: Annotated[
        list[Path], typer.Option(help="A GeoJSON route; give it twice or more to compare routes.")
    ]
    query: Annotated[PrivateQuery, OptionsOf(only=("rect",), parse=RECT)]
    client: Annotated[ClientOptions, OptionsOf()]
    png: Annotated[
        Path | None, typer.Option(help="Draw the routes with their private answers here (default: no PNG).")
    ] = None
    overwrite: Overwrite = False


@command(app, RoutesArguments)
def routes(a: RoutesArguments) -> None:
    """The paper's app: private average (and noisy error) along alternative routes, over one connection.

    Example: urbandp mpc routes --server 127.0.0.1:7700 --rect 22.49,88.32,22.61,88.42 --route a.geojson --route b.geojson --png routes.png

    Prints one JSON object per route (the `mpc query` keys plus `route`). Only the rectangle and the function
    reach the server; the PNG shows what the client knows: its routes and answers, not the server's map.
    """
    if a.png is not None:
        check_output_file(a.png, "--png")
    _need_spu()
    from urbandp.mpc._client import route_points
    from urbandp.mpc._routes import plot_routes, query_routes

    pts = [route_points(p) for p in a.route]
    rect = a.query.rect
    answers = query_routes(
        a.client, rect, a.route, pts, lambda ans: typer.echo(dumps_strict(ans, indent=None))
    )
    if a.png is not None:
        plot_routes(a.png, rect, answers, pts)
        typer.echo(f"-> {a.png}", err=True)
