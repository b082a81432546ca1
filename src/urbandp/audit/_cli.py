"""CLI group `urbandp audit`: attacks on published count tables (what an adversary learns).

Each command parses its options and calls the same function of :mod:`urbandp.audit._api` (``ud.audit.<attack>``).

Each attack prints exactly one JSON object on stdout; ``--report DIR`` also writes Markdown + PNG plots.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from urbandp._cli_options import Overwrite
from urbandp._cli_support import cli_guard

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


def _report(name: str) -> Any:
    """``--report DIR``: where the attack writes ``<name>.md`` and its plot."""
    return typer.Option(None, "--report", help=f"Write {name}.md and a PNG here (default: not written).")


def _optional(flag: str, text: str) -> Any:
    """An option without a default value (None: read from privacy.json, or not given)."""
    return typer.Option(None, flag, help=text)


def _attack(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register the decorated parameters and help as the command ``name``: it calls ``ud.audit.<name>`` with
    them (each named as the function's keyword) and prints its result as one line of strict JSON (a
    non-finite number as null, with a ``*_reason`` key)."""

    def register(declared: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(declared)
        def command(**options: Any) -> None:
            from urbandp._outputs import dumps_strict
            from urbandp.audit import _api as api

            result = getattr(api, name.replace("-", "_"))(**options)
            typer.echo(dumps_strict(result.to_dict(), indent=None))

        app.command(name)(cli_guard(command))
        return declared

    return register


@_attack("noise-scale")
def noise_scale(
    pairs: Path = typer.Option(
        ..., "--pairs", help="CSV with columns a,b: published counts equal in raw data."
    ),
    model: str = typer.Option(
        "continuous", "--model", help="continuous (Laplace, Opal) | discrete (discrete Laplace, urbandp)."
    ),
    alpha: float = typer.Option(0.05, "--alpha", help="1 - confidence level of the interval."),
    report: Path | None = _report("noise-scale"),
    overwrite: Overwrite = False,
) -> None:
    """Estimate the noise scale from pairs of published counts that are equal in the raw data (MLE + CI).

    Example:

        urbandp audit pairs --table rel/joint.csv --route "ferry:Manly Wharf>Circular Quay No. 3 Wharf" --out p.csv
        urbandp audit noise-scale --pairs p.csv --model discrete --report audit/
    """


@_attack("zero-skipping")
def zero_skipping(
    table: Path = typer.Option(..., "--table", help="Published table (CSV/Parquet) with a count column."),
    threshold: float = typer.Option(18.0, "--threshold", help="Suppression threshold t of the release."),
    method: str = typer.Option(
        "auto", "--method", help="auto (privacy.json next to the table) | data61-2016 | urbandp | unknown."
    ),
    scale: float | None = _optional("--scale", "Noise scale p (default: privacy.json's noise_scale)."),
    privacy: Path | None = _optional(
        "--privacy", "privacy.json of the release (default: next to the table)."
    ),
    group_sizes: str = typer.Option("1,5,12", "--group-sizes", help="Comma-separated group sizes g."),
    report: Path | None = _report("zero-skipping"),
    overwrite: Overwrite = False,
) -> None:
    """Decide whether zeros could have been skipped; report Theorem 1's delta bound and detection probabilities.

    Example:

        urbandp audit zero-skipping --table opal/location_20160808-14.csv --threshold 18 --method data61-2016 --scale 1.4
    """


@_attack("differencing")
def differencing(
    joint: Path = typer.Option(
        ..., "--joint", help="Published joint table (e.g. time x location); null/absent = suppressed."
    ),
    marginal: Path = typer.Option(
        ..., "--marginal", help="Published marginal table (a subset of the joint's key columns)."
    ),
    scale: float | None = _optional("--scale", "Noise scale of the joint cells (default: privacy.json)."),
    marginal_scale: float | None = _optional(
        "--marginal-scale", "Noise scale of the marginal (default: --scale)."
    ),
    privacy: Path | None = _optional("--privacy", "privacy.json (default: next to the joint table)."),
    alpha: float = typer.Option(0.05, "--alpha", help="1 - confidence level."),
    max_cells: int = typer.Option(1000, "--max-cells", help="List at most this many cells in the JSON."),
    report: Path | None = _report("differencing"),
    overwrite: Overwrite = False,
) -> None:
    """Recover suppressed joint cells from a marginal, with exact intervals for any number of Laplace terms.

    Example:

        urbandp audit differencing --joint rel/joint.csv --marginal rel/time.csv --report audit/
    """


@_attack("pairs")
def pairs(
    table: Path = typer.Option(
        ..., "--table", help="Published table with mode, day, tap, location[, bin], count."
    ),
    route: list[str] = typer.Option(..., "--route", help="mode:FROM>TO (repeatable)."),
    lag_minutes: int = typer.Option(
        30, "--lag-minutes", help="Travel time FROM -> TO (ignored for daily tables)."
    ),
    out: Path = typer.Option(..., "--out", help="Output CSV with columns route, day[, bin], a, b."),
    overwrite: Overwrite = False,
) -> None:
    """Build a,b pairs (counts equal in raw data) for `audit noise-scale` from a published table.

    Example:

        urbandp audit pairs --table joint.csv --route "ferry:Manly Wharf>Circular Quay No. 3 Wharf"
        --route "ferry:Circular Quay No. 3 Wharf>Manly Wharf" --out pairs.csv
    """
