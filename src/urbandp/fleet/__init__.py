"""Fleet GPS wing: records -> HATs -> vehicle-level bounding -> DP speeds per HAT (ITMS technical report).

The public API (:mod:`urbandp.fleet.api`): :func:`release` returns a :class:`FleetRelease` (tables, typed
:class:`FleetPrivacyReport`, owner material apart); the names are imported on first use (PEP 562), so that the
command line stays fast.

Modules, in the order a release runs: ``spec`` and ``config`` (the options and the frozen spec), ``plan`` (the
mechanism, K, D, U and the budget split from public parameters), ``guardrails`` (the guards before reading, before
noise, after accounting), ``measure`` (truncation, selection, noise: the only draws), ``account`` (the loss per HAT,
per day, per window), ``hat_release`` (the levels in order), ``pipeline`` (read, validate, contributions, write),
``report`` (privacy.json, typed), ``explore`` (data-owner exploration, not DP) and ``cli``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from urbandp.fleet.api import FleetRelease, release
    from urbandp.fleet.config import HatReleaseConfig
    from urbandp.fleet.report import FleetPrivacyReport

__all__ = ["FleetPrivacyReport", "FleetRelease", "HatReleaseConfig", "release"]

_HOME = {
    "release": "urbandp.fleet.api",
    "FleetRelease": "urbandp.fleet.api",
    "FleetPrivacyReport": "urbandp.fleet.report",
    "HatReleaseConfig": "urbandp.fleet.config",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
