"""Wire format, public query description, per-reading sensitivities, budget, route-to-cells (no SPU needed)."""

from __future__ import annotations

import json
import math
import socket
import struct
import threading
from pathlib import Path

import numpy as np
import pytest

from urbandp._privacy.mechanisms import laplace_epsilon, laplace_scale
from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp.errors import InputError
from urbandp.mpc import _wire as wire
from urbandp.mpc._client import cells_on_route, route_points
from urbandp.mpc._server import ClientBudget, declare_default_dataset
from urbandp.mpc._spec import FXP_FRACTION_BITS, SLACK_RELATIVE, SLACK_UNITS, QuerySpec, draw_noise


def test_frames_roundtrip_and_share_layout() -> None:
    a, b = socket.socketpair()
    with a, b:
        wire.send_json(a, {"type": "query", "function": "average"})
        wire.send_bytes(a, wire.share_frames(b"meta", [b"x" * 10, b""]))
        assert wire.recv_json(b, "query")["function"] == "average"
        assert wire.recv_share(b) == (b"meta", [b"x" * 10, b""])
        # plain bytes, no pickle: the first frame is a 4-byte length and UTF-8 JSON
        wire.send_json(a, {"type": "bye"})
        raw = b.recv(4)
        (n,) = struct.unpack(">I", raw)
        assert json.loads(b.recv(n)) == {"type": "bye"}


def test_one_message_carries_control_json_and_shares() -> None:
    """Protocol /2: the acceptance (or go) and the input shares leave in one sendall and parse in order."""
    a, b = socket.socketpair()
    with a, b:
        data = wire.json_frame({"type": "accept", "n_rect": 2}) + wire.share_frames(b"m1", [b"ab"])
        data += wire.share_frames(b"m2", [b"", b"cd"])
        wire.send_bytes(a, data)
        assert wire.recv_json(b, "accept")["n_rect"] == 2
        assert wire.recv_share(b) == (b"m1", [b"ab"])
        assert wire.recv_share(b) == (b"m2", [b"", b"cd"])
    with socket.create_server(("127.0.0.1", 0)) as srv:
        c = socket.create_connection(srv.getsockname())
        with c:
            wire.no_delay(c)
            assert c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_peer_errors_are_clear() -> None:
    a, b = socket.socketpair()
    with a, b:
        wire.send_json(a, {"type": "error", "message": "privacy budget exhausted"})
        with pytest.raises(wire.PeerError, match="refused: privacy budget exhausted"):
            wire.recv_json(b)
        wire.send_json(a, {"type": "welcome"})
        with pytest.raises(wire.PeerError, match="expected a 'accept' message, got 'welcome'"):
            wire.recv_json(b, "accept")
        a.sendall(struct.pack(">I", 3) + b"\x80\x81\x82")
        with pytest.raises(wire.PeerError, match="malformed"):
            wire.recv_json(b)
        a.sendall(struct.pack(">I", wire.MAX_FRAME + 1))
        with pytest.raises(wire.PeerError, match="announced a frame"):
            wire.recv_frame(b)
        b.settimeout(0.2)
        with pytest.raises(wire.PeerError, match="time-out"):
            wire.recv_frame(b)
    c, d = socket.socketpair()
    c.close()
    with d, pytest.raises(wire.PeerError, match="closed the connection"):
        wire.recv_frame(d)


def test_spec_validation_and_worst_case_sensitivity() -> None:
    s = QuerySpec("average", 100, 5, 1.0, 1.0, 0.0, 400.0)
    # the server does not know n = sum v >= alpha: worst case n = alpha for AVERAGE, per reading
    assert s.worst_sensitivity() == pytest.approx(400.0 / 5)
    assert QuerySpec("min", 100, 5, 1.0, 1.0, 10.0, 400.0).worst_sensitivity() == pytest.approx(
        400 - 10 / 100
    )
    assert QuerySpec("max-exact", 100, 5, 1.0, 1.0, 10.0, 400.0).worst_sensitivity() == 390.0
    assert QuerySpec("count", 100, 5, 1.0, 2.0, 0.0, 400.0).worst_sensitivity() == pytest.approx(
        100 * 4 * 400 / 16
    )
    assert (
        s.lattice_sensitivity() == math.ceil(80 * 2**FXP_FRACTION_BITS * (1 + SLACK_RELATIVE)) + SLACK_UNITS
    )
    for bad in [
        ("median", 10, 5, 1.0, 1.0, 0.0, 1.0),
        ("average", 0, 5, 1.0, 1.0, 0.0, 1.0),
        ("average", 501, 5, 1.0, 1.0, 0.0, 1.0),
        ("average", 10, 0, 1.0, 1.0, 0.0, 1.0),
        ("average", 10, 5, 1.0, 1.0, 2.0, 1.0),
    ]:
        with pytest.raises(ValueError):
            QuerySpec(*bad)  # type: ignore[arg-type]


def test_noise_is_on_the_lattice_and_epsilon_from_opendp() -> None:
    s = QuerySpec("average", 50, 5, 1.0, 1.0, 0.0, 400.0)
    value, eps = draw_noise(s, 0.5, OpenDPNoise())
    assert (value * 2**FXP_FRACTION_BITS).is_integer()
    d = float(s.lattice_sensitivity())
    assert eps == laplace_epsilon(d, laplace_scale(d, 0.5)) and eps <= 0.5
    assert draw_noise(s, 0.5, ExactNoiseForTesting(acknowledge_not_private=True))[0] == 0.0
    # scale in value units ~ sensitivity / epsilon = 160: a draw beyond 40 scales has probability e^-40
    assert abs(value) < 40 * 160


