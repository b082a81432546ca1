"""Count tables (smart-card taps) released with differential privacy, and the non-DP Data61 2016 method.

The public names are imported on first use (PEP 562 module ``__getattr__``): importing a submodule such as
``urbandp.counts.cli`` (which every ``urbandp`` command does to register the group) then costs nothing, instead of
loading polars, OpenDP and the release code (0.5 s) for commands that never touch count tables.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from urbandp.counts.domain import CountDomain
    from urbandp.counts.release import CountRelease, CountReleaseConfig, release_counts
    from urbandp.counts.units import PrivacyUnit

__all__ = ["CountDomain", "CountRelease", "CountReleaseConfig", "PrivacyUnit", "release_counts"]

_HOME = {
    "CountDomain": "urbandp.counts.domain",
    "CountRelease": "urbandp.counts.release",
    "CountReleaseConfig": "urbandp.counts.release",
    "release_counts": "urbandp.counts.release",
    "PrivacyUnit": "urbandp.counts.units",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
