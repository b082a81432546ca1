"""The fleet's commands: ``release`` and ``map`` (fleet/_cli.py), ``plan`` (fleet/_cli_plan.py) and ``explore``
(fleet/_cli_explore.py), each behind the one error guard (:func:`urbandp._cli_support.cli_guard`).

``urbandp fleet COMMAND`` is the canonical form, like every other wing's group; ``urbandp COMMAND`` stays as an
alias with the same options and help, hidden from the root's command list."""

from __future__ import annotations

import typer

from urbandp._cli_support import cli_guard
from urbandp.fleet._cli import map_site, release
from urbandp.fleet._cli_explore import explore
from urbandp.fleet._cli_plan import plan

HELP = "Fleet GPS: HAT speed releases, their plan, exploration and map."
"""The fleet group's one-line help."""


def register(app: typer.Typer, *, hidden: bool = False) -> None:
    """Add the fleet commands to ``app`` (the ``fleet`` group, or the root as hidden aliases)."""
    app.command("release", hidden=hidden)(cli_guard(release))
    app.command("map", hidden=hidden)(cli_guard(map_site))
    app.command("plan", hidden=hidden)(cli_guard(plan))
    app.command("explore", hidden=hidden)(cli_guard(explore))


def fleet_group() -> typer.Typer:
    """The ``urbandp fleet`` group."""
    group = typer.Typer(no_args_is_help=True, rich_markup_mode=None, pretty_exceptions_enable=False)
    register(group)
    return group
