"""What a survey release publishes besides its noisy column, and what stays with the owner.

* Columns copied through: only those the user names, each one the user's declaration that the column is public
  (``public_columns`` in ``privacy.json``; not a "not DP" reason: the noisy column is DP *given* them).
* Nothing computed from the true data goes to ``privacy.json``; it goes to ``owner_only/<name>/input_report.json``.
  Both rules are stated in docs/survey.md, sections "What a release contains" and "privacy.json holds nothing
  computed from the true data".
* One limit on epsilon: :func:`check_epsilon` runs the core guard (:data:`urbandp._privacy.guards.SANE_EPSILON`)
  on the epsilon the user asked for, before any clamping a mechanism might apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from urbandp.errors import InvalidParameterError
from urbandp.survey._io import require_columns

PUBLIC_NOTE = (
    "declared public by the user: copied unchanged, not protected by the noise; the release is DP for its noisy "
    "columns given these columns (a column that is not public must not be named: then it is dropped)"
)
OWNER_NOTE = "exact counts of the true data, for the data owner only; NOT DP, never published"


def check_epsilon(
    epsilon: float | None, unit: str, what: str = "epsilon", parameters: tuple[str, ...] = ("epsilon",)
) -> None:
    """Refuse an asked epsilon above the core's one limit (``SANE_EPSILON``), as the core guard decides.

    ``what`` names the epsilon in the message (its first word is what to make smaller) and ``parameters`` are
    the parameters it mentions (the command line shows them as flags). The survey commands have no
    ``--allow-meaningless-epsilon``: the guard's reasons are asked for (``allow``) and turned into a refusal that
    does not point at a flag these commands lack.
    """
    if epsilon is None:
        return
    from urbandp._privacy import guards
    from urbandp._privacy.loss import Loss

    reasons = guards.meaningless_reasons(Loss.pure(epsilon), None, per=unit, allow=True)
    if reasons:
        raise InvalidParameterError(
            f"{what} {epsilon:g} is above {guards.SANE_EPSILON:g} per {unit}: the noise would protect nobody; "
            f"use a smaller {what.split()[0]}",
            parameters=parameters,
        )


def exactly_one(**given: object) -> None:
    """Refuse unless exactly one of the two options named as keywords is given (not None)."""
    (a, x), (b, y) = given.items()
    if (x is None) == (y is None):
        raise InvalidParameterError(f"give exactly one of {a} or {b}", parameters=(a, b))


def public_columns(
    frame: pl.DataFrame,
    path: Path,
    keep: str | None,
    id_column: str | None,
    needed: Mapping[str, str],
    protected: Sequence[str],
    options: Sequence[str] = ("id_column", "keep_columns"),
) -> dict[str, str]:
    """The columns copied through, each with the parameter that named it: ``id_column``, ``keep_columns`` and
    ``needed`` (parameter -> column).

    Refuses a column that is missing or that is also a protected (noisy) column; ``options`` are the release's
    parameters that name copied columns (the advice of that refusal).
    """
    named: dict[str, str] = {}
    for option, col in needed.items():
        named.setdefault(col, option)
    if id_column:
        named.setdefault(id_column, "id_column")
    for col in (c.strip() for c in (keep or "").split(",")):
        if col:
            named.setdefault(col, "keep_columns")
    require_columns(frame, path, *named)
    clash = [c for c in named if c in protected]
    if clash:
        raise InvalidParameterError(
            f"{', '.join(clash)}: a column cannot be both perturbed and copied through unchanged "
            f"(remove it from {'/'.join(options)})",
            parameters=tuple(options),
        )
    return named


def select_released(frame: pl.DataFrame, public: Mapping[str, str], protected: Sequence[str]) -> pl.DataFrame:
    """Only the public and the protected columns, in the input's order; every other column is dropped."""
    keep = set(public) | set(protected)
    return frame.select([c for c in frame.columns if c in keep])


def declaration(public: Mapping[str, str]) -> dict[str, object]:
    """privacy.json's ``public_columns``: the user's declaration (column -> the option that named it)."""
    return {"columns": dict(public), "note": PUBLIC_NOTE}


def input_report(counts: Mapping[str, object]) -> dict[str, object]:
    """``owner_only/<name>/input_report.json``: what the run saw in the true data."""
    return {"not_dp": OWNER_NOTE, **counts}
