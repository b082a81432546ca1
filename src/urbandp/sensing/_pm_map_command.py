"""`urbandp sensing pm-map`, the command's side: flags -> :func:`urbandp.sensing.pm_map` -> printed lines.

The release itself (unit, plan, Session, privacy.json, the folder) is the library's
(:mod:`urbandp.sensing._pm_map_release`); here only the flags are parsed and the result printed.
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
    bbox: str,
    dataset: str | None,
    budget_store: str | None,
    allow_meaningless_epsilon: bool,
    overwrite: bool,
    **options: Any,
) -> None:
    """Run the release through the library and print what the command always printed."""
    from urbandp._session import Session
    from urbandp.sensing._api import pm_map
    from urbandp.sensing._options import parse_box
    from urbandp.sensing._report import PmMapPrivacyReport

    box = parse_box(bbox)
    assert box is not None
    session = Session(budget_store, dataset, allow_meaningless_epsilon=allow_meaningless_epsilon)
    with warnings.catch_warnings():  # printed below as the command's own lines
        warnings.simplefilter("ignore", ReleaseWarning)
        warnings.simplefilter("ignore", OwnerWarning)
        rel = pm_map(input_path, bbox=box, session=session, out=out, overwrite=overwrite, **options)
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
        + f" (Laplace on counts and centred sums, clip {clip:g}); smoother {options['smoother']} -> {out}"
    )
