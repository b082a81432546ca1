"""``mpc routes`` as a library (issue 31): one connection, answers streamed in route order, a peer's failure as one
InputError, and the PNG of the routes (no SPU needed: the client is a stand-in that answers like the server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import urbandp.mpc._routes as mpc_routes
from urbandp.errors import InputError
from urbandp.mpc import _wire as wire
from urbandp.mpc._routes import ANSWER_KEYS, plot_routes, query_routes
from urbandp.mpc._spec import ClientOptions

RECT = (22.49, 88.32, 22.61, 88.42)
SERVER = ClientOptions(server="127.0.0.1:9", timeout=5.0)


class _Client:
    """Answers AVERAGE queries in turn; the ``fail_at``-th query fails as the peer would (0: never)."""

    opened: ClassVar[list[_Client]] = []
    fail_at: ClassVar[int] = 0

    def __init__(self, server: str, client_id: str | None = None, timeout: float = 60.0) -> None:
        self.queries: list[tuple[str, np.ndarray]] = []
        self.closed = False
        _Client.opened.append(self)

    def query(self, function: str, rect: tuple[float, ...], **kw: Any) -> dict[str, Any]:
        self.queries.append((function, kw["route"]))
        if len(self.queries) == _Client.fail_at:
            raise wire.PeerError("server: budget spent")
        n = len(self.queries)
        return {"function": function, "value": 40.0 + n, "error": 0.5 * n, "beta": n != 2, "n_cells": 7 * n,
                "seconds": 0.25, "epsilon": 0.5, "epsilon_left": 1.0, "n_rect": 99}  # fmt: skip

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> type[_Client]:
    _Client.opened = []
    _Client.fail_at = 0
    monkeypatch.setattr(mpc_routes, "Client", _Client)
    return _Client


def _points(k: int) -> list[np.ndarray]:
    return [np.array([[22.50 + 0.01 * i, 88.33], [22.55, 88.36 + 0.01 * i]]) for i in range(k)]


def test_one_connection_answers_in_route_order_as_they_arrive(client: type[_Client]) -> None:
    paths = [Path("a.geojson"), Path("b.geojson"), Path("c.geojson")]
    pts = _points(3)
    seen: list[dict[str, Any]] = []
    answers = query_routes(SERVER, RECT, paths, pts, seen.append)
    assert len(client.opened) == 1 and client.opened[0].closed
    assert [q[0] for q in client.opened[0].queries] == ["average"] * 3
    assert all(q[1] is p for q, p in zip(client.opened[0].queries, pts, strict=True))
    assert seen == answers
    assert [a["route"] for a in answers] == ["a.geojson", "b.geojson", "c.geojson"]
    assert list(answers[0]) == ["route", *ANSWER_KEYS]  # the printed keys, nothing of the budget
    assert [a["value"] for a in answers] == [41.0, 42.0, 43.0]


def test_a_peer_failure_is_one_input_error_and_the_connection_is_closed(client: type[_Client]) -> None:
    client.fail_at = 2
    seen: list[dict[str, Any]] = []
    with pytest.raises(InputError, match=r"^server: budget spent$"):
        query_routes(
            ClientOptions(server="127.0.0.1:9", client_id="me"),
            RECT,
            [Path("a"), Path("b")],
            _points(2),
            seen.append,
        )
    assert [a["route"] for a in seen] == ["a"]  # the first answer was already out
    assert client.opened[0].closed


def test_plot_writes_the_png_with_refused_routes_labelled(client: type[_Client], tmp_path: Path) -> None:
    pts = _points(2)
    answers = query_routes(SERVER, RECT, [Path("a"), Path("b")], pts, lambda a: None)
    png = tmp_path / "routes.png"
    plot_routes(png, RECT, answers, pts)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["routes.png"]  # written atomically, no temporary left
    from urbandp.mpc._routes import _label

    assert _label(answers[0]) == "a: 41.0 ug/m3, DP error 0.50 (7 cells)"
    assert _label(answers[1]) == "b: refused (fewer than alpha cells)"
