"""The fleet's commands on the main app: ``release`` and ``map`` (fleet/cli.py), ``plan`` (fleet/cli_plan.py) and
``explore`` (fleet/cli_explore.py), each behind the one error guard (:func:`urbandp.cli_support.cli_guard`)."""

from __future__ import annotations

import typer

from urbandp.cli_support import cli_guard
from urbandp.fleet.cli import map_site, release
from urbandp.fleet.cli_explore import explore
from urbandp.fleet.cli_plan import plan


def register(app: typer.Typer) -> None:
    """Add the fleet commands to the main app."""
    app.command("release")(cli_guard(release))
    app.command("map")(cli_guard(map_site))
    app.command("plan")(cli_guard(plan))
    app.command("explore")(cli_guard(explore))
