"""Count tables (smart-card taps) released with differential privacy, and the non-DP Data61 2016 method.

:func:`release` is the one public path to a noisy table: it runs every guard and the Session's charge before any
noise; :func:`dry_run` gives the noise, the threshold's advice and the loss without reading the data. The domain
(days, taps, time bins, places) is public and fixed before any record is read, so the table's shape is too:

```pycon
>>> import polars as pl
>>> import urbandp as ud
>>> domain = {"days": ["2016-08-08"], "taps": ["on", "off"], "bin_minutes": 60, "places": {"bus": ["a", "b"]}}
>>> events = pl.DataFrame({
...     "mode": ["bus"] * 6,
...     "timestamp": ["2016-08-08 08:05:00", "2016-08-08 08:40:00", "2016-08-08 09:10:00"] * 2,
...     "tap": ["on", "off", "on"] * 2,
...     "location": ["a", "b", "a", "b", "a", "b"],
...     "card_id": ["c1", "c1", "c1", "c2", "c2", "c2"],
... })
>>> rel = ud.counts.release(events, domain=domain, unit="card-day", max_events=4, epsilon=1)
>>> rel
CountsRelease(DP, joint: 96 rows, time: 48 rows, location: 4 rows, 0 warning(s))
>>> rel.privacy.total_epsilon
1.0
>>> ud.counts.CountDomain.from_json(domain).n_cells
96

```

The public names are imported on first use (PEP 562 module ``__getattr__``): importing the package (which every
``urbandp`` command does to register its group) then costs nothing, instead of loading polars, OpenDP and the
release code (0.5 s) for commands that never touch count tables. Every other module here is internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from urbandp._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from urbandp.counts._api import CountsRelease, dry_run, release, release_spec
    from urbandp.counts._domain import CountDomain
    from urbandp.counts._options import CountsReleaseSpec
    from urbandp.counts._report import CountsPrivacyReport
    from urbandp.counts._table_release import CountRelease
    from urbandp.counts._units import PrivacyUnit

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
    "release": "urbandp.counts._api",
    "release_spec": "urbandp.counts._api",
    "dry_run": "urbandp.counts._api",
    "CountsRelease": "urbandp.counts._api",
    "CountsPrivacyReport": "urbandp.counts._report",
    "CountsReleaseSpec": "urbandp.counts._options",
    "CountDomain": "urbandp.counts._domain",
    "CountRelease": "urbandp.counts._table_release",
    "PrivacyUnit": "urbandp.counts._units",
}


__getattr__, __dir__ = _lazy_names(__name__, _HOME, __all__)
