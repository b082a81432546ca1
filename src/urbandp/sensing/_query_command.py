"""`urbandp sensing query`, the command's side: flags -> :func:`urbandp.sensing.query` -> the printed answer."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

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


def run_query_command(
    grid_csv: Path,
    rect: str,
    type: str,
    select: str | None,
    cells: Path | None,
    out: Path | None,
    overwrite: bool,
    allow_meaningless_epsilon: bool = False,
    **options: Any,
) -> None:
    """`urbandp sensing query`: flags -> :func:`urbandp.sensing.query` -> the printed answer."""
    import warnings

    from urbandp._session import Session
    from urbandp.results import ReleaseWarning
    from urbandp.sensing._api import query
    from urbandp.sensing._options import parse_numbers

    box = parse_numbers(rect, 4, "rect")
    sel = parse_numbers(select, 4, "select")
    assert box is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)
        rel = query(
            grid_csv,
            rect=(box[0], box[1], box[2], box[3]),
            select=None if sel is None else (sel[0], sel[1], sel[2], sel[3]),
            cells=cells,
            session=Session(allow_meaningless_epsilon=allow_meaningless_epsilon),
            out=out,
            overwrite=overwrite,
            **{**options, "type": type},  # a word of the command line: the model checks it
        )
    for line in rel.warnings:
        print(f"note: {line}", file=sys.stderr)
    print_answer(rel)
