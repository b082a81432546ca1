"""`urbandp sensing query --cells FILE`: one JSON answer on stdout with the `mpc query` keys (no SPU needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from urbandp.cli import app

KEYS = ["function", "value", "error", "beta", "n_cells", "seconds"]


def _grid(path: Path) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    mu, s2 = rng.uniform(10, 100, 16), rng.uniform(1, 50, 16)
    rows = ["cell_id,lat,lon,window,mu,sigma2"]
    rows += [
        f"{i},{22.5 + (i // 4) * 0.01},{88.3 + (i % 4) * 0.01},2024-01-01T08:00,{mu[i]},{s2[i]}"
        for i in range(16)
    ]
    path.write_text("\n".join(rows) + "\n")
    return mu, s2


def test_query_cells_prints_the_mpc_keys(tmp_path: Path) -> None:
    mu, _ = _grid(tmp_path / "grid.csv")
    cells = tmp_path / "cells.txt"
    cells.write_text("# route\n0\n1\n5\n6\n\n99\n")  # 99 lies outside the rectangle: ignored with a note
    args = [
        "sensing",
        "query",
        str(tmp_path / "grid.csv"),
        "--rect",
        "22.49,88.29,22.54,88.34",
        "--cells",
        str(cells),
    ]
    res = CliRunner().invoke(app, [*args, "--alpha", "3", "--sigma2-min", "0", "--sigma2-max", "60"])
    assert res.exit_code == 0, res.output
    ans = json.loads(res.stdout.strip().splitlines()[0])
    assert list(ans) == KEYS and ans["beta"] is True and ans["n_cells"] == 4
    assert ans["value"] == pytest.approx(mu[[0, 1, 5, 6]].mean())
    assert 0.0 <= ans["error"] ** 2 <= 60 / 4 + 1e-9  # clamped to the per-reading range [0, sigma2_max / n]
    refused = CliRunner().invoke(app, [*args, "--alpha", "5", "--sigma2-min", "0", "--sigma2-max", "60"])
    assert refused.exit_code == 0
    out = json.loads(refused.stdout.strip().splitlines()[0])
    assert out["beta"] is False and out["value"] is None and out["error"] is None
    cells.write_text("0\nnot-a-cell\n")
    bad = CliRunner().invoke(app, [*args, "--sigma2-min", "0", "--sigma2-max", "60"])
    assert bad.exit_code == 2 and "cells.txt:2: expected one integer cell_id per line" in bad.output
