"""Count tables (smart-card taps) released with differential privacy, and the non-DP Data61 2016 method.

The Python API::

    import urbandp as ud
    rel = ud.counts.release("taps/events.csv", domain="taps/domain.json", unit="card-day", max_events=4,
                            epsilon=1, suppress_below=18)

:func:`release` is the one public path to a noisy table: it runs every guard and the Session's charge before
any noise. The mechanism it calls over a raw joint array (``table_release._release_counts``) is internal.

The public names are imported on first use (PEP 562 module ``__getattr__``): importing a submodule such as
``urbandp.counts.cli`` (which every ``urbandp`` command does to register the group) then costs nothing, instead of
loading polars, OpenDP and the release code (0.5 s) for commands that never touch count tables.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from urbandp.counts.api import CountsRelease, dry_run, release, release_spec
    from urbandp.counts.domain import CountDomain
    from urbandp.counts.report import CountsPrivacyReport
    from urbandp.counts.spec import CountsReleaseSpec
    from urbandp.counts.table_release import CountRelease
    from urbandp.counts.units import PrivacyUnit

__all__ = [
    "CountDomain",
    "CountRelease",
    "CountsPrivacyReport",
    "CountsRelease",
    "CountsReleaseSpec",
    "PrivacyUnit",
    "dry_run",
    "release",
    "release_spec",
]

_HOME = {
    "release": "urbandp.counts.api",
    "release_spec": "urbandp.counts.api",
    "dry_run": "urbandp.counts.api",
    "CountsRelease": "urbandp.counts.api",
    "CountsPrivacyReport": "urbandp.counts.report",
    "CountsReleaseSpec": "urbandp.counts.spec",
    "CountDomain": "urbandp.counts.domain",
    "CountRelease": "urbandp.counts.table_release",
    "PrivacyUnit": "urbandp.counts.units",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
