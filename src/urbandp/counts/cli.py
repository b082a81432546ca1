"""CLI group `urbandp counts`: release tap-count tables with DP, and make synthetic raw taps with known truth."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from urbandp.cli_options import AllowMeaninglessEpsilon, BudgetStoreUrl, Dataset, Overwrite
from urbandp.errors import InputError, cli_guard
from urbandp.privacy.report import write_privacy_json

if TYPE_CHECKING:
    import polars as pl

    from urbandp.counts import PrivacyUnit
    from urbandp.privacy.ledger import PrivacyLedger
    from urbandp.privacy.session import Session

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
    from rich.console import Console
    from rich.progress import Progress

    from urbandp.counts import CountDomain, CountReleaseConfig, PrivacyUnit, release_counts
    from urbandp.counts.accounting import release_loss
    from urbandp.counts.aggregate import JointCounts, joint_from_counts, joint_from_events, read_table
    from urbandp.counts.output import write_release
    from urbandp.privacy.ledger import PrivacyLedger
    from urbandp.privacy.loss import Loss, check_delta, meaningless_reasons
    from urbandp.privacy.session import Session, days_between
    from urbandp.reports.outputs import atomic_output_dir, dumps_strict, write_json

    if domain is not None and select_partitions:
        raise InputError(
            "give --domain (a public list of cells) or --select-partitions (cells chosen with DP), not both"
        )
    if input_kind not in ("events", "counts"):
        raise InputError(f"--input-kind must be events or counts, got {input_kind!r}")
    if fmt not in ("csv", "parquet"):
        raise InputError(f"--format must be csv or parquet, got {fmt!r}")
    punit = PrivacyUnit(
        unit, max_events, max_per_cell, bounding="declared" if input_kind == "counts" else "truncation"
    )
    if budget_epsilon is not None and not budget_epsilon > 0:
        raise InputError(f"--budget-epsilon must be a number above 0, got {budget_epsilon:g}")
    check_delta(delta, "--delta")
    ledger = PrivacyLedger(conversion_delta=delta if mechanism == "gaussian" and delta > 0 else None)
    if epsilon is None and noise_scale is None:
        raise InputError("give --epsilon or --noise-scale")
    if epsilon is not None and noise_scale is not None:
        raise InputError("give only one of --epsilon and --noise-scale (the other is computed)")
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
        sampling=sampling,
        marginals=marginals,
        marginal_epsilon=marginal_epsilon,
        marginal_scale=marginal_scale,
    )
    if dry_run:
        if method == "data61-2016":
            raise InputError("--dry-run: the data61-2016 method is not DP and has no privacy cost to show")
        plan = config.plan()
        assert plan is not None
        m_plan = config.marginal_plan()
        loss = release_loss(plan, m_plan, top_k_epsilon if top_k else None)
        not_dp = meaningless_reasons(
            loss, config.conversion_delta(), per=punit.name, allow=allow_meaningless_epsilon
        )
        total_eps, total_delta, _ = loss.approx(config.conversion_delta())
        window: dict[str, object] | None = None
        if domain is not None:  # the domain is public: its number of days sets the per-card figure
            from urbandp.counts.window import per_card_window

            days = len(CountDomain.from_file(domain).days)
            topk_info: dict[str, object] | None = (
                {"epsilon": top_k_epsilon} if top_k and top_k_epsilon else None
            )
            window = per_card_window(
                config, plan, m_plan, topk_info, days, (total_eps or 0.0, total_delta or 0.0)
            )
        typer.echo(
            dumps_strict(
                {
                    "dry_run": True,
                    **punit.to_json(),
                    **plan.to_json(),
                    "sampling": config.resolved_sampling,
                    "marginals": config.resolved_marginals,
                    "marginal_noise": None if m_plan is None else m_plan.to_json(),
                    "top_k_epsilon": top_k_epsilon if top_k else None,
                    "total_epsilon": total_eps,
                    "total_delta": total_delta,
                    "composition": "rho summed over the Gaussian tables, converted once at --delta"
                    if plan.rho is not None
                    else "pure epsilon summed over the tables",
                    "differentially_private": not not_dp,
                    "not_dp_reasons": not_dp,
                    "per_card_window": window,
                },
                indent=None,
            )
        )
        return
    from urbandp.contributions.spark_session import check_engine

    if check_engine(engine, spark_master) == "spark" and (domain is None or input_kind != "events"):
        raise InputError("--engine spark runs the per-event stage: it needs --input-kind events and --domain")
    df = read_table(input) if engine == "polars" else None
    if domain is None:
        assert df is not None
        if not select_partitions:
            raise InputError("no public domain: pass --domain FILE, or --select-partitions with --delta")
        cap = None if budget_epsilon is None else Loss.approx_dp(budget_epsilon, budget_delta)
        with Session(
            dataset,
            budget_store,
            unit=punit.kind,
            out=out,
            cap=cap,
            allow_meaningless_epsilon=allow_meaningless_epsilon,
        ) as session:
            _release_selected(
                df,
                out,
                punit,
                epsilon,
                noise_scale,
                delta,
                input_kind,
                ledger,
                session,
                allow_meaningless_epsilon,
            )
        return
    dom = CountDomain.from_file(domain)
    dom.check_fits(dense=config.resolved_sampling == "dense")
    joint: JointCounts
    if df is None:  # --engine spark: the per-event stage on Spark, the quarantine written there as Parquet
        from urbandp.contributions.spark_counts import joint_from_events_spark

        joint = joint_from_events_spark(input, dom, punit, spark_master)
    else:
        joint = joint_from_events(df, dom, punit) if input_kind == "events" else joint_from_counts(df, dom)
    q_rows, q_reasons = _quarantine_counts(joint)
    if joint.total == 0 and q_rows == joint.n_input_rows:
        top = "; ".join(f"{r} ({n})" for r, n in sorted(q_reasons.items(), key=lambda x: -x[1])[:3])
        raise InputError(
            f"no input row lies in the public domain: all {joint.n_input_rows} quarantined: {top}"
        )
    if top_k_tap is not None and top_k_tap not in dom.taps:
        raise InputError(f"--top-k-tap {top_k_tap!r} is not a tap of the domain ({', '.join(dom.taps)})")
    if top_k is not None and not 1 <= top_k <= len(dom.places):
        raise InputError(
            f"--top-k must be between 1 and the number of places ({len(dom.places)}), got {top_k}"
        )
    plan = config.plan()
    if dataset is not None and plan is None:
        raise InputError("--dataset: this method is not DP and cannot be charged to a budget")
    console = Console(stderr=True)
    cap = None if budget_epsilon is None else Loss.approx_dp(budget_epsilon, budget_delta)
    with Session(
        dataset,
        budget_store,
        unit=unit,
        out=out,
        cap=cap,
        noise=None,
        allow_meaningless_epsilon=allow_meaningless_epsilon,
    ) as session:
        not_dp = []
        if (
            plan is not None
        ):  # the whole loss, reserved (and checked against --budget-epsilon) before any noise
            loss = release_loss(plan, config.marginal_plan(), top_k_epsilon if top_k is not None else None)
            session.conversion_delta = config.conversion_delta()
            not_dp = meaningless_reasons(
                loss, session.conversion_delta, per=punit.name, allow=allow_meaningless_epsilon
            )
            session.refuse_not_dp(not_dp)
            session.reserve(
                loss,
                days_between(min(dom.days), max(dom.days)),
                f"counts-{mechanism}",
                {"method": method, "unit": punit.name},
                cap_on="day",
            )
        else:
            session.reserve(Loss(), days_between(min(dom.days), max(dom.days)), "counts-data61-not-dp")
        with Progress(console=console, transient=True) as progress:
            n_noised = dom.n_cells if config.resolved_sampling == "dense" else int(joint.sparse.index.size)
            task = progress.add_task("adding OpenDP noise", total=n_noised)
            rel = release_counts(
                joint.sparse,
                dom,
                config,
                noise=session.noise,
                ledger=ledger,
                progress=lambda n: progress.advance(task, n),
            )
        if not_dp:
            rel.privacy["differentially_private"] = False
            rel.privacy["not_dp_reasons"] = [*rel.privacy["not_dp_reasons"], *not_dp]  # type: ignore[misc]
        input_report = {
            "note": "raw-data statistics for the data owner; not differentially private, do not publish",
            "input_rows": joint.n_input_rows,
            "quarantined_rows": q_rows,
            "quarantine_reasons": q_reasons,
            "truncated_events": joint.n_truncated,
            "non_zero_cells": int(joint.sparse.index.size),
            "published_cells_with_raw_zero": None if rel.cells is None else rel.cells.n_zero_published,
            "input_kind": input_kind,
            "bounding": "truncation in urbandp"
            if input_kind == "events"
            else "declared upstream (not verified)",
        }
        q_parquet = getattr(joint, "quarantine_parquet", None)
        q_name = "quarantine.csv" if q_parquet is None else "quarantine.parquet"
        with atomic_output_dir(out) as d:
            if q_parquet is None:
                joint.quarantine.write_csv(d.owner_path(q_name))
            else:  # written by Spark: a directory of part files, moved in whole
                import shutil

                shutil.move(str(q_parquet), d.owner_path(q_name))
            write_json(d.owner_path("input_report.json"), input_report)
            rel.privacy["not_dp_outputs"] = {
                "../owner_only/" + out.name + "/" + q_name: "raw rejected input rows with their reason",
                "../owner_only/" + out.name + "/input_report.json": "row counts of the raw input",
            }
            write_release(rel, dom, d.release, fmt)
        session.set_output(out)
        session.later(lambda: _print_summary(rel, out))


def _print_summary(rel: object, out: Path) -> None:
    """The one-line JSON summary on stdout (and the suppression warning): printed once the charge is committed."""
    from urbandp.reports.outputs import dumps_strict

    summary = {
        k: rel.privacy.get(k)  # type: ignore[attr-defined]
        for k in (
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
    }
    suppression = rel.privacy.get("suppression")  # type: ignore[attr-defined]
    if isinstance(suppression, dict) and "warning" in suppression:
        typer.echo(f"urbandp: warning: {suppression['warning']}", err=True)
    card = rel.privacy.get("per_card_window")  # type: ignore[attr-defined]
    if isinstance(card, dict):
        summary["per_card_window_epsilon"] = card.get("epsilon")
    summary["out"] = str(out)
    typer.echo(dumps_strict(summary, indent=None))


def _quarantine_counts(joint: object) -> tuple[int, dict[str, int]]:
    """(rows, rows per reason) of a joint's quarantine, whether held here (Polars) or written by Spark."""
    reasons = getattr(joint, "reasons", None)
    if reasons is not None:
        return sum(reasons.values()), dict(reasons)
    quarantine = joint.quarantine  # type: ignore[attr-defined]
    return quarantine.height, dict(quarantine["reason"].value_counts().iter_rows())


