"""`urbandp mpc serve` / `urbandp mpc query` as a user runs them: two processes, real noise, per-client budget,
clear errors; `sensing query --cells` prints the same keys."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from urbandp.mpc import spu_missing_reason

sys.path.insert(0, str(Path(__file__).parent))
from mpc_helpers import free_port, random_grid, wait_for_port
from warm_process import run_warm

REASON = spu_missing_reason(in_process=False)
KEYS = ["function", "value", "error", "beta", "n_cells", "seconds"]


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_warm(list(args), timeout=timeout)


def test_missing_server_is_one_clear_line(tmp_path: Path) -> None:
    missing = _cli("mpc", "query", "--rect", "1,2,3,4", "--cells", str(tmp_path / "c.txt"))
    assert missing.returncode == 2 and missing.stderr.startswith(
        "urbandp: error: --cells "
    )  # before SPU is needed
    if REASON is not None:
        cells = tmp_path / "c.txt"
        cells.write_text("1\n2\n")
        res = _cli("mpc", "query", "--rect", "1,2,3,4", "--cells", str(cells))
        assert res.returncode == 2 and "SecretFlow SPU is not usable" in res.stderr
        return

    cells = tmp_path / "c.txt"
    cells.write_text("1\n2\n")
    res = _cli(
        "mpc", "query", "--server", f"127.0.0.1:{free_port()}", "--rect", "1,2,3,4", "--cells", str(cells)
    )
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1].startswith("urbandp: error: cannot reach the server")


@pytest.mark.system
def test_a_bad_rect_is_refused_as_sensing_query_refuses_it_before_spu_is_needed(tmp_path: Path) -> None:
    cells, route = tmp_path / "c.txt", tmp_path / "r.geojson"
    cells.write_text("1\n")
    route.write_text("{}")
    for command in (["query", "--cells", str(cells)], ["routes", "--route", str(route)]):
        res = _cli("mpc", *command, "--rect", "1,2")
        assert res.returncode == 2
        assert res.stderr.strip() == "urbandp: error: --rect needs 4 comma-separated numbers, got '1,2'"


@pytest.mark.skipif(REASON is not None, reason=f"mpc extra absent: {REASON}")
def test_serve_query_budget_and_plaintext_keys(tmp_path: Path) -> None:
    grid = random_grid(tmp_path / "grid.csv", seed=3)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "urbandp", "mpc", "serve", "--grid", str(grid), "--listen", f"127.0.0.1:{port}",
         "--alpha", "3", "--epsilon", "0.5", "--epsilon-budget", "1.0", "--sigma2-max", "120",
         "--budget-store", str(tmp_path / "budget.sqlite")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for_port(port, server)  # type: ignore[arg-type]
        # a misbehaving peer (garbage instead of a hello) is dropped; the server goes on serving
        import socket

        with socket.create_connection(("127.0.0.1", port)) as junk:
            junk.sendall(b"\xff\xff\xff\xffnot a urbandp client")
        cells = tmp_path / "cells.txt"
        cells.write_text("# my route\n0\n1\n2\n21\n22\n")
        rect = "22.4999,88.2999,22.5136,88.3148"  # 4 x 4 cells: ids 0-3, 20-23, 40-43, 60-63
        base = ["mpc", "query", "--server", f"127.0.0.1:{port}", "--rect", rect, "--cells", str(cells)]
        first = _cli(*base, "--client-id", "alice")
        assert first.returncode == 0, first.stderr
        ans = json.loads(first.stdout)  # stdout is exactly one JSON object
        assert list(ans) == KEYS and ans["beta"] is True and ans["n_cells"] == 5
        # the noisy error lies in its public range [sigma2_min / n, sigma2_max / n]
        assert 0.0 <= ans["error"] ** 2 <= 120 / 5 + 1e-6
        plain = _cli(
            "sensing", "query", str(grid), "--rect", rect, "--cells", str(cells),
            "--alpha", "3", "--sigma2-min", "0", "--sigma2-max", "120",
        )  # fmt: skip
        assert plain.returncode == 0, plain.stderr
        ref = json.loads(plain.stdout)
        assert list(ref) == KEYS and ref["n_cells"] == 5
        assert ans["value"] == pytest.approx(ref["value"], rel=1e-3)
        second = _cli(*base, "--client-id", "alice", "--function", "max")
        assert second.returncode == 0, second.stderr
        third = _cli(*base, "--client-id", "alice")
        assert third.returncode == 2
        assert "privacy budget exhausted for client 'alice'" in third.stderr
        assert "1 of 1 already spent (0 left)" in third.stderr
        other = _cli(*base, "--client-id", "bob", "--function", "count", "--theta", "100")
        assert other.returncode == 0, other.stderr
        assert json.loads(other.stdout)["function"] == "count"
    finally:
        server.terminate()
        _, log = server.communicate(timeout=10)
    assert "announced a frame of 4294967295 bytes" in log  # the junk peer, reported in one line
