"""Extract the busiest HAT (hexagon and time slot) from AVL files, for the real-data mean experiment.

The paper (section II-B) works on one HAT: an H3 cell (resolution 7) and a 1-hour slot, over several days. Here:
records with a local hour in ``[start, end)`` (the hour is read from the ISO timestamp as written, i.e. local
time, its UTC offset ignored), H3 cell from ``polars_h3.latlng_to_cell``, slot = the local hour; the HAT
with the most records over all given files wins (ties: more vehicles, then the smaller cell id and slot).
Which HAT is busiest is a data-dependent choice: this is a utility experiment, not a release.

Nothing is dropped silently: a row without a vehicle, a readable hour, a speed or coordinates goes to
``owner_only/<out stem>/quarantine.csv`` beside ``out`` with its reason (the names of
:data:`urbandp._records.validation.REASONS`), and the counts are returned; rows outside the hours are counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from urbandp._grid.h3cells import check_resolution
from urbandp.errors import InputError

REQUIRED = ("vehicle_id", "timestamp", "speed", "latitude", "longitude")


@dataclass(frozen=True)
class BusiestHat:
    h3_cell: str
    slot: str
    n_records: int
    n_vehicles: int
    n_days: int
    n_hats: int
    n_candidate_records: int
    records_in: int = 0
    records_quarantined: int = 0
    records_outside_hours: int = 0
    quarantine_reasons: dict[str, int] = field(default_factory=dict)
    quarantine_path: Path | None = None


def _read(path: Path) -> pl.DataFrame:
    from urbandp._table_reader import read_table

    df = read_table(path, allow_empty=True)
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
    return df.select(pl.col(REQUIRED).cast(pl.String)).with_columns(
        pl.lit(path.name).alias("source"), pl.int_range(1, pl.len() + 1, dtype=pl.UInt32).alias("row")
    )


def _reason() -> pl.Expr:
    """The first failed check per row (reason names of the fleet validation), null for a usable row."""
    checks = [
        ("missing_vehicle", pl.col("vehicle_id").is_null() | (pl.col("vehicle_id").str.strip_chars() == "")),
        ("unparseable_timestamp", pl.col("hour").is_null() | ~pl.col("hour").is_between(0, 23)),
        ("missing_coordinates", pl.col("latitude").is_null() | pl.col("longitude").is_null()),
        (
            "coordinates_out_of_range",
            ~pl.col("latitude").is_between(-90, 90) | ~pl.col("longitude").is_between(-180, 180),
        ),
        ("missing_speed", pl.col("speed").is_null() | pl.col("speed").is_nan()),
    ]
    return pl.coalesce(pl.when(check).then(pl.lit(name)) for name, check in checks)


def check_arguments(inputs: Sequence[Path], resolution: int, hours: tuple[int, int]) -> None:
    if not inputs:
        raise InputError("no input files")
    start, end = hours
    if not (0 <= start < end <= 24):
        raise InputError(f"hours must satisfy 0 <= start < end <= 24, got {start}-{end}")
    check_resolution(resolution)


def extract_busiest_hat(
    inputs: Sequence[Path],
    out: Path,
    resolution: int = 7,
    hours: tuple[int, int] = (9, 21),
    *,
    final_out: Path | None = None,
) -> BusiestHat:
    """Write the busiest HAT's records to ``out``; the quarantine goes beside ``final_out`` (default ``out``: the
    CLI writes ``out`` as a temporary file and renames it to ``final_out``)."""
    import polars_h3 as plh3

    from urbandp._outputs import write_owner_table
    from urbandp._records.validation import REASONS

    check_arguments(inputs, resolution, hours)
    start, end = hours

    frame = pl.concat([_read(Path(p)) for p in inputs]).with_columns(
        pl.col("speed").alias("speed_raw"),
        pl.col("speed").str.strip_chars().cast(pl.Float64, strict=False),
        pl.col("latitude").str.strip_chars().cast(pl.Float64, strict=False),
        pl.col("longitude").str.strip_chars().cast(pl.Float64, strict=False),
        pl.col("timestamp").str.slice(0, 10).alias("day"),
        pl.col("timestamp").str.slice(11, 2).cast(pl.Int32, strict=False).alias("hour"),
    )
    checked = frame.with_columns(_reason().alias("reason"))
    bad = checked.filter(pl.col("reason").is_not_null())
    reasons = {r: 0 for r in REASONS} | dict(bad.group_by("reason").len().iter_rows())
    quarantine_path = None
    if bad.height:
        quarantine_path = write_owner_table(  # owner_only/<out stem>/quarantine.csv beside out
            (final_out or out).with_suffix(""),
            "quarantine.csv",
            bad.select(
                "source",
                "row",
                "reason",
                pl.col("vehicle_id").alias("vehicle"),
                pl.col("timestamp").alias("timestamp_raw"),
                "latitude",
                "longitude",
                "speed_raw",
            ),
        )
    usable = checked.filter(pl.col("reason").is_null())
    if usable.height == 0:
        top_reasons = ", ".join(f"{k} {v:,}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1]) if v)
        raise InputError(
            f"all {frame.height:,} records were quarantined ({top_reasons}); the rows are in {quarantine_path}"
        )
    recs = (
        usable.drop("speed_raw", "reason", "source", "row")
        .filter((pl.col("hour") >= start) & (pl.col("hour") < end))
        .with_columns(
            plh3.latlng_to_cell("latitude", "longitude", resolution, return_dtype=pl.String).alias("h3_cell"),
            pl.format(
                "{}:00-{}:00",
                pl.col("hour").cast(pl.String).str.zfill(2),
                (pl.col("hour") + 1).cast(pl.String).str.zfill(2),
            ).alias("slot"),
        )
    )
    if recs.height == 0:
        raise InputError(
            f"none of the {usable.height:,} usable records lies in the hours {start}-{end} "
            f"({bad.height:,} other records quarantined)"
        )
    hats = (
        recs.group_by("h3_cell", "slot")
        .agg(
            pl.len().alias("n_records"),
            pl.col("vehicle_id").n_unique().alias("n_vehicles"),
            pl.col("day").n_unique().alias("n_days"),
        )
        .sort(["n_records", "n_vehicles", "h3_cell", "slot"], descending=[True, True, False, False])
    )
    top = hats.row(0, named=True)
    chosen = recs.filter((pl.col("h3_cell") == top["h3_cell"]) & (pl.col("slot") == top["slot"]))
    out.parent.mkdir(parents=True, exist_ok=True)
    chosen.select(
        "vehicle_id", "timestamp", "day", "slot", "h3_cell", "speed", "latitude", "longitude"
    ).write_csv(out)
    return BusiestHat(
        top["h3_cell"],
        top["slot"],
        int(top["n_records"]),
        int(top["n_vehicles"]),
        int(top["n_days"]),
        hats.height,
        recs.height,
        records_in=frame.height,
        records_quarantined=bad.height,
        records_outside_hours=usable.height - recs.height,
        quarantine_reasons={k: int(v) for k, v in reasons.items()},
        quarantine_path=quarantine_path,
    )
