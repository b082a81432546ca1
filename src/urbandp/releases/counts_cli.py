"""CLI group `urbandp counts`: release tap-count tables with DP, and make synthetic raw taps with known truth."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from urbandp.errors import InputError, cli_guard

if TYPE_CHECKING:
    import polars as pl

    from urbandp.privacy.ledger import PrivacyLedger
    from urbandp.releases.counts import PrivacyUnit

app = typer.Typer(no_args_is_help=True)


@app.command()
@cli_guard
def release(
    input: Path = typer.Argument(
        ..., help="Events (mode,timestamp,tap,location[,card_id]) or counts (CSV/Parquet)."
    ),
    out: Path = typer.Option(..., "--out", help="Output folder."),
    domain: Path | None = typer.Option(
        None, "--domain", help="Public domain JSON (days, taps, bin_minutes, places)."
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
        None, "--epsilon", help="Epsilon for the joint table (scale calibrated by OpenDP)."
    ),
    delta: float = typer.Option(0.0, "--delta", help="Delta (Gaussian mechanism or partition selection)."),
    noise_scale: float | None = typer.Option(
        None, "--noise-scale", help="Noise scale instead of epsilon (epsilon is then computed)."
    ),
    suppress_below: float | None = typer.Option(
        None, "--suppress-below", help="Hide joint cells whose NOISY value is below this."
    ),
    threshold: float = typer.Option(
        18.0, "--threshold", help="data61-2016 only: release if noisy > threshold."
    ),
    precision: int = typer.Option(0, "--precision", help="Decimal places of released values."),
    consistent: bool = typer.Option(
        False, "--consistent", help="Consistent non-negative least-squares projection (post-processing)."
    ),
    top_k: int | None = typer.Option(
        None, "--top-k", help="Also release the k busiest places (OpenDP noisy top-k)."
    ),
    top_k_epsilon: float | None = typer.Option(None, "--top-k-epsilon", help="Epsilon charged for --top-k."),
    top_k_tap: str | None = typer.Option(
        None, "--top-k-tap", help="Rank places by this tap only (e.g. off = destinations)."
    ),
    fmt: str = typer.Option("csv", "--format", help="csv | parquet."),
    budget_epsilon: float | None = typer.Option(
        None, "--budget-epsilon", help="Refuse releases that spend more epsilon."
    ),
    budget_delta: float = typer.Option(1e-5, "--budget-delta", help="Refuse releases that spend more delta."),
    dataset: str | None = typer.Option(
        None, help="Charge this dataset in the budget store (urbandp budget)."
    ),
    budget_store: str | None = typer.Option(None, help="Budget store path or postgresql:// URL."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print what the release would cost (no data read, nothing written)."
    ),
) -> None:
    """Release a joint tap-count table (and marginals derived from it) with OpenDP noise on every cell.

    Example:

        urbandp counts synth --out taps/ && urbandp counts release taps/events.csv --domain taps/domain.json
        --unit card-day --max-events 4 --epsilon 1 --suppress-below 18 --out rel/
    """
    import json

    from rich.console import Console
    from rich.progress import Progress

    from urbandp.privacy.budget_store import release_budget
    from urbandp.privacy.ledger import PrivacyLedger
    from urbandp.releases.counts import CountDomain, CountReleaseConfig, PrivacyUnit, release_counts
    from urbandp.releases.counts.aggregate import joint_from_counts, joint_from_events, read_table
    from urbandp.releases.counts.output import write_release

    if input_kind not in ("events", "counts"):
        raise InputError(f"--input-kind must be events or counts, got {input_kind!r}")
    if fmt not in ("csv", "parquet"):
        raise InputError(f"--format must be csv or parquet, got {fmt!r}")
    punit = PrivacyUnit(unit, max_events, max_per_cell)
    try:
        ledger = PrivacyLedger(budget_epsilon=budget_epsilon, budget_delta=budget_delta)
    except ValueError as err:
        raise InputError(str(err)) from None
    if epsilon is None and noise_scale is None:
        raise InputError("give --epsilon or --noise-scale")
    if epsilon is not None and noise_scale is not None:
        raise InputError("give only one of --epsilon and --noise-scale (the other is computed)")
    if dry_run:
        if method == "data61-2016":
            raise InputError("--dry-run: the data61-2016 method is not DP and has no privacy cost to show")
        plan = CountReleaseConfig(
            method=method,
            mechanism=mechanism,
            epsilon=epsilon,
            delta=delta,
            noise_scale=noise_scale,
            unit=punit,
        ).plan()
        assert plan is not None
        typer.echo(
            json.dumps(
                {
                    "dry_run": True,
                    **punit.to_json(),
                    **plan.to_json(),
                    "top_k_epsilon": top_k_epsilon if top_k else None,
                }
            )
        )
        return
    df = read_table(input)
    if domain is None:
        if not select_partitions:
            raise InputError("no public domain: pass --domain FILE, or --select-partitions with --delta")
        _release_selected(df, out, punit, epsilon, noise_scale, delta, input_kind, ledger)
        return
    dom = CountDomain.from_file(domain)
    joint = joint_from_events(df, dom, punit) if input_kind == "events" else joint_from_counts(df, dom)
    if int(joint.counts.sum()) == 0 and joint.quarantine.height == joint.n_input_rows:
        raise InputError("no input row lies in the public domain (all quarantined)")
    config = CountReleaseConfig(
        method=method,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        noise_scale=noise_scale,
        unit=punit,
        suppress_below=suppress_below,
        precision=precision,
        consistent=consistent,
        top_k=top_k,
        top_k_epsilon=top_k_epsilon,
        top_k_tap=top_k_tap,
        data61_threshold=threshold,
    )
    if top_k_tap is not None and top_k_tap not in dom.taps:
        raise InputError(f"--top-k-tap {top_k_tap!r} is not a tap of the domain ({', '.join(dom.taps)})")
    if top_k is not None and not 1 <= top_k <= len(dom.places):
        raise InputError(
            f"--top-k must be between 1 and the number of places ({len(dom.places)}), got {top_k}"
        )
    plan = config.plan()
    if plan is not None:  # refuse an overspend before any work (DESIGN.md rule 5), top-k included
        ledger.check(
            plan.epsilon + (top_k_epsilon if top_k is not None and top_k_epsilon else 0.0), plan.delta
        )
    console = Console(stderr=True)
    eps_day = (plan.epsilon if plan else 0.0) + (
        top_k_epsilon if top_k is not None and top_k_epsilon else 0.0
    )
    if dataset is not None and plan is None:
        raise InputError("--dataset: this method is not DP and cannot be charged to a budget")
    with release_budget(
        dataset, budget_store, unit, min(dom.days), max(dom.days), eps_day, f"counts-{mechanism}"
    ) as budget:  # reserved before any noise; committed after writing, released on failure
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("adding OpenDP noise", total=dom.n_cells)
            rel = release_counts(
                joint.counts, dom, config, ledger=ledger, progress=lambda n: progress.advance(task, n)
            )
        rel.privacy["input_report_not_private"] = {
            "note": "raw-data statistics for the data owner; not differentially private, do not publish",
            "input_rows": joint.n_input_rows,
            "quarantined_rows": joint.quarantine.height,
            "truncated_events": joint.n_truncated,
            "input_kind": input_kind,
            "bounding": "truncation in urbandp"
            if input_kind == "events"
            else "declared upstream (not verified)",
        }
        write_release(rel, dom, out, fmt)
        out.mkdir(parents=True, exist_ok=True)
        joint.quarantine.write_csv(out / "quarantine.csv")
        if budget is not None:
            budget.set_output(out)
    summary = {
        k: rel.privacy.get(k)
        for k in (
            "method",
            "differentially_private",
            "unit",
            "mechanism",
            "epsilon",
            "delta",
            "noise_scale",
            "total_epsilon",
        )
    }
    summary["out"] = str(out)
    typer.echo(json.dumps(summary))


def _release_selected(
    df: pl.DataFrame,
    out: Path,
    punit: PrivacyUnit,
    epsilon: float | None,
    noise_scale: float | None,
    delta: float,
    input_kind: str,
    ledger: PrivacyLedger,
) -> None:
    """Partition selection path: no public domain, observed cells released only above a DP threshold."""
    import json

    import polars as pl

    from urbandp.privacy.ledger import LedgerEntry
    from urbandp.releases.counts.accounting import laplace_plan
    from urbandp.releases.counts.aggregate import EVENT_COLUMNS
    from urbandp.releases.counts.partitions import select_partitions

    if input_kind != "events":
        raise InputError("--select-partitions works on event input")
    missing = [c for c in EVENT_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"event input is missing column(s) {', '.join(missing)}")
    plan = laplace_plan(punit, epsilon=None if noise_scale is not None else epsilon, scale=noise_scale)
    ts = (
        pl.col("timestamp").str.to_datetime(strict=False)
        if df.schema["timestamp"] == pl.String
        else pl.col("timestamp")
    )
    df = df.with_columns(_ts=ts)
    bad = df.filter(pl.any_horizontal([pl.col(c).is_null() for c in EVENT_COLUMNS]) | pl.col("_ts").is_null())
    good = df.filter(
        ~(pl.any_horizontal([pl.col(c).is_null() for c in EVENT_COLUMNS]) | pl.col("_ts").is_null())
    )
    if punit.kind == "card-day":
        if "card_id" not in good.columns:
            raise InputError("card-day unit needs a card_id column")
        good = good.with_columns(_day=pl.col("_ts").dt.date()).sort(["card_id", "_day", "_ts"])
        good = good.filter(pl.int_range(pl.len()).over(["card_id", "_day"]) < punit.max_events)
    key = pl.concat_str(
        [
            pl.col("mode"),
            pl.col("_ts").dt.date().cast(pl.String),
            pl.col("tap"),
            (pl.col("_ts").dt.truncate("15m").dt.strftime("%H:%M")),
            pl.col("location"),
        ],
        separator="|",
    )
    grouped = good.group_by(key.alias("key")).len()
    if punit.kind == "card-day":
        # at most m events of one card-day per cell: recount with the cap
        grouped = (
            good.with_columns(key.alias("key"))
            .with_columns(_r=pl.int_range(pl.len()).over(["card_id", "_day", "key"]))
            .filter(pl.col("_r") < punit.max_per_cell)
            .group_by("key")
            .len()
        )
    sel = select_partitions(
        dict(zip(grouped["key"].to_list(), grouped["len"].to_list(), strict=False)),
        punit,
        plan.noise_scale,
        delta,
    )
    ledger.charge(
        LedgerEntry(
            "joint count table (partition selection)",
            sel.epsilon,
            sel.delta,
            punit.name,
            punit.neighbouring,
            "opendp make_laplace_threshold",
            {"threshold": sel.threshold},
        )
    )
    rows = [[*k.split("|"), v] for k, v in sel.released.items()]
    table = pl.DataFrame(rows, schema=["mode", "day", "tap", "bin", "location", "count"], orient="row")
    out.mkdir(parents=True, exist_ok=True)
    table.sort(["mode", "day", "tap", "bin", "location"]).write_csv(out / "joint.csv")
    bad.drop("_ts").with_columns(
        pl.all().cast(pl.String), reason=pl.lit("missing value or unparsable timestamp")
    ).write_csv(out / "quarantine.csv")
    privacy = {
        "method": "urbandp",
        "differentially_private": True,
        **punit.to_json(),
        "mechanism": "discrete laplace + threshold (OpenDP make_laplace_threshold, partition selection)",
        "noise_scale": sel.noise_scale,
        "threshold": sel.threshold,
        "epsilon": sel.epsilon,
        "delta": sel.delta,
        "zeros_perturbed": "not applicable: domain is not public, cells are selected with DP",
        "domain": {"source": "dp partition selection"},
        "marginals": "none (derive from joint.csv)",
        "total_epsilon": ledger.epsilon_spent,
        "total_delta": ledger.delta_spent,
        "ledger": ledger.to_dict(),
        "input_report_not_private": {"input_rows": df.height, "quarantined_rows": bad.height},
    }
    (out / "privacy.json").write_text(json.dumps(privacy, indent=2))
    typer.echo(
        json.dumps(
            {
                "method": "urbandp",
                "epsilon": sel.epsilon,
                "delta": sel.delta,
                "threshold": sel.threshold,
                "out": str(out),
            }
        )
    )


@app.command()
@cli_guard
def synth(
    out: Path = typer.Option(..., "--out", help="Output folder (events.csv, domain.json, truth_joint.npy)."),
    trips_per_day: int = typer.Option(
        20_000, "--trips-per-day", help="Ordinary trips per day (two taps each)."
    ),
    ferry_trips_per_day: int = typer.Option(
        3_000, "--ferry-trips-per-day", help="Manly ferry trips per day."
    ),
    days: int = typer.Option(7, "--days", help="Number of days from 2016-08-08."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
    fmt: str = typer.Option("csv", "--format", help="csv | parquet."),
) -> None:
    """Generate synthetic raw taps with known truth (includes a point-to-point ferry with equal on/off counts).

    Example:

        urbandp counts synth --out taps/ --days 7 --trips-per-day 20000
    """
    import json

    import numpy as np

    from urbandp.releases.counts import CountDomain, PrivacyUnit
    from urbandp.releases.counts.aggregate import joint_from_events
    from urbandp.synth.taps import generate_taps

    if days < 1 or trips_per_day < 0 or ferry_trips_per_day < 0:
        raise InputError("--days must be >= 1 and trip counts >= 0")
    if fmt not in ("csv", "parquet"):
        raise InputError(f"--format must be csv or parquet, got {fmt!r}")
    s = generate_taps(
        trips_per_day=trips_per_day, ferry_trips_per_day=ferry_trips_per_day, days=days, seed=seed
    )
    out.mkdir(parents=True, exist_ok=True)
    events_path = out / f"events.{fmt}"
    if fmt == "csv":
        s.events.write_csv(events_path)
    else:
        s.events.write_parquet(events_path)
    (out / "domain.json").write_text(json.dumps(s.domain, indent=2))
    truth = joint_from_events(s.events, CountDomain.from_json(s.domain), PrivacyUnit("event"))
    np.save(out / "truth_joint.npy", truth.counts)
    typer.echo(
        json.dumps({"events": str(events_path), "rows": s.events.height, "domain": str(out / "domain.json")})
    )
