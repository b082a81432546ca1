"""Shared fixtures of the mpc system tests: skip without SPU; start a server process; random grids."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from urbandp.mpc import spu_missing_reason

sys.path.insert(0, str(Path(__file__).parent))
from mpc_helpers import free_port, random_grid, wait_for_port

REASON = spu_missing_reason(in_process=False)
HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def exact_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, dict[str, float]]]:
    """A no-noise server process on a random grid: yields (HOST:PORT, grid path, public params)."""
    if REASON is not None:
        pytest.skip(f"mpc extra absent: {REASON}")
    grid = random_grid(tmp_path_factory.mktemp("mpc") / "grid.csv", seed=7)
    params = {"alpha": 3, "sigma2_min": 0.5, "sigma2_max": 100.0, "rho": 0.5, "steepness": 0.2}
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "exact_server.py"), str(grid), str(port)]
        + [str(params[k]) for k in ("alpha", "sigma2_min", "sigma2_max", "rho", "steepness")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, proc)
        # the probe connection above makes the server log a protocol error and go on: harmless
        yield f"127.0.0.1:{port}", grid, params
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
