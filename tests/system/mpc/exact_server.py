"""Test-only server WITHOUT noise (Tumult-style infinite budget): NOT differentially private.

Run as ``python exact_server.py GRID PORT ALPHA SIGMA2_MIN SIGMA2_MAX RHO STEEPNESS`` by the system tests, so
that the secure answers can be compared with the plaintext reference exactly. The CLI offers no such mode.
"""

from __future__ import annotations

import sys
from pathlib import Path

from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp.mpc._server import Server, ServerGrid
from urbandp.mpc._spec import ServeOptions


def main() -> None:
    grid, port, alpha, smin, smax, rho, k = sys.argv[1:8]
    cfg = ServeOptions(
        grid=Path(grid),
        listen=f"127.0.0.1:{port}",
        alpha=int(alpha),
        epsilon=1.0,
        epsilon_budget=1e9,
        sigma2_min=float(smin),
        sigma2_max=float(smax),
        rho=float(rho),
        steepness=float(k),
    )
    noise = ExactNoiseForTesting(acknowledge_not_private=True)
    store = str(
        Path(grid).with_name("exact-server-budget.sqlite")
    )  # beside the test's grid, never in the cwd
    # A server is refused a noise source that is not private (its queries are booked to a budget dataset): it is
    # built with OpenDP's, then the exact source replaces it, so that this test-only process (never a release, its
    # store a throwaway file) answers exactly.
    server = Server(
        ServerGrid.read(Path(grid), None),
        cfg,
        noise=OpenDPNoise(),
        budget_store=store,
    )
    server.noise = noise
    server.log = lambda msg: print(msg, file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
