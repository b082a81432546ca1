"""CLI group `urbandp audit`: attacks on published count tables (what an adversary learns).

Each command parses its options and calls the same function of :mod:`urbandp.audit.api` (``ud.audit.<attack>``).

Each attack prints exactly one JSON object on stdout; ``--report DIR`` also writes Markdown + PNG plots.
"""

from __future__ import annotations

from pathlib import Path

import typer

from urbandp.cli_options import Overwrite
from urbandp.cli_support import cli_guard

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


def _emit(result: dict[str, object]) -> None:
    """One line of strict JSON on stdout: a non-finite number is written as null (with a ``*_reason`` key)."""
    from urbandp.outputs import dumps_strict

    typer.echo(dumps_strict(result, indent=None))


@app.command("noise-scale")
@cli_guard
def noise_scale(
    pairs: Path = typer.Option(
        ..., "--pairs", help="CSV with columns a,b: published counts equal in raw data."
    ),
    model: str = typer.Option(
        "continuous", "--model", help="continuous (Laplace, Opal) | discrete (discrete Laplace, urbandp)."
    ),
    alpha: float = typer.Option(0.05, "--alpha", help="1 - confidence level of the interval."),
    report: Path | None = typer.Option(
        None, "--report", help="Write noise-scale.md and a PNG here (default: not written)."
    ),
    overwrite: Overwrite = False,
) -> None:
    """Estimate the noise scale from pairs of published counts that are equal in the raw data (MLE + CI).

    Example:

        urbandp audit pairs --table rel/joint.csv --route "ferry:Manly Wharf>Circular Quay No. 3 Wharf" --out p.csv
        urbandp audit noise-scale --pairs p.csv --model discrete --report audit/
    """
    from urbandp.audit import api

    _emit(api.noise_scale(pairs, model=model, alpha=alpha, report=report, overwrite=overwrite).to_dict())


@app.command("zero-skipping")
@cli_guard
def zero_skipping(
    table: Path = typer.Option(..., "--table", help="Published table (CSV/Parquet) with a count column."),
    threshold: float = typer.Option(18.0, "--threshold", help="Suppression threshold t of the release."),
    method: str = typer.Option(
        "auto", "--method", help="auto (privacy.json next to the table) | data61-2016 | urbandp | unknown."
    ),
    scale: float | None = typer.Option(
        None, "--scale", help="Noise scale p (default: privacy.json's noise_scale)."
    ),
    privacy: Path | None = typer.Option(
        None, "--privacy", help="privacy.json of the release (default: next to the table)."
    ),
    group_sizes: str = typer.Option("1,5,12", "--group-sizes", help="Comma-separated group sizes g."),
    report: Path | None = typer.Option(
        None, "--report", help="Write zero-skipping.md and a PNG here (default: not written)."
    ),
    overwrite: Overwrite = False,
) -> None:
    """Decide whether zeros could have been skipped; report Theorem 1's delta bound and detection probabilities.

    Example:

        urbandp audit zero-skipping --table opal/location_20160808-14.csv --threshold 18 --method data61-2016 --scale 1.4
    """
    from urbandp.audit import api

    result = api.zero_skipping(
        table,
        threshold=threshold,
        method=method,
        scale=scale,
        privacy=privacy,
        group_sizes=group_sizes,
        report=report,
        overwrite=overwrite,
    )
    _emit(result.to_dict())


@app.command("differencing")
@cli_guard
def differencing(
    joint: Path = typer.Option(
        ..., "--joint", help="Published joint table (e.g. time x location); null/absent = suppressed."
    ),
    marginal: Path = typer.Option(
        ..., "--marginal", help="Published marginal table (a subset of the joint's key columns)."
    ),
    scale: float | None = typer.Option(
        None, "--scale", help="Noise scale of the joint cells (default: privacy.json)."
    ),
    marginal_scale: float | None = typer.Option(
        None, "--marginal-scale", help="Noise scale of the marginal (default: --scale)."
    ),
    privacy: Path | None = typer.Option(
        None, "--privacy", help="privacy.json (default: next to the joint table)."
    ),
    alpha: float = typer.Option(0.05, "--alpha", help="1 - confidence level."),
    max_cells: int = typer.Option(1000, "--max-cells", help="List at most this many cells in the JSON."),
    report: Path | None = typer.Option(
        None, "--report", help="Write differencing.md and a PNG here (default: not written)."
    ),
    overwrite: Overwrite = False,
) -> None:
    """Recover suppressed joint cells from a marginal, with exact intervals for any number of Laplace terms.

    Example:

        urbandp audit differencing --joint rel/joint.csv --marginal rel/time.csv --report audit/
    """
    from urbandp.audit import api

    result = api.differencing(
        joint,
        marginal,
        scale=scale,
        marginal_scale=marginal_scale,
        privacy=privacy,
        alpha=alpha,
        max_cells=max_cells,
        report=report,
        overwrite=overwrite,
    )
    _emit(result.to_dict())


@app.command("pairs")
@cli_guard
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
    from urbandp.audit import api

    _emit(
        api.pairs(table, route=list(route), lag_minutes=lag_minutes, out=out, overwrite=overwrite).to_dict()
    )
