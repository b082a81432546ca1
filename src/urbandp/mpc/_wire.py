"""Length-prefixed plain bytes between the two parties (never pickle).

A frame is a 4-byte big-endian length and that many bytes. Control messages are one frame of UTF-8 JSON;
SPU shares travel as a frame of ``meta`` followed by one frame per chunk, preceded by a JSON header that gives
the chunk count. Every receive has a time-out; a closed connection, an oversized or malformed frame raises
:class:`PeerError` with one clear line.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

from urbandp.errors import InputError

MAX_FRAME = 256 * 1024 * 1024  # 256 MiB: far above any share of a 500-cell query
PROTOCOL = "urbandp-prac2pc/2"  # /2: input shares travel with accept/go (one message each way)


class PeerError(Exception):
    """The other party is missing, timed out, closed the connection or sent something malformed."""


def parse_hostport(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``--listen``, ``--server``) as the host and a port in 1..65535."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def no_delay(sock: socket.socket) -> None:
    """Disable Nagle's algorithm: a message is several small frames, and Nagle + delayed ACK held each share
    back ~40 ms (measured: ~90 ms of a 0.45 s warm query)."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def frame(data: bytes) -> bytes:
    """One frame: 4-byte big-endian length, then ``data``."""
    if len(data) > MAX_FRAME:
        raise PeerError(f"refusing to send a frame of {len(data)} bytes (max {MAX_FRAME})")
    return struct.pack(">I", len(data)) + data


def json_frame(obj: dict[str, Any]) -> bytes:
    return frame(json.dumps(obj, allow_nan=False).encode("utf-8"))


def share_frames(meta: bytes, chunks: list[bytes]) -> bytes:
    """A share as frames: a JSON header with the chunk count, ``meta``, one frame per chunk."""
    return json_frame({"type": "share", "chunks": len(chunks)}) + frame(meta) + b"".join(map(frame, chunks))


def send_bytes(sock: socket.socket, data: bytes) -> None:
    """Send already framed bytes (several messages in one ``sendall``: one segment, no round trip between)."""
    try:
        sock.sendall(data)
    except OSError as err:
        raise PeerError(f"connection to the peer lost while sending ({err})") from None


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(min(n - len(buf), 1 << 20))
        except TimeoutError:
            raise PeerError(f"the peer sent nothing for {sock.gettimeout():g} s (time-out)") from None
        except OSError as err:
            raise PeerError(f"connection to the peer lost ({err})") from None
        if not chunk:
            raise PeerError("the peer closed the connection")
        buf += chunk
    return bytes(buf)


def recv_frame(sock: socket.socket) -> bytes:
    (n,) = struct.unpack(">I", _recv_exact(sock, 4))
    if n > MAX_FRAME:
        raise PeerError(f"the peer announced a frame of {n} bytes (max {MAX_FRAME}); not a urbandp party?")
    return _recv_exact(sock, n)


def send_json(sock: socket.socket, obj: dict[str, Any]) -> None:
    send_bytes(sock, json_frame(obj))


def send_error(sock: socket.socket, message: str) -> None:
    """Refuse a request in one line: the peer's :func:`recv_json` raises it as :class:`PeerError`."""
    send_json(sock, {"type": "error", "message": message})


def recv_json(sock: socket.socket, expect: str | None = None) -> dict[str, Any]:
    """One JSON object; ``{"type": "error"}`` from the peer is raised as :class:`PeerError` with its message."""
    raw = recv_frame(sock)
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise PeerError("the peer sent a malformed message (not UTF-8 JSON)") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise PeerError("the peer sent a malformed message (no 'type')")
    if obj["type"] == "error":
        raise PeerError(f"the peer refused: {obj.get('message', '(no message)')}")
    if expect is not None and obj["type"] != expect:
        raise PeerError(f"protocol error: expected a {expect!r} message, got {obj['type']!r}")
    return obj


def recv_share(sock: socket.socket, max_chunks: int = 4096) -> tuple[bytes, list[bytes]]:
    head = recv_json(sock, "share")
    n = head.get("chunks")
    if not isinstance(n, int) or not 0 < n <= max_chunks:
        raise PeerError(f"protocol error: bad chunk count {n!r}")
    meta = recv_frame(sock)
    return meta, [recv_frame(sock) for _ in range(n)]
