"""``urbandp mpc serve``: the fleet's side of Prac2PC (paper VII-A steps 3-5) with a per-client budget.

The server holds ``mu`` and ``sigma^2`` per cell for one window, the threshold ``alpha`` and the public bounds of
the cell variances; it draws the noise of every query itself (OpenDP). Each client connection gets its own SPU
link and runtime, absorbs the OT set-up with a dummy query, then runs any number of queries. Every query costs
``epsilon`` from the client's budget whether or not it is answered (the server never learns ``beta``); a query
beyond the budget is refused with a message saying what was asked and what is left. The budget is kept in the
budget store (:class:`ClientBudget`), so a restart does not reset it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from urbandp._privacy.noise import NoiseSource, OpenDPNoise
from urbandp.errors import InputError
from urbandp.mpc import _wire as wire
from urbandp.mpc._spec import FUNCTIONS, MAX_CELLS, QuerySpec, ServeOptions, draw_noise
from urbandp.sensing._queries import clamp_sigma2, read_grid_window, rectangle_mask


@dataclass
class ServerGrid:
    """One window of the ``sensing interpolate`` grid, sorted by cell id."""

    cell_id: np.ndarray
    lat: np.ndarray
    lon: np.ndarray
    mu: np.ndarray
    sigma2: np.ndarray
    window: str
    source: str = "grid"  # the grid file's name: names the default budget-store dataset

    @classmethod
    def read(cls, path: Path, window: str | None) -> ServerGrid:
        w, cell_id, lat, lon, mu, sigma2 = read_grid_window(path, window, None)
        bad = int((~np.isfinite(np.stack([lat, lon, mu, sigma2])).all(axis=0)).sum())
        if bad:
            raise InputError(
                f"{path}: {bad:,} of {len(cell_id):,} cells of window {w} have a missing or non-finite lat, lon, "
                "mu or sigma2; the server would answer nan"
            )
        return cls(cell_id.astype(np.int64), lat, lon, mu, sigma2, str(w), path.stem)


IDLE_TIMEOUT_S = 600.0
"""Longest wait, in seconds, for a connected client's next query."""


def public_parameters(options: ServeOptions) -> dict[str, Any]:
    """What a client is told: the parameters of the secure program and the budget (``epsilon`` per query), not
    the grid, the address or the time-outs; and the cell limit."""
    shown = options.model_dump(
        include={"alpha", "epsilon_budget", "sigma2_min", "sigma2_max", "rho", "steepness"}
    )
    return {**shown, "epsilon_per_query": options.epsilon, "max_cells": MAX_CELLS}


@dataclass
class ClientBudget:
    """Per-client privacy odometer kept in the budget store (docs/design.md rule 5), so it survives restarts.

    Every query is a release of the store's ``dataset`` (unit: reading) booked on the window's day with the
    client's name in its parameters; a client's spend is the sum of its booked queries, read back from the store,
    and the dataset's own caps bound all clients together (a new ``--client-id`` gets a fresh per-client
    allowance, but never more than the dataset's cap). Without ``--dataset`` the server declares
    ``mpc:<grid>:<window>`` with the sanity cap of epsilon 100 per reading per day.
    """

    total: float
    store_url: str | None
    dataset: str
    day: dt.date
    lock: threading.Lock = field(default_factory=threading.Lock)
    # the server's noise source: the ReleaseCharge that books each query refuses one that is not private
    noise: NoiseSource | None = None

    def spent(self, client: str) -> float:
        from urbandp._privacy.budget_store import open_store

        with contextlib.closing(open_store(self.store_url)) as store:
            history = store.history(self.dataset)
        return math.fsum(
            h["epsilon_sum"]
            for h in history
            if h["mechanism"] == MPC_MECHANISM and h["params"].get("client") == client
        )

    def charge(self, client: str, epsilon: float) -> float:
        """Book ``epsilon`` for ``client`` (committed at once: the answer may be revealed); returns what is left."""
        from urbandp._privacy.loss import Loss
        from urbandp._privacy.session import ReleaseCharge

        with self.lock:
            used = self.spent(client)
            if used + epsilon > self.total * (1 + 1e-12):
                raise InputError(
                    f"privacy budget exhausted for client {client!r}: this query asks epsilon {epsilon:g}, "
                    f"{used:g} of {self.total:g} already spent ({max(self.total - used, 0.0):g} left)"
                )
            with ReleaseCharge(
                self.dataset,
                self.store_url,
                unit="reading",
                noise=self.noise,
                command_line="urbandp mpc serve",
            ) as s:
                s.reserve(Loss.pure(epsilon), [self.day], MPC_MECHANISM, {"client": client})
            return self.total - (used + epsilon)


MPC_MECHANISM = "mpc-query-laplace"


def declare_default_dataset(store_url: str | None, name: str) -> None:
    """Declare ``name`` (unit reading, epsilon 100 per day: the sanity limit) if the store does not hold it."""
    from urbandp._privacy.budget_store import DatasetCaps, open_store
    from urbandp._privacy.guards import SANE_EPSILON

    with contextlib.closing(open_store(store_url)) as store:
        try:
            store.caps(name)
        except InputError:  # not declared yet
            store.init_dataset(DatasetCaps(name, "reading", SANE_EPSILON))


