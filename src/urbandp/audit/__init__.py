"""Attacks on published count tables (Culnane, Rubinstein, Teague 2017): noise scale, zero skipping, differencing.

The same attacks as ``urbandp audit``. Audits read published tables only: they take no :class:`urbandp.Session`
and spend no budget. Pairs of published counts that are equal in the raw data give the noise's scale:

```pycon
>>> import polars as pl
>>> import urbandp as ud
>>> pairs = pl.DataFrame({"a": [20.0, 31.5, 18.2, 40.1, 25.0, 22.2], "b": [21.4, 29.0, 19.9, 37.3, 27.5, 20.0]})
>>> fit = ud.audit.noise_scale(pairs)
>>> round(fit.scale, 3), fit.n_pairs
(1.357, 6)
>>> table = pl.DataFrame({"count": [0, 18, 19, 25, 40, 0, 22, 30]})
>>> ud.audit.zero_skipping(table, threshold=18, scale=4.0).verdict
'cannot be ruled out (no declared method; the table is consistent with skipped zeros)'

```

:func:`pairs` finds such pairs in a published table, :func:`differencing` compares two tables of one release;
each result has ``to_dict()`` (what the command prints). The public names are imported on first use (PEP 562
module ``__getattr__``), so ``urbandp audit --help`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from urbandp._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from urbandp.audit._api import (
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
    from urbandp.audit._tables import PublishedTable

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

_HOME = {name: "urbandp.audit._api" for name in __all__ if name != "PublishedTable"}
_HOME["PublishedTable"] = "urbandp.audit._tables"


__getattr__, __dir__ = _lazy_names(__name__, _HOME, __all__)
