"""The aggregate query with propagated error (:func:`urbandp.sensing.query`, `urbandp sensing query`): Table III
of the paper on one window of a grid written by `interpolate`, and its squared error released with the Laplace
mechanism (section VII-D, privacy unit one reading).

The value itself is not differentially private (the paper perturbs only the error), so the answer is labelled
NOT DP: it runs in a charge of the Session like every release (the loss guards fire before the one draw, the
noise comes only from the charge), and a session with a dataset refuses it (a NOT DP answer is never booked as
DP spend).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from urbandp.errors import InputDataError, InvalidParameterError
from urbandp.results import Release
from urbandp.sensing._options import QueryOptions

if TYPE_CHECKING:
    from urbandp._session import Session

VALUE_NOT_DP = (
    "the query's value is not differentially private (the paper perturbs only the error, section VII-D)"
)
PRIVACY_UNIT = "one reading (it moves every cell's sigma^2); cell variances within [sigma2_min, sigma2_max]"


@dataclass(repr=False)
class QueryAnswer(Release):
    """The answer of :func:`urbandp.sensing.query`: ``table`` one row (function, value, error, beta, n_cells,
    seconds: what the command prints), ``answer`` the JSON the command writes with ``--out``, ``privacy`` a
    :class:`~urbandp.sensing._report.QueryPrivacyReport` (labelled NOT DP: the value is not DP)."""

    answer: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    """The query's :class:`~urbandp.sensing._queries.QueryResult` (value, noisy squared error, epsilon)."""

    def write(self, out: str | Path, *, overwrite: bool = False) -> dict[str, Path]:
        """Write the answer as JSON to the file ``out`` (an existing file is replaced only with ``overwrite``)."""
        from urbandp._outputs import check_output_file, output_policy

        with output_policy((), overwrite=overwrite):
            check_output_file(Path(out))
            return self.write_file(Path(out))

    def write_file(self, out: Path) -> dict[str, Path]:
        """:meth:`write` under the running output policy."""
        from urbandp._outputs import atomic_output_file, write_json

        with atomic_output_file(out) as tmp:
            write_json(tmp, self.answer)
        return {"answer": out}


def _selection(
    o: QueryOptions, cell_ids: np.ndarray, lat: np.ndarray, lon: np.ndarray
) -> tuple[np.ndarray, list[str]]:
    """The cells of interest among the rectangle's (``select`` box, ``cells`` file, or all), and a note on cells
    of the file outside the rectangle."""
    from urbandp.sensing._queries import read_cells_file, rectangle_mask

    if o.cells is not None:
        wanted = set(read_cells_file(o.cells))
        v = np.isin(cell_ids, sorted(wanted))
        outside = len(wanted) - int(v.sum())
        notes = [f"{outside} cell(s) of {o.cells} lie outside rect and are ignored"] if outside else []
        return v, notes
    if o.select is not None:
        return rectangle_mask(lat, lon, o.select), []
    return np.ones(cell_ids.size, dtype=bool), []


def _days(window: str) -> list[Any]:
    """The day of the grid window (the reservation's day)."""
    from urbandp._privacy.session import days_between

    try:
        return days_between(window[:10], window[:10])
    except ValueError:
        raise InvalidParameterError(f"window {window!r} does not start with an ISO date") from None


def run_sensing_query(grid: Path, o: QueryOptions, session: Session, out: Path | None = None) -> QueryAnswer:
    """Answer the query on ``grid`` in a charge of ``session`` (written to the file ``out`` when given)."""
    from urbandp._outputs import check_output_file
    from urbandp._privacy.loss import Loss
    from urbandp.sensing._queries import clamp_sigma2, privatize_error, read_grid_window, run_query

    if out is not None:
        check_output_file(out)
    # only the window's cells inside rect are read (Parquet: one row group; see queries.read_grid_window)
    w, cell_ids, lat, lon, mu, s2_raw = read_grid_window(grid, o.window, o.rect)
    if cell_ids.size == 0:
        raise InputDataError("rect contains no cell centroid", parameters="rect")
    bad = int((~(np.isfinite(mu) & np.isfinite(s2_raw))).sum())
    if bad:  # the answer would be nan, and its squared error clamped to a bound: nothing worth a DP label
        raise InputDataError(
            f"{grid}: {bad:,} of {cell_ids.size:,} cells of window {w} in rect have a missing or non-finite mu "
            "or sigma2 (as mpc serve refuses them); interpolate the window again",
            parameters="rect",
        )
    assert o.sigma2_min is not None and o.sigma2_max is not None
    s2 = clamp_sigma2(s2_raw, o.sigma2_min, o.sigma2_max)
    v, notes = _selection(o, cell_ids, lat, lon)
    charge = session.charge("reading")
    with charge:
        charge.refuse_not_dp([VALUE_NOT_DP])  # refused with a dataset, before any noise
        params = {"query": o.type, "epsilon": o.epsilon, "alpha": o.alpha, "window": w}
        charge.reserve(Loss.pure(o.epsilon), _days(w), "sensing-query", params)
        started = time.perf_counter()
        res = run_query(o.type, mu, s2, v, o.alpha, o.rho, o.theta, o.theta2, o.steepness)
        res = privatize_error(res, o.type, o.epsilon, o.sigma2_min, o.sigma2_max, charge.noise, o.steepness)
        rel = _answer(
            o, w, int(cell_ids.size), v, res, time.perf_counter() - started, notes, charge.not_dp_reasons
        )
        if out is not None:
            rel.write_file(out)
    session.committed(charge)
    return rel


def _answer(
    o: QueryOptions,
    w: str,
    n_rect: int,
    v: np.ndarray,
    res: Any,
    seconds: float,
    notes: list[str],
    reasons: list[str],
) -> QueryAnswer:
    """The answer: what the command prints, the JSON it writes, the privacy figures."""
    from urbandp.sensing._queries import answer_json
    from urbandp.sensing._report import QueryPrivacyReport, spec_sha256

    printed = answer_json(o.type, res.value, res.noisy_error2, res.answered, int(v.sum()), seconds)
    answer: dict[str, Any] = {
        **printed,
        "query": o.type,
        "window": w,
        "cells_in_rectangle": n_rect,
        "cells_selected": int(v.sum()),
        "alpha": o.alpha,
        "answered": res.answered,
        "value_note": "not differentially private (the paper perturbs only the error, section VII-D)",
        "noisy_error2": res.noisy_error2,
        "noisy_error": None if res.noisy_error2 is None else res.noisy_error2**0.5,
        **res.error2_scale(),
        "epsilon": res.epsilon,
        "privacy_unit": PRIVACY_UNIT,
        "spec_sha256": spec_sha256("query", o),
    }
    privacy = QueryPrivacyReport.from_document(
        {
            "not_dp_reasons": reasons,  # the value's, and the charge's (a noise source that is not private)
            "privacy_unit": PRIVACY_UNIT,
            "query": o.type,
            "epsilon": res.epsilon,
            "spec_sha256": answer["spec_sha256"],
        }
    )
    return QueryAnswer(
        tables={"answer": pl.DataFrame([printed])},
        privacy=privacy,
        warnings=notes,
        answer=answer,
        result=res,
    )
