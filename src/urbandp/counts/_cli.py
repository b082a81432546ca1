"""CLI group `urbandp counts`: release tap-count tables with DP, and make synthetic raw taps with known truth."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from urbandp._cli_config import config_option
from urbandp._cli_options import AllowMeaninglessEpsilon, BudgetStoreUrl, Dataset, Overwrite
from urbandp._cli_spec import OptionsOf, command
from urbandp._cli_support import cli_text, quietly
from urbandp.counts._options import CountsReleaseSpec
from urbandp.counts._prepare_command import prepare
from urbandp.counts._synth_command import synth

if TYPE_CHECKING:
    from urbandp.counts._api import CountsRelease

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReleaseArguments:
    """``urbandp counts release``: the input, where it goes, the release's options and where it is charged."""

    input: Annotated[
        Path, typer.Argument(help="Events (mode,timestamp,tap,location[,card_id]) or counts (CSV/Parquet).")
    ]
    out: Annotated[Path, typer.Option("--out", help="Output folder.")]
    config: Annotated[Path | None, config_option("counts.release")] = None
    spec: Annotated[CountsReleaseSpec, OptionsOf()]
    dataset: Dataset = None
    budget_store: BudgetStoreUrl = None
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print what the release would cost (no data read, nothing written)."),
    ] = False
    allow_meaningless_epsilon: AllowMeaninglessEpsilon = False
    overwrite: Overwrite = False


@command(app, ReleaseArguments)
def release(a: ReleaseArguments) -> None:
    """Release a joint tap-count table and its marginals with DP (every cell, zeros included, is noised in law).

    With --suppress-below the default sparse sampler draws OpenDP noise for the non-zero cells and samples the
    published zero cells exactly (same output law as noise on every cell then suppression); without it every
    cell gets an OpenDP draw.

    Example:

        urbandp counts synth --out taps/ && urbandp counts release taps/events.csv --domain taps/domain.json
        --unit card-day --max-events 4 --epsilon 1 --suppress-below 18 --out rel/
    """
    from urbandp._outputs import dumps_strict
    from urbandp._progress import progress_bar
    from urbandp._session import Session
    from urbandp.counts._api import dry_run as cost
    from urbandp.counts._api import release_spec
    from urbandp.counts._threshold_advice import advice_line

    if a.dry_run:
        plan = cost(a.spec, allow_meaningless_epsilon=a.allow_meaningless_epsilon)
        typer.echo(dumps_strict(plan, indent=None))
        advised = plan.get("suppression_advice")
        if isinstance(advised, dict):
            typer.echo(f"urbandp: advice: {cli_text(advice_line(advised, plan.get('unit')))}", err=True)
        return
    session = Session(a.budget_store, a.dataset, allow_meaningless_epsilon=a.allow_meaningless_epsilon)
    rel = quietly(
        release_spec,
        a.input,
        a.spec,
        session=session,
        out=a.out,
        overwrite=a.overwrite,
        progress=lambda total: progress_bar("adding OpenDP noise", total),
    )
    _print_summary(rel, a.out)


def _print_summary(rel: CountsRelease, out: Path) -> None:
    """The one-line JSON summary on stdout (and the release's warnings on stderr), once the charge is committed."""
    from urbandp._outputs import dumps_strict

    privacy = rel.privacy.to_dict()
    for text in rel.warnings:
        typer.echo(f"urbandp: warning: {cli_text(text)}", err=True)
    if rel.domain is None:  # partition selection
        keys: tuple[str, ...] = ("method", "epsilon", "delta", "threshold")
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
    if rel.domain is not None and isinstance(card, dict):
        summary["per_card_window_epsilon"] = card.get("epsilon")
    summary["out"] = str(out)
    typer.echo(dumps_strict(summary, indent=None))


app.command(name="synth")(synth)
app.command(name="prepare")(prepare)
