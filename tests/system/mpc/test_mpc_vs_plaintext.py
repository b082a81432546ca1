"""The secure answers equal the plaintext reference (urbandp.sensing._queries) within 1e-3 relative (the squared
error: or a few fixed-point lattice steps when it is tiny), and the threshold bit exactly, over random grids,
rectangles and selections; one noise-free server process (exact_server.py) and one client process
(drive_client.py) holding one connection for all the queries of the module."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from urbandp.mpc import spu_missing_reason
from urbandp.mpc._spec import MAX_CELLS
from urbandp.sensing._queries import clamp_sigma2, error2_range, rectangle_mask, run_query

REASON = spu_missing_reason(in_process=False)
pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(REASON is not None, reason=f"mpc extra absent: {REASON}"),
]

FUNCTIONS = ["average", "min", "max", "min-exact", "max-exact", "count", "range"]
SMALL_RECT = [22.4999, 88.2999, 22.5136, 88.3148]  # 4 x 4 cells


def _reference(grid_csv, params, function, rect, v, theta, theta2):  # type: ignore[no-untyped-def]
    import polars as pl

    g = pl.read_csv(grid_csv).sort("cell_id")
    mask = rectangle_mask(g["lat"].to_numpy(), g["lon"].to_numpy(), tuple(rect))
    mu = g["mu"].to_numpy()[mask]
    s2 = clamp_sigma2(g["sigma2"].to_numpy()[mask], params["sigma2_min"], params["sigma2_max"])
    vb = np.asarray(v) > 0.5
    res = run_query(function, mu, s2, vb, params["alpha"], params["rho"], theta, theta2, params["steepness"])
    if not res.answered:
        return res, None
    lo, hi = error2_range(
        function, res.n_selected, params["sigma2_min"], params["sigma2_max"], params["steepness"]
    )
    return res, float(np.sqrt(np.clip(res.error2, lo, hi)))


def _random_queries() -> list[dict[str, Any]]:
    rng = np.random.default_rng(2024)
    queries = []
    for function in FUNCTIONS:
        for _ in range(2):
            # random rectangle of the 20 x 20 grid (rows 0.0045 deg, cols 0.0049 deg apart)
            r0, c0 = rng.integers(0, 10, 2)
            h, w = rng.integers(3, 11, 2)
            rect = [
                22.50 + r0 * 0.0045 - 1e-4,
                88.30 + c0 * 0.0049 - 1e-4,
                22.50 + (r0 + h - 1) * 0.0045 + 1e-4,
                88.30 + (c0 + w - 1) * 0.0049 + 1e-4,
            ]
            n_rect = int(h * w)
            assert n_rect <= MAX_CELLS
            v = (rng.random(n_rect) < rng.uniform(0.2, 0.9)).astype(float)
            v[rng.integers(0, n_rect, 3)] = 1.0  # at least alpha = 3 cells
            theta = float(rng.uniform(40, 120))
            theta2 = theta + float(rng.uniform(10, 60)) if function == "range" else None
            queries.append(
                {"function": function, "rect": rect, "vector": v.tolist(), "theta": theta, "theta2": theta2}
            )
    return queries


def _threshold_queries() -> list[dict[str, Any]]:
    out = []
    for k in (0, 1, 2, 3, 4):
        v = np.zeros(16)
        v[:k] = 1.0
        out.append({"function": "average", "rect": SMALL_RECT, "vector": v.tolist()})
    return out


def _weighted_queries() -> list[dict[str, Any]]:
    """A client that feeds 1000 (or -1000) on one cell and 1 on four others."""
    out = []
    for weight in (1000.0, -1000.0):
        v = np.zeros(16)
        v[:4] = 1.0
        v[5] = weight
        out.append({"function": "average", "rect": SMALL_RECT, "vector": v.tolist()})
    return out


@pytest.fixture(scope="module")
def answers(exact_server) -> dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]:  # type: ignore[no-untyped-def]
    address, _, _ = exact_server
    groups = {"random": _random_queries(), "threshold": _threshold_queries(), "weighted": _weighted_queries()}
    flat = [q for qs in groups.values() for q in qs]
    res = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "drive_client.py")],
        input=json.dumps({"server": address, "queries": flat}),
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout)
    out, i = {}, 0
    for name, qs in groups.items():
        out[name] = list(zip(qs, got[i : i + len(qs)], strict=True))
        i += len(qs)
    return out


def test_all_functions_match_plaintext_on_random_selections(answers, exact_server) -> None:  # type: ignore[no-untyped-def]
    _, grid, params = exact_server
    assert len(answers["random"]) == 2 * len(FUNCTIONS)
    for q, ans in answers["random"]:
        ref, err = _reference(grid, params, q["function"], q["rect"], q["vector"], q["theta"], q["theta2"])
        assert ans["beta"] is True and ref.answered
        assert ans["n_cells"] == ref.n_selected
        what = f"{q['function']} over {ref.n_selected} of {len(q['vector'])} cells"
        assert ans["value"] == pytest.approx(ref.value, rel=1e-3, abs=1e-3), what
        # E^2 lives on SPU's 2^-18 fixed-point lattice: 1e-3 relative, or a few lattice steps per cell
        # (16 * 2^-18 each) where E^2 itself is that small (a COUNT far from theta)
        assert ans["error"] ** 2 == pytest.approx(err**2, rel=1e-3, abs=len(q["vector"]) * 16 * 2**-18), what


def test_threshold_bit_is_exact_and_zeroes_everything(answers) -> None:  # type: ignore[no-untyped-def]
    for k, (_, ans) in enumerate(answers["threshold"]):
        assert ans["beta"] is (k >= 3)
        if k < 3:
            assert ans["value"] is None and ans["error"] is None


def test_weights_are_forced_to_zero_one(answers, exact_server) -> None:  # type: ignore[no-untyped-def]
    """Weight 1000 counts as one selected cell, -1000 as none: the plain average, not one cell's value."""
    _, grid, params = exact_server
    (q_pos, a_pos), (q_neg, a_neg) = answers["weighted"]
    ref_pos, _ = _reference(grid, params, "average", q_pos["rect"], q_pos["vector"], None, None)
    ref_neg, _ = _reference(grid, params, "average", q_neg["rect"], q_neg["vector"], None, None)
    assert a_pos["n_cells"] == 5 and ref_pos.n_selected == 5
    assert a_pos["value"] == pytest.approx(ref_pos.value, rel=1e-3)
    assert a_neg["n_cells"] == 4 and a_neg["value"] == pytest.approx(ref_neg.value, rel=1e-3)


def test_many_selected_cells_stay_accurate() -> None:
    """490 and 500 selected cells of a 500-cell rectangle (the cap): E^2 = S / n^2 once divided by n^2 near 2^18,
    where SPU's reciprocal underflows; now (S / n) / n. Within 1e-3 relative, run in SPU's simulator."""
    r = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "simulate_large.py")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(rows) == 4
    for row in rows:
        assert row["beta"] == 1.0, row
        assert row["value_rel"] < 1e-3, row
        assert row["e2_rel"] < 1e-3, row
