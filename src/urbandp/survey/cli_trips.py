"""``urbandp survey od-randomize`` and ``urbandp survey perturb-trajectories``: thin callers of
:func:`urbandp.survey.od_randomize` (report eq. 13, section 6.3) and :func:`urbandp.survey.perturb_trajectories`
(report section 6.1, eq. 16)."""

from __future__ import annotations

from typing import Any

from urbandp.cli_support import cli_guard
from urbandp.survey.cli_common import app, release_signature, run_spec_release
from urbandp.survey.od_release import OdSpec
from urbandp.survey.trajectory_release import TrajectoriesSpec


@app.command("od-randomize")
@cli_guard
@release_signature(
    OdSpec,
    "CSV or Parquet of trips, one origin-destination pair per row.",
    "Output directory (trips.csv + privacy.json).",
    "survey.od-randomize",
)
def od_randomize(**options: Any) -> None:
    """Randomize origin-destination trips over blocks (report eq. 13 and section 6.3).

    Example: urbandp survey od-randomize out/survey/trips.csv --from from_county --to to_county --blocks 19 --id trip --keep-probability 0.5 --out out/trips-rr

    A trip with a block outside the declared list is released as a uniform draw over all pairs (never dropped).
    """
    import urbandp.survey.api as api

    run_spec_release(api.od_randomize, OdSpec, options)


@app.command("perturb-trajectories")
@cli_guard
@release_signature(
    TrajectoriesSpec,
    "CSV or Parquet of GPS points.",
    "Output directory (trajectories.csv + privacy.json).",
    "survey.perturb-trajectories",
)
def perturb_trajectories(**options: Any) -> None:
    """SSD trajectory perturbation (report section 6.1, eq. 16); original-vs-perturbed PNG in owner_only/.

    Example: urbandp survey perturb-trajectories trips.csv --lat Y --lon X --trip trajectory_id --order t --epsilon 50 --out out/trajectories

    Released: --trip, --lat, --lon and --keep-columns. NOT DP (start and end points exact): refuses --dataset.
    """
    import urbandp.survey.api as api

    run_spec_release(api.perturb_trajectories, TrajectoriesSpec, options)
