"""Run many queries over one connection in a separate process (keeps JAX's threads out of the pytest process,
where a later os.fork could deadlock). Reads ``{"server": ..., "queries": [...]}`` as JSON on stdin and prints
the answers as one JSON list."""

from __future__ import annotations

import json
import sys

import numpy as np

from urbandp.mpc._client import Client


def main() -> None:
    job = json.load(sys.stdin)
    c = Client(job["server"], client_id="tests")
    out = []
    try:
        for q in job["queries"]:
            out.append(
                c.query(
                    q["function"],
                    tuple(q["rect"]),
                    vector=np.asarray(q["vector"], dtype=float),
                    theta=q.get("theta"),
                    theta2=q.get("theta2"),
                )
            )
    finally:
        c.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
