"""``urbandp mpc routes``: the paper's app (Prac2PC, section VII), the private average along alternative routes.

The client asks the server for the AVERAGE (with its noisy error) over the cells each route crosses, one query per
route over one connection (:func:`query_routes`); only the obfuscation rectangle and the function reach the server
in the clear. :func:`plot_routes` draws what the client knows: its routes and their answers, not the server's map.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from urbandp._figures import saved_figure
from urbandp._geodesy import degree_aspect
from urbandp._outputs import atomic_output_file
from urbandp.errors import InputError
from urbandp.mpc import _wire as wire
from urbandp.mpc._client import Client
from urbandp.mpc._spec import ClientOptions
from urbandp.sensing._queries import ANSWER_KEYS

Rect = tuple[float, float, float, float]


@contextlib.contextmanager
def connected(options: ClientOptions) -> Iterator[Client]:
    """A :class:`Client` connected as ``options`` say, closed on leaving; a peer's refusal or failure is one
    :class:`InputError`."""
    try:
        client = Client(options.server, options.client_id, options.timeout)
        try:
            yield client
        finally:
            client.close()
    except wire.PeerError as err:
        raise InputError(str(err)) from None


def query_routes(
    options: ClientOptions,
    rect: Rect,
    routes: list[Path],
    points: list[np.ndarray],
    on_answer: Callable[[dict[str, Any]], None],
) -> list[dict[str, Any]]:
    """The private average along each route (``route`` its file name, then :data:`ANSWER_KEYS`), over one
    connection (:func:`connected`); ``on_answer`` sees each answer as it arrives."""
    answers: list[dict[str, Any]] = []
    with connected(options) as client:
        for path, pts in zip(routes, points, strict=True):
            ans = client.query("average", rect, route=pts)
            answers.append({"route": path.name, **{k: ans[k] for k in ANSWER_KEYS}})
            on_answer(answers[-1])
    return answers


def _label(answer: dict[str, Any]) -> str:
    """Legend text of one route: its average and noisy error, or that the server refused it."""
    if answer["beta"]:
        return (
            f"{answer['route']}: {answer['value']:.1f} ug/m3, DP error {answer['error']:.2f} "
            f"({answer['n_cells']} cells)"
        )
    return f"{answer['route']}: refused (fewer than alpha cells)"


def plot_routes(png: Path, rect: Rect, answers: list[dict[str, Any]], points: list[np.ndarray]) -> None:
    """Draw the routes (``points``: (lat, lon) vertices) with their answers and the dashed rectangle to ``png``
    (written atomically)."""
    from matplotlib.patches import Rectangle

    la1, lo1, la2, lo2 = rect
    corner, width, height = (min(lo1, lo2), min(la1, la2)), abs(lo2 - lo1), abs(la2 - la1)
    with atomic_output_file(png, "png") as tmp, saved_figure(tmp, figsize=(6.5, 5.5)) as (_, ax):
        ax.add_patch(Rectangle(corner, width, height, fill=False, ls="--", color="grey"))
        for answer, pts in zip(answers, points, strict=True):
            ax.plot(pts[:, 1], pts[:, 0], lw=2.5, label=_label(answer))
        ax.set_xlabel("longitude")
        ax.set_ylabel("latitude")
        ax.set_title(
            "Average PM2.5 along each route, computed privately (Prac2PC on SPU)\n"
            "(dashed: obfuscation rectangle sent to the server; the error is noisy, DP per reading, "
            "clamped to its range)",
            fontsize=9,
        )
        ax.legend(fontsize=8, loc="best")
        ax.set_aspect(degree_aspect((la1 + la2) / 2, (lo1 + lo2) / 2))