@dataclass
class Server:
    """One window of a grid served on ``config.listen`` to any number of clients, each query booked to
    ``config.dataset`` in the budget store (default ``mpc:<grid>:<window>``, declared when new) and drawn from
    ``noise``."""

    grid: ServerGrid
    config: ServeOptions
    noise: NoiseSource = field(default_factory=OpenDPNoise)
    budget_store: str | None = field(default=None, kw_only=True)
    log: Callable[[str], None] = field(default=print, kw_only=True)

    def __post_init__(self) -> None:
        from urbandp._privacy.session import ReleaseCharge

        self.host, self.port = wire.parse_hostport(self.config.listen)
        self.dataset = self.config.dataset or f"mpc:{self.grid.source}:{self.grid.window}"
        if self.config.dataset is None:
            declare_default_dataset(self.budget_store, self.dataset)
        day = dt.date.fromisoformat(str(self.grid.window)[:10])
        self.budget = ClientBudget(
            self.config.epsilon_budget, self.budget_store, self.dataset, day, noise=self.noise
        )
        # every query is booked to the dataset: a noise source that is not private is refused before any client
        ReleaseCharge(self.dataset, self.budget_store, unit="reading", noise=self.noise).refuse_not_dp([])
        self.params = public_parameters(self.config)  # what clients are told; both compile from it
        self.sigma2 = clamp_sigma2(self.grid.sigma2, self.config.sigma2_min, self.config.sigma2_max)

    def serve_forever(self, ready: threading.Event | None = None) -> None:
        """Serve until ``max_clients`` connections have been served (for ever without it)."""
        max_clients = self.config.max_clients
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as lsock:
            lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                lsock.bind((self.host, self.port))
            except OSError as err:
                raise InputError(f"cannot listen on {self.host}:{self.port} ({err.strerror})") from None
            lsock.listen(8)
            self.log(
                f"urbandp mpc: serving window {self.grid.window} ({len(self.grid.cell_id)} cells) on {self.host}:{self.port}"
            )
            if ready is not None:
                ready.set()
            served = 0
            while max_clients is None or served < max_clients:
                conn, addr = lsock.accept()
                wire.no_delay(conn)
                served += 1
                t = threading.Thread(target=self._client, args=(conn, addr[0]), daemon=True)
                t.start()
                if max_clients is not None and served >= max_clients:
                    t.join()

    def _client(self, conn: socket.socket, peer_ip: str) -> None:
        from urbandp.mpc._party import SERVER, Party, free_link

        party = None
        who = peer_ip
        try:
            conn.settimeout(self.config.timeout)
            hello = wire.recv_json(conn, "hello")
            if hello.get("protocol") != wire.PROTOCOL:
                return wire.send_error(conn, f"protocol {hello.get('protocol')!r} is not {wire.PROTOCOL}")
            who = str(hello.get("client_id") or peer_ip)[:200]
            client_link = str(hello.get("link", ""))
            server_link = free_link(conn)
            session = uuid.uuid4().hex
            wire.send_json(
                conn,
                {
                    "type": "welcome",
                    "protocol": wire.PROTOCOL,
                    "session": session,
                    "link": server_link,
                    "window": self.grid.window,
                    "params": self.params,
                    "epsilon_spent": self.budget.spent(who),
                },
            )
            party = Party(SERVER, session, server_link, client_link, conn, self.config.timeout)
            party.warm_up(self.params)
            self.log(f"client {who}: connected, OT set up")
            conn.settimeout(IDLE_TIMEOUT_S)
            while True:
                msg = wire.recv_json(conn)
                conn.settimeout(self.config.timeout)
                if msg["type"] == "bye":
                    return
                if msg["type"] != "query":
                    raise wire.PeerError(f"protocol error: unexpected message {msg['type']!r}")
                self._query(conn, party, who, msg)
                conn.settimeout(IDLE_TIMEOUT_S)
        except wire.PeerError as err:
            self.log(f"client {who}: {err}")
        except Exception as err:  # one client's failure must not stop the server
            self.log(
                f"client {who}: failed ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
            )
        finally:
            if party is not None:
                party.close()
            conn.close()

    def _query(self, conn: socket.socket, party: Any, who: str, msg: dict[str, Any]) -> None:
        function = msg.get("function")
        rect = msg.get("rect")
        if function not in FUNCTIONS:
            return wire.send_error(conn, f"function must be one of {', '.join(FUNCTIONS)}")
        if not (isinstance(rect, list) and len(rect) == 4 and all(isinstance(x, (int, float)) for x in rect)):
            return wire.send_error(conn, "rect must be 4 numbers lat1,lon1,lat2,lon2")
        mask = rectangle_mask(self.grid.lat, self.grid.lon, tuple(float(x) for x in rect))
        n = int(mask.sum())
        if not 1 <= n <= MAX_CELLS:
            return wire.send_error(conn, f"the rectangle holds {n} cells; it must hold 1..{MAX_CELLS}")
        spec = QuerySpec.of(str(function), n, self.params)
        try:
            left = self.budget.charge(who, self.config.epsilon)
        except InputError as err:
            return wire.send_error(conn, str(err))
        from urbandp.mpc._party import compile_spec, executable_digest

        noise, epsilon = draw_noise(spec, self.config.epsilon, self.noise)
        # the budget is charged above, before anything is revealed; the server's input shares travel in the
        # same message as the acceptance (uniformly random: nothing is revealed if the client then refuses)
        mine = {"mu": self.grid.mu[mask], "sigma2": self.sigma2[mask], "noise": np.asarray(noise)}
        accept = wire.json_frame(
            {
                "type": "accept",
                "n_rect": n,
                "cell_id": self.grid.cell_id[mask].tolist(),
                "lat": self.grid.lat[mask].tolist(),
                "lon": self.grid.lon[mask].tolist(),
                "epsilon": epsilon,
                "epsilon_left": left,
                "digest": executable_digest(compile_spec(spec)),
            }
        )
        wire.send_bytes(conn, accept + party.share_inputs(mine))
        wire.recv_json(conn, "go")  # followed by the client's input shares
        party.receive_inputs()
        party.compute(spec)
        self.log(
            f"client {who}: {function} over a rectangle of {n} cells, epsilon {epsilon:.6g} ({left:.6g} left)"
        )
