"""``urbandp budget init|show|history``: declare a dataset's caps and look at what has been spent."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from urbandp._cli_options import BudgetStoreUrl, Overwrite
from urbandp._cli_support import cli_guard

if TYPE_CHECKING:
    from urbandp.budget._api import BudgetStatus

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, pretty_exceptions_enable=False)


def _cap(text: str) -> Any:
    """An optional cap of ``budget init`` (None: not set, or kept as declared)."""
    return typer.Option(None, help=text)


@contextlib.contextmanager
def _dataset_named() -> Iterator[None]:
    """The library's ``dataset`` is the command's DATASET argument, not a flag: a message naming it is shown as
    the library wrote it."""
    from urbandp.errors import InputError

    try:
        yield
    except InputError as err:
        raise err.renamed(lambda p: p if p == "dataset" else None) from None


@app.command("init")
@cli_guard
def init(
    dataset: str = typer.Argument(..., help="Dataset name."),
    unit: str = typer.Option(
        ..., help="Privacy unit: vehicle-day, card-day, event, reading, respondent, trip or person."
    ),
    epsilon_per_day: float | None = _cap(
        "Cap on epsilon per unit and calendar day (default: no per-day cap)."
    ),
    epsilon_total: float | None = _cap(
        "Cap on epsilon over all releases: the sum of each release's epsilon for a unit present on all of its "
        "days, as its privacy.json states it (default: no total cap)."
    ),
    rho_per_day: float | None = _cap("Cap on zCDP rho per calendar day (default: no rho cap)."),
    rho_total: float | None = _cap(
        "Cap on zCDP rho over all releases: each costs its rho for a unit on all of its D days (D^2 x its rho "
        "per day when it pools the days) (default: no cap)."
    ),
    delta_total: float | None = _cap(
        "Cap on delta over all releases: the sum of each release's delta for a unit present on all of its "
        "days (default for a new dataset: 1e-05, the largest delta of one release; 1: no cap)."
    ),
    budget_store: BudgetStoreUrl = None,
    operator: str | None = typer.Option(
        None,
        help="Who changes the caps, recorded in budget history (default $URBANDP_OPERATOR, else the OS user name).",
    ),
) -> None:
    """Declare DATASET with its caps (or change them; never below what is already spent). Every cap set or
    changed is recorded (who, when, old and new value) and shown by `budget history`.

    Example: urbandp budget init surat --unit vehicle-day --epsilon-per-day 12 --epsilon-total 400"""
    from urbandp.budget._api import declare

    now = declare(
        budget_store,
        dataset,
        unit=unit,
        epsilon_per_day=epsilon_per_day,
        epsilon_total=epsilon_total,
        rho_per_day=rho_per_day,
        rho_total=rho_total,
        delta_total=delta_total,
        operator=operator,
    )
    typer.echo(
        f"{dataset}: unit {unit}, epsilon per day {now.epsilon_per_day}, total {now.epsilon_total}, rho per day "
        f"{now.rho_per_day}"
        + ("" if now.rho_total is None else f", rho total {now.rho_total}")
        + ("" if now.delta_total is None else f", delta total {now.delta_total:g}")
        + " (caps not given again are kept)"
    )


@app.command("show")
@cli_guard
def show(
    dataset: str = typer.Argument(..., help="Dataset name."),
    out: Path | None = typer.Option(
        None,
        help="Directory for spend.csv and spend.png, written atomically (default: table on stdout only).",
    ),
    budget_store: BudgetStoreUrl = None,
    overwrite: Overwrite = False,
) -> None:
    """Per-day spend of DATASET against its caps (and a PNG of spend over the calendar with --out).

    Example: urbandp budget show surat --out out/budget"""
    from urbandp._privacy.budget_store import SPANNING_UNITS, _days, budget_left
    from urbandp.budget._api import show as status_of

    with _dataset_named():
        status = status_of(budget_store, dataset)
    caps, cap = status.caps, status.caps.epsilon_per_day
    typer.echo(f"dataset {dataset} (unit {caps.unit}); cap per day {cap}, total cap {caps.epsilon_total}")
    typer.echo(f"{'day':<12} {'epsilon':>10} {'left':>10} {'rho':>10} {'delta':>10}")
    rows = []
    for day in sorted(status.epsilon_per_day):
        eps, rho = status.epsilon_per_day[day], status.rho_per_day[day]
        delta = status.delta_per_day.get(day, 0.0)
        left = "" if cap is None else f"{budget_left(cap, eps):.6g}"
        typer.echo(f"{day:<12} {eps:>10.6g} {left:>10} {rho:>10.6g} {delta:>10.3g}")
        rows.append((day, eps, left, rho, delta))
    who = f", for {status.protects}" if caps.unit in SPANNING_UNITS else ""
    epsilon, group = status.epsilon_spent, status.rho_spent
    typer.echo(
        f"epsilon over all releases {epsilon:.6g}{_left_of(caps.epsilon_total, status.remaining.epsilon_total)}, "
        f"over {_days(len(rows))}{who}"
    )
    if caps.rho_total is not None or caps.rho_per_day is not None or any(r[3] > 0 for r in rows):
        typer.echo(
            f"group rho over all days {group:.6g}{_left_of(caps.rho_total, status.remaining.rho_total)}"
        )
    typer.echo(_delta_line(status, who))
    if out is not None:
        _write_show(out, dataset, cap, rows)


def _left_of(cap: float | None, left: float | None) -> str:
    """What is left of a total ``cap`` (:attr:`BudgetStatus.remaining`), or nothing when there is no such cap."""
    return "" if cap is None or left is None else f" (left {left:.6g} of {cap:g})"


def _delta_line(status: BudgetStatus, who: str) -> str:
    """The delta per day (the largest day's sum) and composed over all releases, with what is left of the cap."""
    worst = max(status.delta_per_day.values(), default=0.0)
    cap, spent = status.caps.delta_total, status.delta_spent
    if cap is None:
        left = " (no cap: declared before the store recorded delta; set one with budget init --delta-total)"
    else:
        left = f" (left {status.remaining.delta_total:.3g} of {cap:g})"
    return f"delta per day at most {worst:.3g}; delta over all releases {spent:.3g}{left}{who}"


def _write_show(
    out: Path, dataset: str, cap: float | None, rows: list[tuple[str, float, str, float, float]]
) -> None:
    import datetime as dt

    import matplotlib.dates as mdates

    from urbandp._figures import saved_figure
    from urbandp._outputs import atomic_output_dir

    with atomic_output_dir(out) as d:
        lines = ["day,epsilon,epsilon_left,rho,delta"] + [
            f"{a},{b:.12g},{c},{e:.12g},{f:.12g}" for a, b, c, e, f in rows
        ]
        (d.release / "spend.csv").write_text("\n".join(lines) + "\n")
        with saved_figure(d.release / "spend.png", figsize=(9, 3.5)) as (fig, ax):
            days = [float(mdates.date2num(dt.date.fromisoformat(r[0]))) for r in rows]
            ax.bar(days, [r[1] for r in rows], width=0.8, label="epsilon spent")
            if cap is not None:
                ax.axhline(cap, color="red", linestyle="--", label=f"cap per day ({cap:g})")
            top = max([r[1] for r in rows] + ([cap] if cap is not None else []) + [1e-9])
            ax.set_ylim(0, top * 1.3)  # room for the legend above the bars
            ax.xaxis_date()
            ax.xaxis.set_major_formatter(mdates.DateFormatter("%Y-%m-%d"))
            ax.set_ylabel("epsilon per unit-day")
            ax.set_title(f"Privacy budget spent on {dataset}, by calendar day")
            ax.legend(loc="upper right")
            fig.autofmt_xdate()


@app.command("history")
@cli_guard
def history(
    dataset: str = typer.Argument(..., help="Dataset name."),
    budget_store: BudgetStoreUrl = None,
) -> None:
    """Every release charged to DATASET (status, days, epsilon, delta, mechanism, content hash, operator, command
    line) and every change of its caps (who, old -> new), by time.

    Example: urbandp budget history surat"""
    from urbandp.budget._api import history as events_of

    with _dataset_named():
        events = events_of(budget_store, dataset)
    for event in events:
        typer.echo(_release_line(event) if event["kind"] == "release" else _cap_line(event))
    if not any(event["kind"] == "release" for event in events):
        typer.echo(f"no releases charged to {dataset} yet")


def _cap_line(c: dict[str, Any]) -> str:
    """One cap change: when, the field, old -> new (``none``: no cap), and who."""
    old = "none" if c["old"] is None else f"{c['old']:g}"
    new = "none" if c["new"] is None else f"{c['new']:g}"
    who = (
        "caps in force when the store was upgraded (earlier changes not recorded)"
        if c["migrated"]
        else c["operator"]
    )
    return (
        f"{c['changed_at'][:19]}  {'cap change':<20} {c['field'].replace('_', ' ')} {old} -> {new}  by {who}"
    )


def _release_line(r: dict[str, Any]) -> str:
    """One release: when, status, days, charge, mechanism, content hash, who and the command line."""
    return (
        f"{r['reserved_at'][:19]}  {r['status']:<20} {r['first_day']}..{r['last_day']} "
        f"({r['days']} days, epsilon {r['window_epsilon']:.6g}, delta {r['window_delta']:.3g})  {r['mechanism']}  "
        f"sha256={(r['content_hash'] or '-')[:16]}  by {r['operator'] or 'unknown'}  {r['command_line']}"
    )
