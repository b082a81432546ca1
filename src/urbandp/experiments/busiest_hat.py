"""Extract the busiest HAT (hexagon and time slot) from AVL files, for the real-data mean experiment.

The paper (section II-B) works on one HAT: an H3 cell (resolution 7) and a 1-hour slot, over several days. Here:
records with a local hour in ``[start, end)`` (the hour is read from the ISO timestamp as written, i.e. local
time, its UTC offset ignored), H3 cell from ``polars_h3.latlng_to_cell``, slot = the local hour; the HAT
with the most records over all given files wins (ties: more vehicles, then the smaller cell id and slot).
Which HAT is busiest is a data-dependent choice: this is a utility experiment, not a release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

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


def _read(path: Path) -> pl.DataFrame:
    if not path.exists():
        raise InputError(f"input file not found: {path}")
    try:
        df = pl.read_csv(path, infer_schema_length=0)
    except Exception as err:
        raise InputError(f"cannot read {path}: {str(err).splitlines()[0]}") from None
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
    return df.select(REQUIRED)


def extract_busiest_hat(
    inputs: Sequence[Path], out: Path, resolution: int = 7, hours: tuple[int, int] = (9, 21)
) -> BusiestHat:
    import polars_h3 as plh3

    if not inputs:
        raise InputError("no input files")
    start, end = hours
    if not (0 <= start < end <= 24):
        raise InputError(f"hours must satisfy 0 <= start < end <= 24, got {start}-{end}")
    frame = pl.concat([_read(Path(p)) for p in inputs])
    recs = (
        frame.with_columns(
            pl.col("speed").cast(pl.Float64, strict=False),
            pl.col("latitude").cast(pl.Float64, strict=False),
            pl.col("longitude").cast(pl.Float64, strict=False),
            pl.col("timestamp").str.slice(0, 10).alias("day"),
            pl.col("timestamp").str.slice(11, 2).cast(pl.Int32, strict=False).alias("hour"),
        )
        .drop_nulls(["vehicle_id", "speed", "latitude", "longitude", "hour"])
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
        raise InputError("no usable records in the given hours")
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
    )
