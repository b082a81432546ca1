"""The secure answers equal the plaintext reference (urbandp.sensing.queries) within 1e-3 relative (the squared
error: or a few fixed-point lattice steps when it is tiny), and the threshold bit exactly, over random grids, rectangles and selections; one server process for the module, one
connection for many queries (noise-free test server, see exact_server.py)."""

from __future__ import annotations

import numpy as np
import pytest

from urbandp.mpc import spu_missing_reason
from urbandp.mpc.spec import MAX_CELLS
from urbandp.sensing.queries import clamp_sigma2, error2_range, rectangle_mask, run_query

REASON = spu_missing_reason()
pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(REASON is not None, reason=f"mpc extra absent: {REASON}"),
]

FUNCTIONS = ["average", "min", "max", "min-exact", "max-exact", "count", "range"]


def _reference(grid_csv, params, function, rect, v, theta, theta2):  # type: ignore[no-untyped-def]
    import polars as pl

    g = pl.read_csv(grid_csv).sort("cell_id")
    mask = rectangle_mask(g["lat"].to_numpy(), g["lon"].to_numpy(), rect)
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


@pytest.fixture(scope="module")
def client(exact_server):  # type: ignore[no-untyped-def]
    from urbandp.mpc.client import Client

    address, _, _ = exact_server
    c = Client(address, client_id="tests")
    yield c
    c.close()


def test_all_functions_match_plaintext_on_random_selections(client, exact_server) -> None:  # type: ignore[no-untyped-def]
    _, grid, params = exact_server
    rng = np.random.default_rng(2024)
    checked = 0
    for function in FUNCTIONS:
        for _ in range(2):
            # random rectangle of the 20 x 20 grid (rows 0.0045 deg, cols 0.0049 deg apart)
            r0, c0 = rng.integers(0, 10, 2)
            h, w = rng.integers(3, 11, 2)
            rect = (
                22.50 + r0 * 0.0045 - 1e-4,
                88.30 + c0 * 0.0049 - 1e-4,
                22.50 + (r0 + h - 1) * 0.0045 + 1e-4,
                88.30 + (c0 + w - 1) * 0.0049 + 1e-4,
            )
            n_rect = int(h * w)
            assert n_rect <= MAX_CELLS
            v = (rng.random(n_rect) < rng.uniform(0.2, 0.9)).astype(float)
            v[rng.integers(0, n_rect, 3)] = 1.0  # at least alpha = 3 cells
            theta, theta2 = float(rng.uniform(40, 120)), None
            if function == "range":
                theta2 = theta + float(rng.uniform(10, 60))
            ans = client.query(function, rect, vector=v, theta=theta, theta2=theta2)
            ref, err = _reference(grid, params, function, rect, v, theta, theta2)
            assert ans["beta"] is True and ref.answered
            assert ans["n_cells"] == ref.n_selected
            what = f"{function} over {ref.n_selected} of {n_rect} cells"
            assert ans["value"] == pytest.approx(ref.value, rel=1e-3, abs=1e-3), what
            # E^2 lives on SPU's 2^-18 fixed-point lattice: 1e-3 relative, or a few lattice steps per cell
            # (16 * 2^-18 each) where E^2 itself is that small (a COUNT far from theta)
            assert ans["error"] ** 2 == pytest.approx(err**2, rel=1e-3, abs=n_rect * 16 * 2**-18), what
            checked += 1
    assert checked == 2 * len(FUNCTIONS)


def test_threshold_bit_is_exact_and_zeroes_everything(client, exact_server) -> None:  # type: ignore[no-untyped-def]
    rect = (22.4999, 88.2999, 22.5136, 88.3148)  # 4 x 4 cells
    for k in (0, 1, 2, 3, 4):
        v = np.zeros(16)
        v[:k] = 1.0
        ans = client.query("average", rect, vector=v)
        assert ans["beta"] is (k >= 3)
        if k < 3:
            assert ans["value"] is None and ans["error"] is None


def test_weights_are_forced_to_zero_one(client, exact_server) -> None:  # type: ignore[no-untyped-def]
    """A client that feeds 1000 on one cell and 1 elsewhere gets the plain average, not that cell's value."""
    _, grid, params = exact_server
    rect = (22.4999, 88.2999, 22.5136, 88.3148)
    v = np.zeros(16)
    v[:4] = 1.0
    v[5] = 1000.0
    ans = client.query("average", rect, vector=v)
    ref, _ = _reference(grid, params, "average", rect, v, None, None)
    assert ans["n_cells"] == 5 and ref.n_selected == 5
    assert ans["value"] == pytest.approx(ref.value, rel=1e-3)
    v[5] = -1000.0  # negative weights count as not selected
    ans = client.query("average", rect, vector=v)
    assert ans["value"] == pytest.approx(
        _reference(grid, params, "average", rect, v, None, None)[0].value, rel=1e-3
    )
