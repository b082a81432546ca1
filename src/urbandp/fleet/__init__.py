"""Fleet GPS wing: records -> HATs -> vehicle-level bounding -> DP speeds per HAT (ITMS technical report).

:func:`release` returns a :class:`FleetRelease` (tables, the typed :class:`FleetPrivacyReport`, owner material
apart); its options are the fields of :class:`HatReleaseConfig`. A release on a tiny in-memory fleet over a
public extent (``domain_bbox``: the HATs are fixed before any record is read):

```pycon
>>> import datetime as dt
>>> import warnings
>>> import polars as pl
>>> import urbandp as ud
>>> df = pl.DataFrame(
...     [
...         {"vehicle_id": f"v{v}", "timestamp": dt.datetime(2021, 11, 15, 10, i), "lat": 21.17 + 0.0005 * i,
...          "lon": 72.83, "speed": 20.0 + v}
...         for v in range(6)
...         for i in range(20)
...     ]
... )
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")  # a fleet this small releases little, and says so
...     rel = ud.fleet.release(df, start="2021-11-15", end="2021-11-15", epsilon_per_day=4,
...                            domain_bbox=(21.09, 72.75, 21.25, 72.91))
>>> rel.privacy.differentially_private
True
>>> rel.table.columns[:4]
['h3_cell', 'resolution', 'slot', 'mean_speed']

```

With a budget store, pass ``session=ud.Session(store=..., dataset=...)``: the release is refused before any noise
once the dataset's budget is spent (see :mod:`urbandp.budget`). Everything else in this package is internal
(``_``-prefixed modules). The names are imported on first use (PEP 562), so that the command line stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from urbandp._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from urbandp.fleet._api import FleetRelease, MapView, release
    from urbandp.fleet._options import HatReleaseConfig
    from urbandp.fleet._report import FleetPrivacyReport

__all__ = ["FleetPrivacyReport", "FleetRelease", "HatReleaseConfig", "MapView", "release"]

_HOME = {
    "release": "urbandp.fleet._api",
    "FleetRelease": "urbandp.fleet._api",
    "MapView": "urbandp.fleet._api",
    "FleetPrivacyReport": "urbandp.fleet._report",
    "HatReleaseConfig": "urbandp.fleet._options",
}


__getattr__, __dir__ = _lazy_names(__name__, _HOME, __all__)
