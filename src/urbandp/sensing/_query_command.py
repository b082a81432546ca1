"""`urbandp sensing query`, the command's side: the printed answer of :func:`urbandp.sensing.query`."""

from __future__ import annotations

import sys

from urbandp.sensing._query_release import QueryAnswer


def print_answer(rel: QueryAnswer) -> None:
    """What `sensing query` prints: the answer on stdout, a summary (or the refusal) on stderr."""
    from urbandp._outputs import dumps_strict

    res = rel.result
    print(dumps_strict(rel.printed, indent=None))
    if not res.answered:
        n = rel.answer["cells_selected"]
        print(
            f"refused: {n} cells selected < alpha = {rel.answer['alpha']} (nothing released)", file=sys.stderr
        )
    else:
        from urbandp.sensing._queries import describe_error2

        print(
            f"{rel.answer['query']} over {res.n_selected} cells: value {res.value:.4f} (not DP), "
            f"{describe_error2(res.noisy_error2, res.error2_scale())}; epsilon {res.epsilon:.6g}, per reading",
            file=sys.stderr,
        )
