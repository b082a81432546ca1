"""The ``urbandp budget`` wing: a privacy budget that lasts across releases (see urbandp.privacy.budget_store).

From Python: ``ud.budget.declare``, ``show``, ``remaining`` and ``history`` (:mod:`urbandp.budget.api`), the same
operations as ``urbandp budget init|show|history``."""

from urbandp.budget.api import BudgetStatus, Remaining, declare, history, remaining, show

__all__ = ["BudgetStatus", "Remaining", "declare", "history", "remaining", "show"]
