"""A privacy budget that lasts across releases: the same operations as ``urbandp budget init|show|history``.

:func:`declare` sets a dataset's caps in a store (SQLite file or PostgreSQL URL; every change of caps is logged),
:func:`remaining`, :func:`show` and :func:`history` read it. A release charges the store through
:class:`urbandp.Session`:

```pycon
>>> import tempfile, pathlib
>>> import urbandp as ud
>>> store = str(pathlib.Path(tempfile.mkdtemp()) / "budget.sqlite")
>>> ud.budget.declare(store, "austin", unit="vehicle-day", epsilon_total=40)
DatasetCaps(name='austin', unit='vehicle-day', epsilon_per_day=None, epsilon_total=40.0, rho_per_day=None, rho_total=None, delta_total=1e-05)
>>> ud.budget.remaining(store, "austin").epsilon_total
40.0
>>> [(row["kind"], row["field"], row["new"]) for row in ud.budget.history(store, "austin")]
[('cap change', 'epsilon_total', 40.0), ('cap change', 'delta_total', 1e-05)]

```
"""

from urbandp.budget._api import BudgetStatus, DatasetCaps, Remaining, declare, history, remaining, show

__all__ = ["BudgetStatus", "DatasetCaps", "Remaining", "declare", "history", "remaining", "show"]