def _release_selected(
    df: pl.DataFrame,
    out: Path,
    punit: PrivacyUnit,
    epsilon: float | None,
    noise_scale: float | None,
    delta: float,
    input_kind: str,
    ledger: PrivacyLedger,
    session: Session,
    allow_meaningless: bool,
) -> None:
    """Partition selection path: no public domain, observed cells released only above a DP threshold.

    With --dataset the selection's epsilon (from OpenDP's map of the threshold measurement, before it is invoked)
    is reserved on each day that holds a valid event: a unit-day on another day is in no cell.
    """
    import polars as pl

    from urbandp.counts.accounting import laplace_plan
    from urbandp.counts.aggregate import EVENT_COLUMNS
    from urbandp.counts.partitions import select_partitions
    from urbandp.privacy.ledger import LedgerEntry
    from urbandp.reports.outputs import atomic_output_dir, dumps_strict, write_json

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
    from urbandp.counts.partitions import calibrate_threshold, threshold_measurement
    from urbandp.privacy.loss import Loss, meaningless_reasons

    meas = threshold_measurement(plan.noise_scale, calibrate_threshold(punit, plan.noise_scale, delta))
    eps_sel, delta_sel = meas.map((punit.l0, punit.l1, punit.linf))
    loss = Loss.approx_dp(float(eps_sel), float(delta_sel))
    not_dp = meaningless_reasons(loss, None, per=punit.name, allow=allow_meaningless)
    session.refuse_not_dp(not_dp)
    days = sorted(set(good["_ts"].dt.date().to_list()))
    params = {"epsilon": eps_sel, "delta": delta_sel, "noise_scale": plan.noise_scale}
    session.reserve(loss, days, "counts-partition-selection", params, cap_on="day")
    session.mark_drawn()  # OpenDP's threshold measurement is invoked directly below
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
    privacy = {
        "method": "urbandp",
        "differentially_private": not not_dp,
        "not_dp_reasons": not_dp,
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
        "not_dp_outputs": {
            "../owner_only/" + out.name + "/quarantine.csv": "raw rejected input rows with their reason",
            "../owner_only/" + out.name + "/input_report.json": "row counts of the raw input",
        },
    }
    with atomic_output_dir(out) as d:
        table.sort(["mode", "day", "tap", "bin", "location"]).write_csv(d.release / "joint.csv")
        bad.drop("_ts").with_columns(
            pl.all().cast(pl.String), reason=pl.lit("missing value or unparsable timestamp")
        ).write_csv(d.owner_path("quarantine.csv"))
        write_json(
            d.owner_path("input_report.json"),
            {"note": "not differentially private", "input_rows": df.height, "quarantined_rows": bad.height},
        )
        write_privacy_json(d.release, privacy)
    session.set_output(out)
    summary = {"method": "urbandp", "epsilon": sel.epsilon, "delta": sel.delta, "threshold": sel.threshold}
    session.say(dumps_strict({**summary, "out": str(out)}, indent=None))


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
    overwrite: Overwrite = False,
) -> None:
    """Generate synthetic raw taps with known truth (includes a point-to-point ferry with equal on/off counts).

    Example:

        urbandp counts synth --out taps/ --days 7 --trips-per-day 20000
    """
    import numpy as np

    from urbandp.counts import CountDomain, PrivacyUnit
    from urbandp.counts.aggregate import joint_from_events
    from urbandp.reports.outputs import atomic_output_dir, check_output_path, dumps_strict, write_json
    from urbandp.synth.taps import MAX_SYNTH_DAYS, MAX_SYNTH_EVENTS, generate_taps

    if days < 1 or trips_per_day < 0 or ferry_trips_per_day < 0:
        raise InputError("--days must be >= 1 and trip counts >= 0")
    if days > MAX_SYNTH_DAYS:
        raise InputError(f"--days {days} is above the synthetic generator's limit of {MAX_SYNTH_DAYS} days")
    n_events = 2 * (trips_per_day + ferry_trips_per_day) * days
    if n_events > MAX_SYNTH_EVENTS:
        raise InputError(
            f"{n_events:,} synthetic taps requested (2 x (trips + ferry trips) x days); at most "
            f"{MAX_SYNTH_EVENTS:,}: lower --days or --trips-per-day"
        )
    if not 0 <= seed < 2**63:
        raise InputError(f"--seed must be between 0 and 2^63 - 1, got {seed}")
    if fmt not in ("csv", "parquet"):
        raise InputError(f"--format must be csv or parquet, got {fmt!r}")
    check_output_path(out)
    s = generate_taps(
        trips_per_day=trips_per_day, ferry_trips_per_day=ferry_trips_per_day, days=days, seed=seed
    )
    truth = joint_from_events(s.events, CountDomain.from_json(s.domain), PrivacyUnit("event"))
    with atomic_output_dir(out) as d:
        events_path = d.release / f"events.{fmt}"
        if fmt == "csv":
            s.events.write_csv(events_path)
        else:
            s.events.write_parquet(events_path)
        write_json(d.release / "domain.json", s.domain)
        np.save(d.release / "truth_joint.npy", truth.counts)
    typer.echo(
        dumps_strict(
            {
                "events": str(out / f"events.{fmt}"),
                "rows": s.events.height,
                "domain": str(out / "domain.json"),
            },
            indent=None,
        )
    )
