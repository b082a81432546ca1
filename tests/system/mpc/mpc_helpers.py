"""Helpers shared by the mpc system tests (imported by path: tests are not a package)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import numpy as np


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def random_grid(path: Path, seed: int, side: int = 20) -> Path:
    """A side x side grid of 500 m cells with PM2.5-like means and GP-like variances."""
    rng = np.random.default_rng(seed)
    n = side * side
    rows, cols = np.divmod(np.arange(n), side)
    lat = 22.50 + rows * 0.0045
    lon = 88.30 + cols * 0.0049
    mu = rng.uniform(10, 200, n)
    s2 = rng.uniform(1, 120, n)
    lines = ["cell_id,lat,lon,window,mu,sigma2"]
    lines += [
        f"{i},{lat[i]:.6f},{lon[i]:.6f},2024-01-01T08:00,{float(mu[i])!r},{float(s2[i])!r}" for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def wait_for_port(port: int, proc: subprocess.Popen[bytes], seconds: float = 60.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.close()
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("server did not start listening")
