"""``ud.budget``: a dataset's privacy budget from Python, the same operations as ``urbandp budget init|show|history``.

A release booked in the store through ``ud.Session(store=..., dataset=...)`` counts against these caps; a release
that would pass one is refused before any noise (:class:`urbandp.BudgetExceededError`). The figures are the ones
each release's privacy.json states (its window loss, for a unit present on all of its days), booked as stated.
Every cap set or changed is recorded with who changed it (``operator``), as the command line does.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urbandp._arguments import check_keywords, check_name, check_number, check_path
from urbandp._privacy.budget_store import SPANNING_UNITS, BudgetStore, DatasetCaps, budget_left, open_store
from urbandp.errors import InputError, InvalidParameterError

__all__ = ["BudgetStatus", "Remaining", "declare", "history", "remaining", "show"]


@dataclass(frozen=True)
class Remaining:
    """What is left of each declared cap (None: no cap of that kind).

    ``epsilon_per_day``: the least left on any day already charged (the cap itself on a day not charged yet).
    """

    epsilon_total: float | None
    rho_total: float | None
    delta_total: float | None
    epsilon_per_day: float | None


@dataclass(frozen=True)
class BudgetStatus:
    """A dataset's caps and what its releases have spent (``urbandp budget show``)."""

    caps: DatasetCaps
    epsilon_per_day: dict[str, float]
    """Epsilon charged on each calendar day (ISO date -> epsilon per unit-day)."""
    rho_per_day: dict[str, float]
    delta_per_day: dict[str, float]
    epsilon_spent: float
    """Over all releases: the sum of each release's window epsilon (a unit present on all of its days)."""
    rho_spent: float
    delta_spent: float
    remaining: Remaining

    @property
    def protects(self) -> str:
        """Whom the figures over all releases are for."""
        unit = self.caps.unit
        return (
            f"a {unit.removesuffix('-day')} present on every day" if unit in SPANNING_UNITS else f"one {unit}"
        )


@check_keywords
def declare(
    store: str | Path | None,
    dataset: str,
    *,
    unit: str,
    epsilon_per_day: float | None = None,
    epsilon_total: float | None = None,
    rho_per_day: float | None = None,
    rho_total: float | None = None,
    delta_total: float | None = None,
    operator: str | None = None,
) -> DatasetCaps:
    """Declare ``dataset`` in ``store`` (a SQLite path or a ``postgresql://`` URL; None: ``$URBANDP_BUDGET_STORE``,
    else ``./urbandp-budget.sqlite``) with its privacy unit and caps, or change the caps of a declared dataset
    (never below what is already spent; caps not given are kept). Returns the caps now in force."""
    name = str(check_name(dataset, "dataset"))
    caps = {
        "epsilon_per_day": epsilon_per_day,
        "epsilon_total": epsilon_total,
        "rho_per_day": rho_per_day,
        "rho_total": rho_total,
        "delta_total": delta_total,
    }
    # each cap None, or a finite real number >= 0 (a bool or a string is refused); their ranges: DatasetCaps
    checked = {k: None if v is None else check_number(v, k, minimum=0) for k, v in caps.items()}
    declared = DatasetCaps(name, str(check_name(unit, "unit")), **checked)
    if operator is not None and not isinstance(operator, str):  # the store checks the text (a one-line name)
        raise InvalidParameterError(f"operator must be a string, got {operator!r}", parameters="operator")
    with closing(
        open_store(check_path(store, "store", optional=True), operator=operator)
    ) as db:  # the store refuses a blank name
        return db.init_dataset(declared)


@check_keywords
def show(store: str | Path | None, dataset: str) -> BudgetStatus:
    """The caps of ``dataset`` and what its releases have spent, per day and over all releases."""
    name = str(check_name(dataset, "dataset"))
    with closing(open_store(check_path(store, "store", optional=True), create=False)) as db:
        return _status(db, name)


@check_keywords
def remaining(store: str | Path | None, dataset: str) -> Remaining:
    """What is left of each cap of ``dataset`` (the counterpart of Tumult's ``remaining_privacy_budget``)."""
    return show(store, dataset).remaining


@check_keywords
def history(store: str | Path | None, dataset: str) -> list[dict[str, Any]]:
    """Every release charged to ``dataset`` (``kind: "release"``: status, days, window epsilon and delta,
    mechanism, content hash, operator, command line) and every change of its caps (``kind: "cap change"``: who,
    when, old and new value), by time."""
    name = str(check_name(dataset, "dataset"))
    with closing(open_store(check_path(store, "store", optional=True), create=False)) as db:
        _caps(db, name)
        releases = [{"kind": "release", "at": r["reserved_at"], **r} for r in db.history(name)]
        changes = [{"kind": "cap change", "at": c["changed_at"], **c} for c in db.cap_changes(name)]
    return sorted(changes + releases, key=lambda e: (e["at"], e["kind"] == "release"))


def _caps(db: BudgetStore, name: str) -> DatasetCaps:
    """The caps of ``name``; a dataset never declared is refused naming ``dataset``."""
    try:
        return db.caps(name)
    except InputError as err:
        raise InvalidParameterError(str(err), parameters="dataset") from None


def _status(db: BudgetStore, name: str) -> BudgetStatus:
    caps = _caps(db, name)
    spend = db.spend_per_day(name)
    eps = db.epsilon_spent(name)
    rho = db.group_rho_spent(name)
    delta = db.delta_spent(name)
    day_eps = {day: e for day, (e, _) in spend.items()}

    def left(cap: float | None, spent: float) -> float | None:
        return None if cap is None else budget_left(cap, spent)

    return BudgetStatus(
        caps=caps,
        epsilon_per_day=day_eps,
        rho_per_day={day: r for day, (_, r) in spend.items()},
        delta_per_day=db.delta_per_day(name),
        epsilon_spent=eps,
        rho_spent=rho,
        delta_spent=min(delta, 1.0),
        remaining=Remaining(
            left(caps.epsilon_total, eps),
            left(caps.rho_total, rho),
            None if caps.delta_total is None else max(caps.delta_total - delta, 0.0),  # no epsilon tolerance
            left(caps.epsilon_per_day, max(day_eps.values(), default=0.0)),
        ),
    )
