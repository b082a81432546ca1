"""Run the SPU program in SPU's two-party simulator (same runtime config as the parties) for AVERAGE and MIN over
a 500-cell rectangle with many cells selected; print the relative errors against the plaintext reference as JSON.
A separate process, as drive_client.py (JAX's threads stay out of the pytest process)."""

from __future__ import annotations

import json

import numpy as np


def main() -> None:
    import spu.utils.simulation as spsim

    from urbandp.mpc import _party as party
    from urbandp.mpc._program import build
    from urbandp.mpc._spec import MAX_CELLS, QuerySpec
    from urbandp.sensing._queries import run_query

    sim = spsim.Simulator(2, party.runtime_config())  # party.runtime_config enables x64 (exact noise)
    rng = np.random.default_rng(11)
    n = MAX_CELLS
    mu, s2 = rng.uniform(10, 200, n), rng.uniform(1, 120, n)
    out = []
    for function in ("average", "min"):
        fn = spsim.sim_jax(sim, build(QuerySpec(function, n, 3, 1.0, 1.0, 0.0, 120.0)))
        for k in (490, 500):
            v = np.zeros(n)
            v[rng.choice(n, k, replace=False)] = 1.0
            value, e2, beta = fn(mu, s2, np.zeros(()), v, np.asarray(0.0), np.asarray(0.0))
            ref = run_query(function, mu, s2, v > 0.5, 3, 1.0, None, None, 1.0)
            out.append(
                {
                    "function": function,
                    "k": k,
                    "beta": float(beta),
                    "value_rel": abs(float(value) - ref.value) / abs(ref.value),
                    "e2_rel": abs(float(e2) - ref.error2) / ref.error2,
                }
            )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
