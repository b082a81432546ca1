"""CLI group `urbandp counts`: release tap-count tables with DP, and make synthetic raw taps with known truth."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from urbandp.cli_options import AllowMeaninglessEpsilon, BudgetStoreUrl, Dataset, Overwrite
from urbandp.counts.synth_command import synth
from urbandp.errors import cli_guard

if TYPE_CHECKING:
    from urbandp.counts.api import CountsRelease

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


@app.command()
@cli_guard
def release(
    input: Path = typer.Argument(
        ..., help="Events (mode,timestamp,tap,location[,card_id]) or counts (CSV/Parquet)."
    ),
    out: Path = typer.Option(..., "--out", help="Output folder."),
    domain: Path | None = typer.Option(
        None,
        "--domain",
        help="Public domain JSON: days, taps, bin_minutes, places (default: none; then --select-partitions is required).",
    ),
    select_partitions: bool = typer.Option(
        False, "--select-partitions", help="No public domain: DP partition selection (needs --delta)."
    ),
    input_kind: str = typer.Option(
        "events", "--input-kind", help="events | counts (pre-aggregated mode,day,tap,bin,location,count)."
    ),
    unit: str = typer.Option("event", "--unit", help="Privacy unit: event | card-day."),
    max_events: int = typer.Option(
        1, "--max-events", help="card-day: at most k events per card and day (truncation)."
    ),
    max_per_cell: int = typer.Option(
        1, "--max-per-cell", help="card-day: at most m events of one card-day per cell."
    ),
    method: str = typer.Option(
        "urbandp", "--method", help="urbandp (DP, default) | data61-2016 (NOT DP, for comparison)."
    ),
    mechanism: str = typer.Option(
        "laplace",
        "--mechanism",
        help="laplace (discrete, pure DP) | gaussian (discrete, zCDP -> (eps, delta)).",
    ),
    epsilon: float | None = typer.Option(
        None,
        "--epsilon",
        help="Epsilon for the joint table, scale calibrated by OpenDP (default: none; give this or --noise-scale).",
    ),
    delta: float = typer.Option(0.0, "--delta", help="Delta (Gaussian mechanism or partition selection)."),
    noise_scale: float | None = typer.Option(
        None,
        "--noise-scale",
        help="Noise scale instead of epsilon, which is then computed (default: none; give this or --epsilon).",
    ),
    suppress_below: float | None = typer.Option(
        None,
        "--suppress-below",
        help="Hide joint cells whose NOISY value is below this (default: publish every cell).",
    ),
    threshold: float = typer.Option(
        18.0, "--threshold", help="data61-2016 only: release if noisy > threshold."
    ),
    precision: int = typer.Option(0, "--precision", help="Decimal places of released values."),
    consistent: bool = typer.Option(
        False, "--consistent", help="Consistent non-negative least-squares projection (post-processing)."
    ),
    top_k: int | None = typer.Option(
        None, "--top-k", help="Also release the k busiest places with OpenDP noisy top-k (default: off)."
    ),
    top_k_epsilon: float | None = typer.Option(
        None, "--top-k-epsilon", help="Epsilon charged for --top-k (default: none; required with --top-k)."
    ),
    top_k_tap: str | None = typer.Option(
        None, "--top-k-tap", help="Rank places by this tap only, e.g. off = destinations (default: all taps)."
    ),
    fmt: str = typer.Option("csv", "--format", help="csv | parquet."),
    sampling: str = typer.Option(
        "auto",
        "--sampling",
        help="auto (sparse when --suppress-below > 0 is set) | sparse (exact sparse sampler of the zero "
        "cells, Cormode et al. 2012) | dense (noise on every cell).",
    ),
    marginals: str = typer.Option(
        "auto",
        "--marginals",
        help="auto (noisy-joint with dense sampling, published-joint with sparse, charged when "
        "--marginal-epsilon/--marginal-scale is given) | noisy-joint | published-joint | charged.",
    ),
    marginal_epsilon: float | None = typer.Option(
        None,
        "--marginal-epsilon",
        help="Charged marginals: epsilon of each marginal table (default: none; needed with --marginals charged).",
    ),
    marginal_scale: float | None = typer.Option(
        None,
        "--marginal-scale",
        help="Charged marginals: noise scale instead of --marginal-epsilon (default: none).",
    ),
    budget_epsilon: float | None = typer.Option(
        None, "--budget-epsilon", help="Refuse releases that spend more epsilon (default: no cap)."
    ),
    budget_delta: float = typer.Option(1e-5, "--budget-delta", help="Refuse releases that spend more delta."),
    dataset: Dataset = None,
    budget_store: BudgetStoreUrl = None,
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print what the release would cost (no data read, nothing written)."
    ),
    engine: str = typer.Option(
        "polars",
        "--engine",
        help="Per-event stage: polars (in-process) or spark, see docs/scale-out.md (default: polars).",
    ),
    spark_master: str | None = typer.Option(
        None,
        "--spark-master",
        help="With --engine spark: master URL, e.g. spark://host:7077 (default: local[*]).",
    ),
    allow_meaningless_epsilon: AllowMeaninglessEpsilon = False,
    overwrite: Overwrite = False,
) -> None:
    """Release a joint tap-count table and its marginals with DP (every cell, zeros included, is noised in law).

    With --suppress-below the default sparse sampler draws OpenDP noise for the non-zero cells and samples the
    published zero cells exactly (same output law as noise on every cell then suppression); without it every
    cell gets an OpenDP draw.

    Example:

        urbandp counts synth --out taps/ && urbandp counts release taps/events.csv --domain taps/domain.json
        --unit card-day --max-events 4 --epsilon 1 --suppress-below 18 --out rel/
    """
    import warnings

    from urbandp.counts.api import dry_run as cost
    from urbandp.counts.api import release_spec
    from urbandp.counts.spec import CountsReleaseSpec
    from urbandp.reports.outputs import dumps_strict
    from urbandp.results import OwnerWarning, ReleaseWarning
    from urbandp.session import Session

    spec = CountsReleaseSpec(
        domain=domain,
        select_partitions=select_partitions,
        input_kind=input_kind,
        unit=unit,
        max_events=max_events,
        max_per_cell=max_per_cell,
        method=method,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        noise_scale=noise_scale,
        suppress_below=suppress_below,
        threshold=threshold,
        precision=precision,
        consistent=consistent,
        top_k=top_k,
        top_k_epsilon=top_k_epsilon,
        top_k_tap=top_k_tap,
        format=fmt,
        sampling=sampling,
        marginals=marginals,
        marginal_epsilon=marginal_epsilon,
        marginal_scale=marginal_scale,
        budget_epsilon=budget_epsilon,
        budget_delta=budget_delta,
        engine=engine,
        spark_master=spark_master,
    )
    if dry_run:
        plan = cost(spec, allow_meaningless_epsilon=allow_meaningless_epsilon)
        typer.echo(dumps_strict(plan, indent=None))
        return
    session = Session(budget_store, dataset, allow_meaningless_epsilon=allow_meaningless_epsilon)
    with warnings.catch_warnings():  # the command prints its own warning lines
        warnings.simplefilter("ignore", ReleaseWarning)
        warnings.simplefilter("ignore", OwnerWarning)
        rel = release_spec(input, spec, session=session, out=out, overwrite=overwrite, progress=_progress_bar)
    _print_summary(rel, out)


@contextlib.contextmanager
def _progress_bar(total: int) -> Iterator[Callable[[int], None]]:
    """A transient Rich bar on stderr while the noise is drawn."""
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("adding OpenDP noise", total=total)
        yield lambda n: progress.advance(task, n)


def _print_summary(rel: CountsRelease, out: Path) -> None:
    """The one-line JSON summary on stdout (and the release's warnings on stderr), once the charge is committed."""
    from urbandp.reports.outputs import dumps_strict

    privacy = rel.privacy.to_dict()
    for text in rel.warnings:
        typer.echo(f"urbandp: warning: {text}", err=True)
    if rel.domain is None:  # partition selection
        keys: tuple[str, ...] = ("method", "epsilon", "delta", "threshold")
        summary = {k: privacy.get(k) for k in keys}
    else:
        keys = (
            "method",
            "differentially_private",
            "unit",
            "mechanism",
            "sampling",
            "marginals",
            "epsilon",
            "delta",
            "noise_scale",
            "total_epsilon",
        )
        summary = {k: privacy.get(k) for k in keys}
        card = privacy.get("per_card_window")
        if isinstance(card, dict):
            summary["per_card_window_epsilon"] = card.get("epsilon")
    summary["out"] = str(out)
    typer.echo(dumps_strict(summary, indent=None))


app.command(name="synth")(synth)
