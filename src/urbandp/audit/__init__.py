"""Attacks on published count tables (Culnane, Rubinstein, Teague 2017): noise scale, zero skipping, differencing.

The Python API, the same attacks as ``urbandp audit``::

    import urbandp as ud
    p = ud.audit.pairs("rel/joint.csv", route=["ferry:Manly Wharf>Circular Quay No. 3 Wharf"])
    ud.audit.noise_scale(p.table, model="discrete").scale
    ud.audit.zero_skipping("rel/joint.csv", threshold=18).vulnerable
    ud.audit.differencing("rel/joint.csv", "rel/time.csv").to_dict()  # what the CLI prints

Audits read published tables only: they take no :class:`urbandp.Session` and spend no budget. The public names
are imported on first use (PEP 562 module ``__getattr__``), so ``urbandp audit --help`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from urbandp.audit.api import (
        AuditResult,
        DifferencingResult,
        NoiseScaleResult,
        PairsResult,
        ZeroSkippingResult,
        differencing,
        noise_scale,
        pairs,
        zero_skipping,
    )
    from urbandp.audit.tables import PublishedTable

__all__ = [
    "AuditResult",
    "DifferencingResult",
    "NoiseScaleResult",
    "PairsResult",
    "PublishedTable",
    "ZeroSkippingResult",
    "differencing",
    "noise_scale",
    "pairs",
    "zero_skipping",
]

_HOME = {name: "urbandp.audit.api" for name in __all__ if name != "PublishedTable"}
_HOME["PublishedTable"] = "urbandp.audit.tables"


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
