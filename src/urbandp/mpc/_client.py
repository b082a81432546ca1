"""``urbandp mpc query``: the client's side of Prac2PC (paper VII-A steps 1, 2, 5, 6).

The client turns its cells of interest (a file of cell ids, or a GeoJSON route) into the bit vector ``v`` over
the cells of its obfuscation rectangle; only the rectangle and the function go to the server in the clear. The
thresholds ``theta`` of COUNT/RANGE are secret inputs too. One connection serves many queries; the first (dummy)
query absorbs the OT set-up.
"""

from __future__ import annotations

import contextlib
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np

import urbandp._geodesy as geodesy
from urbandp._arguments import check_keywords, check_numbers
from urbandp.errors import InputError, InvalidParameterError
from urbandp.mpc import _wire as wire
from urbandp.mpc._spec import PrivateQuery, QuerySpec
from urbandp.sensing._queries import answer_json


def route_points(path: Path) -> np.ndarray:
    """(lat, lon) positions of every line (polygon rings included) and point of a GeoJSON file, read by the one
    GeoJSON reader (:func:`urbandp._records.geojson.read_geojson`); a line's segments densified to ~20 m so that
    every cell the route crosses gets a point, points (stops) taken as they are."""
    from urbandp._records.geojson import read_geojson

    _, lines, points, _ = read_geojson(path)
    pts: list[np.ndarray] = [p[:, ::-1] for p in points]  # stops as they are (GeoJSON is lon, lat)
    for line in lines:
        if len(line) == 0:
            continue
        lon, lat = line[:, 0], line[:, 1]  # GeoJSON is lon, lat
        # each segment's length on the ellipsoid
        metres = np.atleast_1d(geodesy.WGS84.inv(lon[:-1], lat[:-1], lon[1:], lat[1:])[2])
        for i, metres_i in enumerate(metres):
            t = np.linspace(0.0, 1.0, max(int(metres_i / 20.0), 1), endpoint=False)
            pts.append(
                np.column_stack([lat[i] + t * (lat[i + 1] - lat[i]), lon[i] + t * (lon[i + 1] - lon[i])])
            )
        pts.append(np.array([[lat[-1], lon[-1]]]))
    if not pts:
        raise InputError(f"{path}: no LineString or Point geometry")
    return np.concatenate(pts)


