"""``urbandp counts synth``: synthetic raw taps with known truth (mounted on the ``urbandp counts`` group)."""

from __future__ import annotations

from pathlib import Path

import typer

from urbandp._cli_options import Overwrite
from urbandp._cli_support import cli_guard
from urbandp.errors import InputError


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

    from urbandp._outputs import atomic_output_dir, check_output_path, dumps_strict, write_json
    from urbandp._synth.taps import MAX_SYNTH_DAYS, MAX_SYNTH_EVENTS, generate_taps
    from urbandp.counts import CountDomain, PrivacyUnit
    from urbandp.counts._aggregate import joint_from_events

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
