"""The ``urbandp`` command line: one Typer app, one sub-command group per wing.

Every command turns unusable input into one line on stderr and exit code 2 (:func:`urbandp.errors.cli_guard`).
Heavy imports happen inside commands so that ``urbandp --help`` stays fast.
"""

from __future__ import annotations

import typer

from urbandp.audit.cli import app as audit_app
from urbandp.budget.cli import app as budget_app
from urbandp.counts.cli import app as counts_app
from urbandp.experiments.cli import app as experiment_app
from urbandp.fleet.cli import register as register_fleet
from urbandp.mpc.cli import app as mpc_app
from urbandp.sensing.cli import app as sensing_app
from urbandp.survey.cli import app as survey_app
from urbandp.synth.cli import app as synth_app

app = typer.Typer(
    name="urbandp",
    rich_markup_mode=None,
    help="Differentially private release of urban mobility and sensor data.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
register_fleet(app)
app.add_typer(synth_app, name="synth", help="Generate realistic synthetic inputs (fleet GPS, ...).")
app.add_typer(experiment_app, name="experiment", help="Utility experiments (Monte Carlo, not releases).")
app.add_typer(counts_app, name="counts", help="Count tables (smart-card taps) released with DP.")
app.add_typer(audit_app, name="audit", help="Attacks on published tables (what an adversary learns).")
app.add_typer(
    sensing_app, name="sensing", help="Sensor fleets: GP interpolation, DP maps, aggregate queries."
)
app.add_typer(survey_app, name="survey", help="Travel surveys: randomized response, locations, trips.")
app.add_typer(mpc_app, name="mpc", help="Secure two-party queries over sensor maps (SPU, optional extra).")
app.add_typer(budget_app, name="budget", help="Privacy budget store across releases (init, show, history).")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
