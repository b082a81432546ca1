"""One party's SPU session: the brpc link to the peer, the CHEETAH runtime, compiled programs, and the exchange
of input/output shares over the control socket (length-prefixed plain bytes, :mod:`urbandp.mpc._wire`).

SPU 0.9.5 has no ``spu.utils.distributed`` usable here, so we drive ``spu.libspu.link`` + ``spu.Runtime`` +
``spu.Io`` directly (measured while choosing the mpc engine, docs/mpc.md). Rank 0 is the server, rank 1 the client.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import socket
import threading
from typing import Any

import numpy as np

from urbandp.mpc import _wire as wire
from urbandp.mpc._program import build
from urbandp.mpc._spec import FXP_FRACTION_BITS, QuerySpec

SERVER, CLIENT = 0, 1
DUMMY = "min"  # the dummy query uses exp, log and comparisons: it triggers every OT/HE set-up
OWNER = {"mu": SERVER, "sigma2": SERVER, "noise": SERVER, "v": CLIENT, "theta": CLIENT, "theta2": CLIENT}
INPUTS = tuple(OWNER)  # the program's arguments, in order

_compile_lock = threading.Lock()
_compiled: dict[QuerySpec, Any] = {}  # by the public spec (frozen: its fields are the key)


@functools.cache
def _libspu() -> Any:
    import jax

    jax.config.update("jax_enable_x64", True)  # the server's noise must reach SPU exactly (float64 lattice)
    import spu.libspu as libspu

    opts = libspu.logging.LogOptions()  # SPU logs INFO lines on stdout; the CLI's stdout is one JSON object
    opts.log_level = libspu.logging.LogLevel.WARN
    opts.system_log_path = os.devnull
    libspu.logging.setup_logging(opts)
    return libspu


def runtime_config() -> Any:
    """CHEETAH over the 64-bit ring, 18 fraction bits, real sigmoid and Pade exp (notes: the default sigmoid
    is a straight line)."""
    libspu = _libspu()
    cfg = libspu.RuntimeConfig(
        protocol=libspu.ProtocolKind.CHEETAH, field=libspu.FieldType.FM64, fxp_fraction_bits=FXP_FRACTION_BITS
    )
    cfg.sigmoid_mode = libspu.RuntimeConfig.SigmoidMode.SIGMOID_REAL
    cfg.fxp_exp_mode = libspu.RuntimeConfig.ExpMode.EXP_PADE
    # ONE Goldschmidt iteration (~7e-3 relative error on SPU's reciprocal): each further one is a secure square
    # (HE under CHEETAH: ~55 ms and 0.6 MB per query, measured); program.corrected's Newton step squares the
    # error (<= ~5e-5 measured over n = 1..500), well inside the 1e-3 property tests
    cfg.fxp_div_goldschmidt_iters = 1
    return cfg


def example_inputs(n: int) -> list[np.ndarray]:
    z = np.zeros(n, dtype=np.float64)
    s = np.zeros((), dtype=np.float64)
    return [z, z, s, z, s, s]


def compile_spec(spec: QuerySpec) -> Any:
    """Compile (once per process and spec) the program to an SPU executable; identical on both sides."""
    libspu = _libspu()
    from spu.utils import frontend

    with _compile_lock:
        if spec not in _compiled:
            ex, _ = frontend.compile(
                frontend.Kind.JAX,
                build(spec),
                example_inputs(spec.n_rect),
                {},
                list(INPUTS),
                [libspu.Visibility.VIS_SECRET] * len(INPUTS),
                lambda outs: [f"out{i}" for i in range(len(outs))],
            )
            _compiled[spec] = ex
        return _compiled[spec]


def executable_digest(ex: Any) -> str:
    return hashlib.sha256(bytes(ex.code)).hexdigest()[:16]


def _framed(share: Any) -> bytes:
    """An SPU share as the control socket carries it (:func:`urbandp.mpc._wire.share_frames`)."""
    return wire.share_frames(bytes(share.meta), [bytes(c) for c in share.share_chunks])


def free_link(ctrl: socket.socket) -> str:
    """``HOST:PORT`` of a free port on this side of the control connection ``ctrl``: this party's SPU link."""
    host = ctrl.getsockname()[0]
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return f"{host}:{s.getsockname()[1]}"