def test_budget_refuses_beyond_total_and_survives_a_restart(tmp_path: Path) -> None:
    """Issue 20 defect 5: the per-client budget is kept in the budget store, so a new server (a restart) reads
    what each client already spent; the dataset's cap bounds all clients together."""
    import datetime as dt

    from urbandp._privacy.budget_store import BudgetStore

    store = str(tmp_path / "b.sqlite")
    declare_default_dataset(store, "mpc:grid:w")
    day = dt.date(2023, 10, 9)
    b = ClientBudget(1.0, store, "mpc:grid:w", day)
    assert b.charge("a", 0.4) == pytest.approx(0.6)
    restarted = ClientBudget(1.0, store, "mpc:grid:w", day)
    assert restarted.spent("a") == pytest.approx(0.4)
    assert restarted.charge("a", 0.4) == pytest.approx(0.2)
    with pytest.raises(InputError, match=r"asks epsilon 0.4, 0.8 of 1 already spent \(0.2 left\)"):
        restarted.charge("a", 0.4)
    assert restarted.charge("b", 1.0) == 0.0  # per client
    assert BudgetStore(store).spend_per_day("mpc:grid:w")["2023-10-09"][0] == pytest.approx(1.8)
    assert BudgetStore(store).caps("mpc:grid:w").epsilon_per_day == 100.0


def test_route_to_cells(tmp_path: Path) -> None:
    lat, lon = np.meshgrid(np.arange(5) * 0.01 + 22.5, np.arange(5) * 0.01 + 88.3, indexing="ij")
    lat, lon = lat.ravel(), lon.ravel()
    route = {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "geometry": {"type": "LineString", "coordinates": [[88.30, 22.50], [88.34, 22.50]]},
            }
        ],
    }
    p = tmp_path / "r.geojson"
    p.write_text(json.dumps(route))
    v = cells_on_route(route_points(p), lat, lon)
    assert np.flatnonzero(v).tolist() == [0, 1, 2, 3, 4]  # the southern row (lat index 0), west to east
    p.write_text("{not json")
    with pytest.raises(InputError, match="not readable JSON"):
        route_points(p)
    p.write_text(json.dumps({"type": "Polygon", "coordinates": []}))
    with pytest.raises(InputError, match="no LineString"):
        route_points(p)


def test_a_route_s_stops_are_points_not_a_line(tmp_path: Path) -> None:
    """A MultiPoint (stops about 1 km apart) gives its stops alone; a LineString through them is densified."""
    stops = [[88.30, 22.50], [88.31, 22.50]]
    p = tmp_path / "stops.geojson"
    p.write_text(json.dumps({"type": "MultiPoint", "coordinates": stops}))
    assert route_points(p).tolist() == [[22.50, 88.30], [22.50, 88.31]]
    p.write_text(json.dumps({"type": "LineString", "coordinates": stops}))
    assert len(route_points(p)) > 40


def test_route_cells_are_the_nearest_centroids_within_half_a_diagonal_in_metres() -> None:
    """The k-d tree picks what a brute-force search in metres on the ellipsoid picks (here at 59.9 N, where a
    degree of longitude is half one of latitude), on a 40 x 40 rectangle and 400 points in and around it."""
    from urbandp._geodesy import WGS84

    lat, lon = np.meshgrid(59.9 + np.arange(40) * 0.005, 10.7 + np.arange(40) * 0.01, indexing="ij")
    lat, lon = lat.ravel(), lon.ravel()
    rng = np.random.default_rng(7)
    points = np.column_stack([rng.uniform(59.89, 60.11, 400), rng.uniform(10.68, 11.10, 400)])
    v = cells_on_route(points, lat, lon)
    spacing = WGS84.inv(10.7, 59.9, 10.7, 59.905)[2]  # the shorter side: 556 m north-south, 557 m east-west
    n = len(lat)
    d = WGS84.inv(
        np.repeat(points[:, 1], n), np.repeat(points[:, 0], n), np.tile(lon, 400), np.tile(lat, 400)
    )
    d = np.asarray(d[2]).reshape(400, n)
    expected = np.zeros(n, dtype=bool)
    expected[d.argmin(axis=1)[d.min(axis=1) <= spacing * 0.7072]] = True
    assert 50 < v.sum() < n and (v != expected).sum() <= 1  # ties at a cell's edge, within millimetres


def test_hostport() -> None:
    assert wire.parse_hostport("127.0.0.1:7700") == ("127.0.0.1", 7700)
    for bad in ["7700", "host:", ":80", "h:99999", "h:x"]:
        with pytest.raises(InputError):
            wire.parse_hostport(bad)


def test_wire_between_threads_many_messages() -> None:
    a, b = socket.socketpair()
    got: list[int] = []

    def reader() -> None:
        for _ in range(50):
            got.append(len(wire.recv_share(b)[1][0]))

    t = threading.Thread(target=reader)
    t.start()
    for i in range(50):
        wire.send_bytes(a, wire.share_frames(b"m", [bytes(1000 * i)]))
    t.join()
    a.close()
    b.close()
    assert got == [1000 * i for i in range(50)]
