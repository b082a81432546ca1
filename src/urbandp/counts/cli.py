"""CLI group `urbandp counts`: release tap-count tables with DP, and make synthetic raw taps with known truth."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from urbandp.cli_config import config_option
from urbandp.cli_options import AllowMeaninglessEpsilon, BudgetStoreUrl, Dataset, Overwrite
from urbandp.cli_support import cli_guard
from urbandp.counts import flags
from urbandp.counts.synth_command import synth

if TYPE_CHECKING:
    from urbandp.counts.api import CountsRelease

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


@app.command()
@cli_guard
def release(
    input: flags.InputArgument,
    out: flags.OutOption,
    config: Path | None = config_option("counts.release"),
    domain: flags.DomainOption = None,
    select_partitions: flags.SelectPartitionsOption = False,
    input_kind: flags.InputKindOption = "events",
    unit: flags.UnitOption = "event",
    max_events: flags.MaxEventsOption = 1,
    max_per_cell: flags.MaxPerCellOption = 1,
    method: flags.MethodOption = "urbandp",
    mechanism: flags.MechanismOption = "laplace",
    epsilon: flags.EpsilonOption = None,
    delta: flags.DeltaOption = 0.0,
    noise_scale: flags.NoiseScaleOption = None,
    suppress_below: flags.SuppressBelowOption = None,
    threshold: flags.ThresholdOption = 18.0,
    precision: flags.PrecisionOption = 0,
    consistent: flags.ConsistentOption = False,
    top_k: flags.TopKOption = None,
    top_k_epsilon: flags.TopKEpsilonOption = None,
    top_k_tap: flags.TopKTapOption = None,
    fmt: flags.FmtOption = "csv",
    sampling: flags.SamplingOption = "auto",
    marginals: flags.MarginalsOption = "auto",
    marginal_epsilon: flags.MarginalEpsilonOption = None,
    marginal_scale: flags.MarginalScaleOption = None,
    budget_epsilon: flags.BudgetEpsilonOption = None,
    budget_delta: flags.BudgetDeltaOption = 1e-5,
    dataset: Dataset = None,
    budget_store: BudgetStoreUrl = None,
    dry_run: flags.DryRunOption = False,
    engine: flags.EngineOption = "polars",
    spark_master: flags.SparkMasterOption = None,
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
    from urbandp.outputs import dumps_strict
    from urbandp.results import OwnerWarning, ReleaseWarning
    from urbandp.session import Session

    spec = CountsReleaseSpec.from_options({**locals(), "format": fmt})
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
    from urbandp.outputs import dumps_strict

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
