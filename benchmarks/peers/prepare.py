"""Shared input of the peer benchmark, built with pandas + h3 only (independent of urbandp).

From raw records (the ITMS parquet of ``urbandp synth fleet`` or Austin AVL CSVs) it computes, per vehicle-day
and HAT (H3 cell at ``resolution`` x hour of local wall-clock time), the mean of the record speeds clipped to
[0, U] km/h. Two things come out of it:

* ``truth``: per HAT the mean over *all* vehicle-days of their HAT mean speed, and their number: what every
  contender is scored against;
* ``rows``: the same vehicle-day x HAT rows after keeping at most K HATs per vehicle-day, chosen at random with a
  fixed seed: the input handed to the peers, whose own truncation is either broken (OpenDP 0.16's
  ``truncate_num_groups(keep="sample")``) or slow. The bound K is then declared to each peer. urbandp reads the raw
  records and truncates itself (on presence, by a keyed hash).

Record filters (the same rules urbandp's validation applies to the rows it quarantines): a parseable timestamp,
coordinates in range and not (0, 0), a finite speed in [0, 150] km/h, exact duplicates dropped.
"""

from __future__ import annotations

from pathlib import Path

import h3
import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq

SPEED_REJECT_ABOVE = 150.0
TRUNCATION_SEED = 20261124  # the first repeat's; repeat r uses TRUNCATION_SEED + r


def read_records(paths: list[Path], speed_factor: float) -> pd.DataFrame:
    """vehicle, local wall-clock timestamp, lat, lon, speed (km/h) from ITMS parquet or Austin CSV files."""
    frames = []
    for path in paths:
        if path.suffix == ".parquet":
            table = pq.read_table(path, columns=["license_plate", "observationDateTime", "location", "speed"])
            coords = pc.struct_field(table["location"], "coordinates")
            two = pc.equal(pc.list_value_length(coords), 2).to_numpy(zero_copy_only=False)
            frame = pd.DataFrame(
                {
                    "vehicle": table["license_plate"].to_pandas().astype(str),
                    "ts": table["observationDateTime"].to_pandas().astype(str),
                    "lon": np.where(two, pc.list_element(coords, 0).to_numpy(zero_copy_only=False), np.nan),
                    "lat": np.where(two, pc.list_element(coords, 1).to_numpy(zero_copy_only=False), np.nan),
                    "speed": pd.to_numeric(table["speed"].to_pandas(), errors="coerce"),
                }
            )
        else:
            raw = pd.read_csv(path, usecols=["vehicle_id", "timestamp", "speed", "latitude", "longitude"])
            frame = pd.DataFrame(
                {
                    "vehicle": raw["vehicle_id"].astype(str),
                    "ts": raw["timestamp"].astype(str),
                    "lat": pd.to_numeric(raw["latitude"], errors="coerce"),
                    "lon": pd.to_numeric(raw["longitude"], errors="coerce"),
                    "speed": pd.to_numeric(raw["speed"], errors="coerce") * speed_factor,
                }
            )
        frames.append(frame)
    df = pd.concat(frames, ignore_index=True).drop_duplicates()
    # wall-clock time as written: the first 19 characters of an ISO 8601 timestamp, offset ignored
    df["ts"] = pd.to_datetime(df["ts"].str.slice(0, 19), format="%Y-%m-%dT%H:%M:%S", errors="coerce")
    ok = (
        df["ts"].notna()
        & df["lat"].between(-90, 90)
        & df["lon"].between(-180, 180)
        & ~((df["lat"] == 0) & (df["lon"] == 0))
        & df["speed"].between(0, SPEED_REJECT_ABOVE)
    )
    return df[ok].reset_index(drop=True)


def vehicle_day_hats(records: pd.DataFrame, resolution: int, speed_max: float) -> pd.DataFrame:
    """vd (vehicle|day), cell (H3 string), slot (hour), speed (mean of clipped record speeds)."""
    cells = [h3.latlng_to_cell(a, b, resolution) for a, b in zip(records["lat"], records["lon"], strict=True)]
    frame = pd.DataFrame(
        {
            "vd": records["vehicle"] + "|" + records["ts"].dt.strftime("%Y-%m-%d"),
            "cell": cells,
            "slot": records["ts"].dt.hour.astype("int16"),
            "speed": records["speed"].clip(0.0, speed_max),
        }
    )
    return frame.groupby(["vd", "cell", "slot"], as_index=False)["speed"].mean()


def truth(rows: pd.DataFrame) -> pd.DataFrame:
    """Per HAT: the mean of its vehicle-day mean speeds and how many vehicle-days there are (before truncation)."""
    return rows.groupby(["cell", "slot"], as_index=False).agg(
        true_mean=("speed", "mean"), true_vehicle_days=("speed", "size")
    )


def truncate(rows: pd.DataFrame, k: int, seed: int) -> pd.DataFrame:
    """At most ``k`` HATs per vehicle-day, chosen uniformly at random (fixed seed)."""
    rng = np.random.default_rng(seed)
    shuffled = rows.assign(_r=rng.random(len(rows))).sort_values(["vd", "_r"])
    kept = shuffled[shuffled.groupby("vd").cumcount() < k]
    return kept.drop(columns="_r").sort_values(["cell", "slot", "vd"]).reset_index(drop=True)


def domain_keys(bbox: tuple[float, float, float, float], resolution: int, slots: list[int]) -> pd.DataFrame:
    """Every (cell, slot) of a public extent: the H3 cells whose centroid lies in the box, times the slots."""
    a, b, c, d = bbox
    shape = h3.LatLngPoly([(a, b), (a, d), (c, d), (c, b)])
    cells = sorted(h3.h3shape_to_cells(shape, resolution))
    return pd.DataFrame([(cell, slot) for cell in cells for slot in slots], columns=["cell", "slot"]).astype(
        {"slot": "int16"}
    )


def prepare(
    paths: list[Path],
    out_dir: Path,
    *,
    speed_factor: float,
    resolution: int,
    speed_max: float,
    k: int,
    bbox: tuple[float, float, float, float],
    seed: int = TRUNCATION_SEED,
) -> dict[str, object]:
    """Write rows.parquet (truncated, for the peers), rows_all.parquet (before truncation), truth.parquet and
    keys.parquet (the public extent)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    records = read_records(paths, speed_factor)
    rows = vehicle_day_hats(records, resolution, speed_max)
    truth(rows).to_parquet(out_dir / "truth.parquet", index=False)
    # untruncated: each repeat of bench_peers redraws its truncation from it
    rows.to_parquet(out_dir / "rows_all.parquet", index=False)
    kept = truncate(rows, k, seed)
    kept.to_parquet(out_dir / "rows.parquet", index=False)
    domain_keys(bbox, resolution, list(range(24))).to_parquet(out_dir / "keys.parquet", index=False)
    days = sorted({vd.split("|")[1] for vd in rows["vd"].unique()})
    return {
        "records": len(records),
        "vehicle_days": int(rows["vd"].nunique()),
        "vehicle_day_hats": len(rows),
        "vehicle_day_hats_after_truncation": len(kept),
        "hats": int(rows.groupby(["cell", "slot"]).ngroups),
        "days": days,
    }
