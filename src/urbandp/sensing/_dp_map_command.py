"""`urbandp sensing dp-map`, the command's side: flags -> :func:`urbandp.sensing.dp_map` -> printed lines.

The release itself (guards, Session, privacy.json, the folder) is the library's
(:mod:`urbandp.sensing._dp_map_release`); here only the flags are parsed and the result printed.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

from urbandp._cli_support import cli_text
from urbandp.results import OwnerWarning, ReleaseWarning


def run(
    input_path: Path,
    out: Path,
    *,
    bbox: str | None,
    utility_epsilons: str,
    dataset: str | None,
    budget_store: str | None,
    allow_meaningless_epsilon: bool,
    overwrite: bool,
    **options: Any,
) -> None:
    """Run the release through the library and print what the command always printed."""
    from urbandp._session import Session
    from urbandp.sensing._api import dp_map
    from urbandp.sensing._options import parse_box, parse_utility_epsilons
    from urbandp.sensing._report import DpMapPrivacyReport

    session = Session(budget_store, dataset, allow_meaningless_epsilon=allow_meaningless_epsilon)
    with warnings.catch_warnings():  # printed below as the command's own lines
        warnings.simplefilter("ignore", ReleaseWarning)
        warnings.simplefilter("ignore", OwnerWarning)
        rel = dp_map(
            input_path,
            bbox=parse_box(bbox),
            utility_epsilons=parse_utility_epsilons(utility_epsilons),
            session=session,
            out=out,
            overwrite=overwrite,
            **options,
        )
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
            f"epsilon per cell {options['epsilon']:g} (per reading / window map "
            f"{privacy.epsilon_per_window_map:.6g} at delta {privacy.delta_per_reading:.2g}; per vehicle-day "
            f"{privacy.epsilon_per_vehicle_day:.6g}; vehicle in every window "
            f"{privacy.epsilon_vehicle_upper_bound:.6g})"
        )
    print(
        f"{privacy.windows_released} windows x {privacy.cells_per_window} cells; {cost}; {privacy.dp_label} -> "
        f"{out} (owner-only material, not DP: {out.parent / 'owner_only' / out.name})"
    )
