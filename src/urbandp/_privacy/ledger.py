"""A privacy ledger: every release charges it in declared units, and overspending is refused.

docs/design.md privacy rules 2 and 5 (Tumult Analytics' ``Session`` owns the budget; here the ledger does).

Two kinds of charges compose here:

* pure / approximate DP charges (``epsilon``, ``delta``) add up by basic sequential composition (Dwork and Roth
  2014, Thm 3.16);
* zero-concentrated DP charges (``rho``) add up in rho (Bun and Steinke 2016, Lemma 2.3) and are converted once to
  (epsilon, delta) at ``conversion_delta`` by OpenDP's ``make_zCDP_to_approxDP``
  (:func:`urbandp._privacy.noise.zcdp_epsilon`), which is tighter than converting each charge apart.
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
    rho: float = 0.0

    def __post_init__(self) -> None:
        if not (self.epsilon >= 0) or math.isnan(self.epsilon):
            raise ValueError(f"epsilon must be >= 0, got {self.epsilon}")
        if not (0 <= self.delta < 1):
            raise ValueError(f"delta must be in [0, 1), got {self.delta}")
        if not (self.rho >= 0) or math.isinf(self.rho):
            raise ValueError(f"rho must be finite and >= 0, got {self.rho}")


class PrivacyLedger:
    """Tracks (epsilon, delta) and rho spent against an optional (epsilon, delta) budget.

    ``budget_epsilon=None`` / ``budget_delta=None`` mean unlimited (the spend is still recorded and reported).
    ``conversion_delta`` is the delta at which the summed rho is turned into epsilon (needed once any entry
    charges rho).
    """

    def __init__(
        self,
        budget_epsilon: float | None = None,
        budget_delta: float | None = None,
        conversion_delta: float | None = None,
    ) -> None:
        if budget_epsilon is not None and not (0 < budget_epsilon < math.inf):
            raise ValueError("budget_epsilon must be finite and > 0")
        self.budget_epsilon = budget_epsilon
        self.budget_delta = budget_delta
        self.conversion_delta = conversion_delta
        self.entries: list[LedgerEntry] = []

    @property
    def rho_spent(self) -> float:
        return math.fsum(e.rho for e in self.entries)

    def _totals(self, entries: list[LedgerEntry]) -> tuple[float, float]:
        from urbandp._privacy.noise import zcdp_epsilon

        eps = math.fsum(e.epsilon for e in entries)
        delta = math.fsum(e.delta for e in entries)
        rho = math.fsum(e.rho for e in entries)
        if rho > 0:
            if self.conversion_delta is None:
                raise ValueError("a rho charge needs the ledger's conversion_delta")
            eps += zcdp_epsilon(rho, self.conversion_delta)
            delta += self.conversion_delta
        return eps, delta

    @property
    def epsilon_spent(self) -> float:
        return self._totals(self.entries)[0]

    @property
    def delta_spent(self) -> float:
        return self._totals(self.entries)[1]

    def charge(self, entry: LedgerEntry) -> LedgerEntry:
        """Add ``entry``, or raise :class:`BudgetExceededError` (adding nothing) if it would overspend."""
        eps_after, delta_after = self._totals([*self.entries, entry])
        over_eps = self.budget_epsilon is not None and eps_after > self.budget_epsilon + 1e-12
        over_delta = self.budget_delta is not None and delta_after > self.budget_delta + 1e-12
        if over_eps or over_delta:
            eps, delta = self._totals(self.entries)
            eps_left = math.inf if self.budget_epsilon is None else self.budget_epsilon - eps
            delta_left = math.inf if self.budget_delta is None else self.budget_delta - delta
            raise BudgetExceededError(
                f"privacy budget exceeded: asked for epsilon={entry.epsilon:.6g}, delta={entry.delta:.3g}, "
                f"rho={entry.rho:.6g} (total would be epsilon={eps_after:.6g}, delta={delta_after:.3g}); "
                f"left epsilon={eps_left:.6g}, delta={delta_left:.3g} "
                f"(budget epsilon={self.budget_epsilon}, delta={self.budget_delta})"
            )
        self.entries.append(entry)
        return entry

    def to_dict(self) -> dict[str, object]:
        eps, delta = self._totals(self.entries)
        return {
            "budget_epsilon": self.budget_epsilon,
            "budget_delta": self.budget_delta,
            "epsilon_spent": eps,
            "delta_spent": delta,
            "rho_spent": self.rho_spent,
            "conversion_delta": self.conversion_delta,
            "entries": [asdict(e) for e in self.entries],
        }
