"""A privacy ledger: every release charges it in declared units, and overspending is refused.

DESIGN.md privacy rules 2 and 5 (Tumult Analytics' ``Session`` owns the budget; here the ledger does). Basic
sequential composition (Dwork and Roth 2014, Thm 3.16): epsilons and deltas add up.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from urbandp.errors import BudgetExceededError


@dataclass(frozen=True)
class LedgerEntry:
    """One charge: what was released, in which privacy unit, under which neighbouring relation."""

    name: str
    epsilon: float
    delta: float = 0.0
    unit: str = "vehicle-day"
    neighbouring: str = "replace-one"
    mechanism: str = "laplace"
    detail: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (self.epsilon >= 0) or math.isnan(self.epsilon):
            raise ValueError(f"epsilon must be >= 0, got {self.epsilon}")
        if not (0 <= self.delta < 1):
            raise ValueError(f"delta must be in [0, 1), got {self.delta}")


class PrivacyLedger:
    """Tracks (epsilon, delta) spent under basic composition against an optional budget.

    ``budget_epsilon=None`` / ``budget_delta=None`` mean unlimited (the spend is still recorded and reported).
    """

    def __init__(self, budget_epsilon: float | None = None, budget_delta: float | None = None) -> None:
        if budget_epsilon is not None and budget_epsilon <= 0:
            raise ValueError("budget_epsilon must be > 0")
        self.budget_epsilon = budget_epsilon
        self.budget_delta = budget_delta
        self.entries: list[LedgerEntry] = []

    @property
    def epsilon_spent(self) -> float:
        return math.fsum(e.epsilon for e in self.entries)

    @property
    def delta_spent(self) -> float:
        return math.fsum(e.delta for e in self.entries)

    def remaining(self) -> tuple[float, float]:
        eps_left = math.inf if self.budget_epsilon is None else self.budget_epsilon - self.epsilon_spent
        delta_left = math.inf if self.budget_delta is None else self.budget_delta - self.delta_spent
        return eps_left, delta_left

    def check(self, epsilon: float, delta: float = 0.0) -> None:
        """Raise :class:`BudgetExceededError` if charging (epsilon, delta) would overspend."""
        eps_left, delta_left = self.remaining()
        tol = 1e-12
        if epsilon > eps_left + tol or (delta > 0 and delta > delta_left + tol):
            raise BudgetExceededError(
                f"privacy budget exceeded: asked for epsilon={epsilon:.6g}, delta={delta:.3g}; "
                f"left epsilon={eps_left:.6g}, delta={delta_left:.3g} "
                f"(budget epsilon={self.budget_epsilon}, delta={self.budget_delta})"
            )

    def charge(self, entry: LedgerEntry) -> LedgerEntry:
        self.check(entry.epsilon, entry.delta)
        self.entries.append(entry)
        return entry

    def to_dict(self) -> dict[str, object]:
        return {
            "budget_epsilon": self.budget_epsilon,
            "budget_delta": self.budget_delta,
            "epsilon_spent": self.epsilon_spent,
            "delta_spent": self.delta_spent,
            "entries": [asdict(e) for e in self.entries],
        }
