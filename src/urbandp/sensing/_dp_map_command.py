"""`urbandp sensing dp-map`, the command's side: what it prints of :func:`urbandp.sensing.dp_map`'s result.

The release itself (guards, Session, privacy.json, the folder) is the library's
(:mod:`urbandp.sensing._dp_map_release`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from urbandp._cli_support import cli_text

if TYPE_CHECKING:
    from urbandp.sensing._dp_map_release import DpMapResult


def print_result(rel: DpMapResult, out: Path, *, epsilon: float, **options: object) -> None:
    """What the command prints of a release written to ``out`` with ``options``: its warnings, the owner's
    timings, one summary line."""
    from urbandp.sensing._report import DpMapPrivacyReport

    for line in rel.warnings:
        print(f"urbandp: warning: {cli_text(line)}", file=sys.stderr)
    for line in rel.owner["timing"]:
        print(f"urbandp: dp-map timing (owner only): {line}", file=sys.stderr)
    privacy = rel.privacy
    assert isinstance(privacy, DpMapPrivacyReport)
    if privacy.calibration == "paper":
        cost = "epsilon: none (paper calibration: NOT differentially private)"
    else:
        cost = (
            f"epsilon per cell {epsilon:g} (per reading / window map "
            f"{privacy.epsilon_per_window_map:.6g} at delta {privacy.delta_per_reading:.2g}; per vehicle-day "
            f"{privacy.epsilon_per_vehicle_day:.6g}; vehicle in every window "
            f"{privacy.epsilon_vehicle_upper_bound:.6g})"
        )
    print(
        f"{privacy.windows_released} windows x {privacy.cells_per_window} cells; {cost}; {privacy.dp_label} -> "
        f"{out} (owner-only material, not DP: {out.parent / 'owner_only' / out.name})"
    )
