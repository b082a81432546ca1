"""`urbandp sensing pm-map`, the command's side: what it prints of :func:`urbandp.sensing.pm_map`'s result.

The release itself (unit, plan, Session, privacy.json, the folder) is the library's
(:mod:`urbandp.sensing._pm_map_release`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from urbandp._cli_support import cli_text

if TYPE_CHECKING:
    from urbandp.sensing._pm_map_release import PmMapResult


def print_result(rel: PmMapResult, out: Path, *, smoother: str, **options: object) -> None:
    """What the command prints of a release written to ``out`` with ``options``: the owner's warnings and one
    summary line."""
    from urbandp.sensing._report import PmMapPrivacyReport

    for line in rel.owner_warnings:
        print(f"urbandp: warning (owner only, from the true readings): {cli_text(line)}", file=sys.stderr)
    p = rel.privacy
    assert isinstance(p, PmMapPrivacyReport)
    label = p.privacy_unit or ""
    per_vehicle = ""
    if p.per_vehicle.bounded:
        m = p.per_vehicle.max_readings_per_vehicle_window  # type: ignore[attr-defined]
        per_vehicle = (
            f" (at most {m} readings, {p.epsilon_per_reading:.4g} per reading; "
            f"{p.budget_booked.epsilon_per_day:.4g} per vehicle-day)"
        )
    clip = p.clip["high"]  # type: ignore[attr-defined]
    print(
        f"{p.windows['count']} windows x {p.grid['cells']} cells; "  # type: ignore[attr-defined]
        f"epsilon {p.epsilon_per_unit:.4g} per {label[4:]}"
        + per_vehicle
        + f" (Laplace on counts and centred sums, clip {clip:g}); smoother {smoother} -> {out}"
    )
