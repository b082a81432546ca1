"""Sensor fleets: GP interpolation, DP variance maps, DP PM2.5 maps, aggregate queries with error propagation.

:func:`dp_map`, :func:`pm_map` and :func:`query` are releases (a charge of :class:`urbandp.Session`, the guards
before any noise); :func:`interpolate` is NOT a release, the data owner's tool. The grid is fixed by the public
bounding box, so a map's shape is public:

```pycon
>>> import polars as pl
>>> import urbandp as ud
>>> readings = pl.DataFrame({
...     "time": [f"2024-01-15T08:{m:02d}:00" for m in range(0, 60, 5)] * 3,
...     "lat": [22.50 + 0.004 * i for i in range(12)] * 3,
...     "lon": [88.33 + 0.004 * i for i in range(12)] * 3,
...     "value": [40.0 + i for i in range(36)],
...     "vehicle": [f"v{k}" for k in range(3) for _ in range(12)],
... })
>>> rel = ud.sensing.pm_map(readings, bbox=(22.49, 88.32, 22.60, 88.44), start="2024-01-15T08:00",
...                         end="2024-01-15T10:00", epsilon=2)
>>> rel
PmMapResult(DP, pm_cells: 338 rows, pm_grid: 338 rows, 0 warning(s))
>>> rel.table.columns[:6]
['window', 'cell_id', 'lat', 'lon', 'noisy_count', 'noisy_sum']

```

Names are imported on first use (PEP 562), so that ``urbandp sensing --help`` stays fast. Every other module here
is internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from urbandp._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from urbandp.sensing._api import dp_map, interpolate, pm_map, query
    from urbandp.sensing._dp_map_release import DpMapResult
    from urbandp.sensing._interpolate_tool import Interpolation
    from urbandp.sensing._pm_map_release import PmMapResult
    from urbandp.sensing._query_release import QueryAnswer
    from urbandp.sensing._report import DpMapPrivacyReport, PmMapPrivacyReport, QueryPrivacyReport

__all__ = [
    "DpMapPrivacyReport",
    "DpMapResult",
    "Interpolation",
    "PmMapPrivacyReport",
    "PmMapResult",
    "QueryAnswer",
    "QueryPrivacyReport",
    "dp_map",
    "interpolate",
    "pm_map",
    "query",
]

_HOME = {
    "dp_map": "urbandp.sensing._api",
    "pm_map": "urbandp.sensing._api",
    "query": "urbandp.sensing._api",
    "interpolate": "urbandp.sensing._api",
    "DpMapResult": "urbandp.sensing._dp_map_release",
    "PmMapResult": "urbandp.sensing._pm_map_release",
    "QueryAnswer": "urbandp.sensing._query_release",
    "Interpolation": "urbandp.sensing._interpolate_tool",
    "DpMapPrivacyReport": "urbandp.sensing._report",
    "PmMapPrivacyReport": "urbandp.sensing._report",
    "QueryPrivacyReport": "urbandp.sensing._report",
}


__getattr__, __dir__ = _lazy_names(__name__, _HOME, __all__)
