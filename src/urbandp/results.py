"""What a release returns in Python: its published tables, its typed privacy report, and the owner's material apart.

Every wing's result (``urbandp.fleet.release(...)`` returns a :class:`urbandp.fleet._api.FleetRelease`) has this
shape, as Tumult Analytics' and OpenDP's releases do:

* ``table``: the main published table (a Polars ``DataFrame``; ``table.to_pandas()`` for pandas), ``tables`` all of
  them by name;
* ``privacy``: the typed :class:`~urbandp._privacy.report.PrivacyReport`; ``privacy.to_json()`` is privacy.json;
* ``warnings``: what the release says about itself (public or DP figures only; also emitted as Python warnings).
  A warning names parameters as Python passes them (``suppress_below=42``); one that names any is an
  :class:`~urbandp.errors.Advice` listing them, which the command line shows with its flags;
* ``owner``: figures read from the true data (exact counts, quarantine, warnings about the input) for the data
  owner only: never published, written to ``owner_only/<name>/`` beside the release folder;
* ``write(out, overwrite=False)``: the same folder the command line writes.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from urbandp._privacy.report import PrivacyReport


class ReleaseWarning(UserWarning):
    """A warning a release states about itself (public or DP figures only)."""


class OwnerWarning(UserWarning):
    """A warning read from the true data: for the data owner, never published."""


@dataclass
class Release:
    """A finished release (the charge, if any, is committed): tables, typed privacy report, owner material."""

    tables: dict[str, pl.DataFrame]
    privacy: PrivacyReport
    owner: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    owner_warnings: list[str] = field(default_factory=list)

    @property
    def table(self) -> pl.DataFrame:
        """The main published table (the first of :attr:`tables`)."""
        return next(iter(self.tables.values()))

    def emit_warnings(self) -> None:
        """Emit :attr:`warnings` (:class:`ReleaseWarning`) and :attr:`owner_warnings` (:class:`OwnerWarning`)."""
        for text in self.warnings:
            warnings.warn(text, ReleaseWarning, stacklevel=3)
        for text in self.owner_warnings:
            warnings.warn(text, OwnerWarning, stacklevel=3)

    def write(self, out: str | Path, *, overwrite: bool = False) -> dict[str, Path]:
        """Write the release folder ``out`` (and ``owner_only/<name>/`` beside it); a folder urbandp wrote before is
        replaced only with ``overwrite``; any other existing folder is refused."""
        raise NotImplementedError

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}: {v.height} rows" for k, v in self.tables.items())
        label = "DP" if self.privacy.differentially_private else "NOT DP"
        return f"{type(self).__name__}({label}, {shapes}, {len(self.warnings)} warning(s))"
