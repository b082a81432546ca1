"""CLI group ``urbandp survey``: randomized response, location and trajectory perturbation, OD trips.

Every release command calls its function of :mod:`urbandp.survey._api` (the library's release path) and writes
``--out DIR`` atomically with ``privacy.json`` (unit, neighbouring relation, exact epsilon computed from the
mechanism), with quarantine rows and anything computed from true data in ``owner_only/<DIR>/`` beside it.
``--budget-epsilon`` refuses a release that would overspend. With ``--dataset NAME --survey-date DAY`` the release
is charged to the budget store (``urbandp budget``, docs/budget.md): reserved before any noise is drawn, committed
after the outputs are written. The commands live in :mod:`cli_randomize`, :mod:`cli_points` and :mod:`cli_trips`.
"""

from __future__ import annotations

import importlib

from urbandp.survey._cli_common import app

for _module in ("urbandp.survey._cli_randomize", "urbandp.survey._cli_points", "urbandp.survey._cli_trips"):
    importlib.import_module(_module)  # registers the commands, in the order of --help

__all__ = ["app"]
