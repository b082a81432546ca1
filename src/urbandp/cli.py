"""The ``urbandp`` command line: one Typer app, one sub-command group per wing.

Every command turns unusable input into one line on stderr and exit code 2 (:func:`urbandp._cli_support.cli_guard`).
Heavy imports happen inside commands so that ``urbandp --help`` stays fast, and a run of one command imports only
its own wing's command module (:func:`build_app`): the whole CLI is what the JSON Lines benchmark times.
"""

from __future__ import annotations

import importlib
import sys

import typer

from urbandp.fleet._commands import HELP as FLEET_HELP
from urbandp.fleet._commands import fleet_group
from urbandp.fleet._commands import register as register_fleet

GROUPS: dict[str, tuple[str, str]] = {
    "synth": ("urbandp._synth.cli", "Generate realistic synthetic inputs (fleet GPS, ...)."),
    "experiment": ("urbandp._experiments.cli", "Utility experiments (Monte Carlo, not releases)."),
    "counts": ("urbandp.counts._cli", "Count tables (smart-card taps) released with DP."),
    "audit": ("urbandp.audit._cli", "Attacks on published tables (what an adversary learns)."),
    "sensing": ("urbandp.sensing._cli", "Sensor fleets: GP interpolation, DP maps, aggregate queries."),
    "survey": ("urbandp.survey._cli", "Travel surveys: randomized response, locations, trips."),
    "mpc": ("urbandp.mpc._cli", "Secure two-party queries over sensor maps (SPU, optional extra)."),
    "budget": ("urbandp.budget._cli", "Privacy budget store across releases (init, show, history)."),
}
"""Sub-command groups: name -> (module holding its Typer ``app``, one-line help)."""

FLEET_COMMANDS = ("release", "plan", "explore", "map")


def build_app(only: str | None = None) -> typer.Typer:
    """The CLI with the fleet commands and every group, or with the group ``only`` alone (``""``: none)."""
    app = typer.Typer(
        name="urbandp",
        rich_markup_mode=None,
        help="Differentially private release of urban mobility and sensor data.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    app.callback()(_root)
    app.add_typer(fleet_group(), name="fleet", help=FLEET_HELP)
    register_fleet(app, hidden=True)  # ``urbandp release`` etc.: aliases of ``urbandp fleet release``
    for name, (module, text) in GROUPS.items():
        if only is None or only == name:
            app.add_typer(importlib.import_module(module).app, name=name, help=text)
    return app


def _print_version(value: bool) -> None:
    if value:
        from urbandp._provenance import version_line

        print(version_line())
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the urbandp, OpenDP and Python versions and exit.",
    ),
) -> None:
    """Differentially private release of urban mobility and sensor data."""


def _wanted_group(argv: list[str]) -> str | None:
    """The group a command line runs (``""`` for a fleet command), or None (help, or an unknown word: all)."""
    words = [a for a in argv if not a.startswith("-")]
    first = words[0] if words else None
    if first in GROUPS:
        return first
    if first == "fleet" and len(words) > 1:
        first = words[1]
    if first in FLEET_COMMANDS and "--help" not in argv and "-h" not in argv:
        return ""
    return None


def __getattr__(name: str) -> typer.Typer:
    """``from urbandp.cli import app``: the whole CLI (tests and embedding)."""
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console-script entry point: runs the CLI; a usage error (bad or missing option) is one line, exit 2.

    Click's own usage errors print a usage block and an ``Error:`` line; here they read like every other refusal,
    ``urbandp: error: <what> (see 'urbandp <command> --help')``, so scripts and people see one form.
    """
    from typer import _click

    from urbandp.errors import EXIT_UNUSABLE_INPUT, one_line

    argv = sys.argv[1:]
    command = typer.main.get_command(build_app(_wanted_group(argv)))
    try:
        code = command.main(args=argv, prog_name="urbandp", standalone_mode=False)
    except _click.exceptions.UsageError as err:
        if isinstance(err, _click.exceptions.NoArgsIsHelpError) and err.ctx is not None:
            print(err.ctx.get_help())  # a bare group (``urbandp counts``): its help, as before
            sys.exit(EXIT_UNUSABLE_INPUT)
        where = err.ctx.command_path if err.ctx is not None else "urbandp"
        print(f"urbandp: error: {one_line(err.format_message())} (see '{where} --help')", file=sys.stderr)
        sys.exit(EXIT_UNUSABLE_INPUT)
    except _click.exceptions.ClickException as err:
        print(f"urbandp: error: {one_line(err.format_message())}", file=sys.stderr)
        sys.exit(err.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        print("urbandp: interrupted; nothing was written", file=sys.stderr)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
