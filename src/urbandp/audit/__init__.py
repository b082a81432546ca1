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

from typing import TYPE_CHECKING

from urbandp.lazy import lazy_names

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


__getattr__, __dir__ = lazy_names(__name__, _HOME, __all__)