def cells_on_route(points: np.ndarray, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """0/1 over the rectangle's cells: a cell is selected when a route point is nearer to its centroid than
    to any other centroid and lies within one cell spacing of it (points outside the rectangle select nothing).

    Distances in metres on the rectangle's plane (:func:`urbandp._geodesy.box_projection`), nearest centroids from
    a k-d tree (scipy's ``cKDTree``): O((n + m) log n) for n cells and m route points.
    """
    from scipy.spatial import cKDTree

    v = np.zeros(len(lat), dtype=bool)
    if len(lat) == 0 or len(points) == 0:
        return v
    plane = geodesy.box_projection(
        float(np.min(lat)), float(np.min(lon)), float(np.max(lat)), float(np.max(lon))
    )
    tree = cKDTree(plane.to_metres(lat, lon))
    spacing = float(np.min(tree.query(tree.data, k=2)[0][:, 1])) if len(lat) > 1 else np.inf
    distance, nearest = tree.query(plane.to_metres(points[:, 0], points[:, 1]))
    v[nearest[distance <= spacing * 0.7072]] = True  # inside the square (half diagonal)
    return v


class Client:
    """A connection to ``urbandp mpc serve``; :meth:`query` may be called many times."""

    def __init__(self, server: str, client_id: str | None = None, timeout: float = 60.0) -> None:
        from urbandp.mpc._party import CLIENT, Party, free_link

        host, port = wire.parse_hostport(server)
        self.timeout = timeout
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as err:
            raise wire.PeerError(
                f"cannot reach the server at {host}:{port} ({err.strerror or err})"
            ) from None
        self.sock.settimeout(timeout)
        wire.no_delay(self.sock)
        client_link = free_link(self.sock)
        hello: dict[str, Any] = {"type": "hello", "protocol": wire.PROTOCOL, "link": client_link}
        if client_id:
            hello["client_id"] = client_id
        wire.send_json(self.sock, hello)
        welcome = wire.recv_json(self.sock, "welcome")
        self.params = welcome["params"]
        self.window = welcome.get("window")
        self.party = Party(CLIENT, welcome["session"], welcome["link"], client_link, self.sock, timeout)
        self.party.warm_up(self.params)

    @check_keywords
    def query(
        self,
        function: str,
        rect: tuple[float, float, float, float],
        cells: list[int] | None = None,
        route: np.ndarray | None = None,
        theta: float | None = None,
        theta2: float | None = None,
        vector: np.ndarray | None = None,
    ) -> dict[str, Any]:
        """One private query; returns the answer JSON (``function, value, error, beta, n_cells, seconds``)
        plus ``epsilon``, ``epsilon_left`` and ``n_rect``."""
        from urbandp.mpc._party import compile_spec, executable_digest

        q = PrivateQuery(function=function, rect=rect, theta=theta, theta2=theta2)
        if cells is not None:
            if isinstance(cells, str):
                raise InvalidParameterError(
                    f"cells must be a list of cell ids, got {cells!r}", parameters="cells"
                )
            cells = [int(c) for c in check_numbers(cells, "cells", integer=True)]
        if sum(x is not None for x in (cells, route, vector)) != 1:
            raise InvalidParameterError("give exactly one of cells and route", parameters=("cells", "route"))
        t0 = time.perf_counter()
        wire.send_json(self.sock, {"type": "query", "function": function, "rect": list(q.rect)})
        acc = wire.recv_json(self.sock, "accept")  # followed by the server's input shares
        ids = np.asarray(acc["cell_id"], dtype=np.int64)
        v: np.ndarray
        if vector is not None:  # a raw input vector (tests): forced to {0, 1} inside the computation
            v = np.asarray(vector, dtype=np.float64)
            if v.shape != ids.shape:
                wire.send_error(self.sock, "bad vector length")
                raise InputError(f"vector has {v.size} entries, the rectangle {ids.size} cells")
        elif cells is not None:
            v = np.isin(ids, np.asarray(cells, dtype=np.int64))
        else:
            v = cells_on_route(route, np.asarray(acc["lat"]), np.asarray(acc["lon"]))  # type: ignore[arg-type]
        spec = QuerySpec.of(function, int(acc["n_rect"]), self.params)
        digest = executable_digest(compile_spec(spec))
        if digest != acc.get("digest"):
            wire.send_error(self.sock, "compiled programs differ (urbandp versions?)")
            raise wire.PeerError("the server compiled a different program (urbandp versions differ?)")
        self.party.receive_inputs()
        mine = {
            "v": np.asarray(v, dtype=np.float64),
            "theta": np.asarray(q.theta or 0.0, dtype=np.float64),
            "theta2": np.asarray(q.theta2 or 0.0, dtype=np.float64),
        }
        wire.send_bytes(self.sock, wire.json_frame({"type": "go"}) + self.party.share_inputs(mine))
        out = self.party.compute(spec)
        assert out is not None
        value, e2, beta = (float(np.asarray(x).reshape(-1)[0]) for x in out)
        ans = answer_json(function, value, e2, beta > 0.5, int((v > 0.5).sum()), time.perf_counter() - t0)
        ans.update(
            {"epsilon": acc["epsilon"], "epsilon_left": acc["epsilon_left"], "n_rect": int(acc["n_rect"])}
        )
        if ans["beta"]:
            ans["noisy_error2"] = e2
            ans.update(self._error2_scale(spec, e2, int((v > 0.5).sum())))
        return ans

    def _error2_scale(self, spec: QuerySpec, e2: float, n_cells: int) -> dict[str, Any]:
        """The scale of the noisy squared error from public figures only (:func:`error2_interval`): the server's
        discrete Laplace on the 2^-18 lattice at the query's epsilon, and the range the program clamps to."""
        from urbandp.mpc._spec import FXP_FRACTION_BITS
        from urbandp.sensing._queries import error2_interval, error2_range

        lo, hi = error2_range(spec.function, n_cells, spec.sigma2_min, spec.sigma2_max, spec.steepness)
        units = spec.lattice_scale(float(self.params["epsilon_per_query"]))
        return error2_interval(e2, units * 2.0**-FXP_FRACTION_BITS, lo, hi)

    def close(self) -> None:
        with contextlib.suppress(wire.PeerError):
            wire.send_json(self.sock, {"type": "bye"})
        self.party.close()
        self.sock.close()