class Party:
    """The SPU side of one connection: a brpc link to the peer and a runtime, reused by every query."""

    def __init__(
        self, rank: int, session: str, server_link: str, client_link: str, ctrl: socket.socket, timeout: float
    ) -> None:
        libspu = _libspu()
        from spu import api as spu_api

        desc = libspu.link.Desc()
        desc.id = session
        desc.recv_timeout_ms = int(timeout * 1000)
        desc.http_timeout_ms = int(timeout * 1000)
        desc.connect_retry_times = max(1, int(timeout / 0.2))
        desc.connect_retry_interval_ms = 200
        desc.throttle_window_size = 0
        desc.add_party("server", server_link)
        desc.add_party("client", client_link)
        self.rank = rank
        self.ctrl = ctrl
        self.config = runtime_config()
        try:
            self.link = libspu.link.create_brpc(desc, rank)
        except Exception as err:
            raise wire.PeerError(
                f"cannot open the SPU link to the peer ({str(err).splitlines()[0]})"
            ) from None
        self.runtime = spu_api.Runtime(self.link, self.config)
        self.io = spu_api.Io(2, self.config)

    def share_inputs(self, mine: dict[str, np.ndarray]) -> bytes:
        """Secret-share my inputs: keep my shares, return the peer's as framed bytes for the control socket (the
        caller sends them together with its control message: one ``sendall``, no extra round trip)."""
        libspu = _libspu()
        out = []
        for name in INPUTS:
            if OWNER[name] != self.rank:
                continue
            shares = self.io.make_shares(
                np.asarray(mine[name], dtype=np.float64), libspu.Visibility.VIS_SECRET
            )
            self.runtime.set_var(name, shares[self.rank])
            out.append(_framed(shares[1 - self.rank]))
        return b"".join(out)

    def _recv_share(self) -> Any:
        libspu = _libspu()
        meta, chunks = wire.recv_share(self.ctrl)
        share = libspu.Share()
        share.meta = meta
        share.share_chunks = chunks
        return share

    def receive_inputs(self) -> None:
        """Receive the peer's shares of its inputs (in the fixed order of ``INPUTS``)."""
        for name in INPUTS:
            if OWNER[name] != self.rank:
                self.runtime.set_var(name, self._recv_share())

    def compute(self, spec: QuerySpec) -> list[np.ndarray] | None:
        """Run the program on the shares set by :meth:`share_inputs`/:meth:`receive_inputs`. The server sends
        its output shares to the client (one message), so only the client gets the result (``None`` on the
        server)."""
        ex = compile_spec(spec)
        try:
            self.runtime.run(ex)
        except Exception as err:
            raise wire.PeerError(f"the secure computation failed ({str(err).splitlines()[0]})") from None
        out = [self.runtime.get_var(o) for o in ex.output_names]
        for name in (*INPUTS, *ex.output_names):
            self.runtime.del_var(name)
        if self.rank == SERVER:
            wire.send_bytes(self.ctrl, b"".join(_framed(s) for s in out))
            return None
        return [np.asarray(self.io.reconstruct([self._recv_share(), s])) for s in out]

    def warm_up(self, params: dict[str, Any]) -> None:
        """The dummy query at connect (zeros: no data, no noise, no budget) that absorbs the OT set-up, without a
        control message around it: both parties send their input shares, then receive the peer's (a few KB: the
        socket buffers hold them), then compute."""
        wire.send_bytes(self.ctrl, self.share_inputs(dict(zip(INPUTS, example_inputs(4), strict=True))))
        self.receive_inputs()
        self.compute(QuerySpec.of(DUMMY, 4, params))

    def close(self) -> None:
        with contextlib.suppress(Exception):  # the link may already be gone
            self.link.stop_link()
