"""Baseline for the benchmark: the ITMS release written the way the original ITMS scripts were.

This is the reference the benchmark measures urbandp against, so it deliberately keeps the original style
(ITMS technical report, section IV pseudocode; datakaveri/differential-privacy scripts): a whole pandas
DataFrame in memory, ``h3.latlng_to_cell`` applied row by row with ``DataFrame.apply(axis=1)``, timestamps
parsed with ``pd.to_datetime``, ``drop_duplicates``, ``groupby`` + ``nunique`` for unique vehicles per HAT per
day, the report's public-threshold selection of cells, Query 1 and Query 2 per HAT, and Laplace noise from
numpy with scale B.

It is NOT a differentially private release and must never be used as one: numpy's Laplace sampler is not
floating-point safe (Mironov 2012), the HAT selection reads true counts, and the outputs carry the true
(pre-noise) answers next to the noisy ones so the tests and the benchmark can compare them.

Two choices keep the comparison fair to the baseline (they make it faster, never slower):
- The nested ``location.coordinates`` list is split into longitude/latitude columns by pyarrow while reading
  (the original scripts flattened JSON with ``json_normalize``; holding 20 M nested Python objects in pandas needs
  about 17 GB here, which would measure memory swapping rather than the algorithm).
- The 09:00-21:00 hour window is applied before the H3 step (the report assigns H3 first; filtering first halves
  the row-wise H3 work).

Run it alone on a Parquet file in the ITMS shape::

    .venv/bin/python benchmarks/baseline_itms_pandas.py out/fleet.parquet
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import h3
import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq


def read_itms_parquet(parquet_path: str | Path) -> pd.DataFrame:
    """Read the ITMS columns the queries need into pandas, with ``lng``/``lat`` split from location.coordinates."""
    table = pq.read_table(parquet_path, columns=["license_plate", "observationDateTime", "location", "speed"])
    coordinates = pc.struct_field(table["location"], "coordinates")
    frame = pd.DataFrame(
        {
            "license_plate": table["license_plate"].to_pandas(),
            "observationDateTime": table["observationDateTime"].to_pandas(),
            "lng": pc.list_element(coordinates, 0).to_pandas(),
            "lat": pc.list_element(coordinates, 1).to_pandas(),
            "speed": table["speed"].to_pandas(),
        }
    )
    return frame


def preprocess(df: pd.DataFrame, resolution: int, hours: tuple[int, int], speed_max: float) -> pd.DataFrame:
    """Report section II B / IV A: clean, parse time, keep the hour window, H3 per row, slot, HAT, date."""
    # Drop unusable rows (missing / out-of-range coordinates, speeds outside [0, speed_max]).
    df = df.dropna(subset=["lng", "lat", "speed"])
    df = df[(df["lat"].abs() <= 90) & (df["lng"].abs() <= 180)]
    df = df[(df["speed"] >= 0) & (df["speed"] <= speed_max)]
    # Timestamps: local time with offset; unparseable ones become NaT and are dropped.
    df = df.assign(observationDateTime=pd.to_datetime(df["observationDateTime"], errors="coerce"))
    df = df.dropna(subset=["observationDateTime"])
    df = df.drop_duplicates(subset=["license_plate", "observationDateTime"])
    df = df.assign(slot=df["observationDateTime"].dt.hour)
    df = df[(df["slot"] >= hours[0]) & (df["slot"] < hours[1])]
    # The original's hot spot: one H3 call per row through DataFrame.apply.
    df = df.assign(
        h3index=df[["lat", "lng"]].apply(
            lambda row: h3.latlng_to_cell(row["lat"], row["lng"], resolution), axis=1
        )
    )
    df = df.assign(
        date=df["observationDateTime"].dt.date,
        HAT=df["slot"].astype(str) + " " + df["h3index"],
    )
    return df


def select_cells(df: pd.DataFrame, hours: tuple[int, int], min_vehicles_per_day: int, days: int) -> list[str]:
    """Report section III C / IV B (public threshold, not DP): cells whose daily unique vehicles, summed over the
    days, reach ``min_vehicles_per_day * days`` in every slot of the hour window."""
    daily = df.groupby(["h3index", "slot", "date"])["license_plate"].nunique().reset_index(name="vehicles")
    summed = daily.groupby(["h3index", "slot"])["vehicles"].sum().reset_index()
    passing = summed[summed["vehicles"] >= min_vehicles_per_day * days]
    slots_passing = passing.groupby("h3index")["slot"].nunique()
    needed = hours[1] - hours[0]
    return sorted(slots_passing[slots_passing == needed].index)


def baseline_release(
    parquet_path: str | Path,
    resolution: int = 7,
    hours: tuple[int, int] = (9, 21),
    speed_max: float = 65.0,
    speed_limit: float = 35.0,
    min_vehicles_per_day: int = 10,
    *,
    noise_scale: float = 1.0,
    seed: int | None = None,
) -> dict[str, pd.DataFrame]:
    """The ITMS release, original style. Returns pandas DataFrames keyed by name:

    - ``hat_speed``: h3_cell, slot, mean_speed (noisy), true_mean_speed, n_vehicle_days, noise_scale,
      epsilon_hat_day. Query 1 (report IV C): per vehicle per day mean speed in the HAT, averaged over the N
      vehicle-days; sensitivity speed_max / N; epsilon per HAT per day = sensitivity / B.
    - ``hat_speeding``: h3_cell, slot, vehicles_over_limit_per_day (noisy), true_vehicles_over_limit_per_day,
      noise_scale, epsilon_hat_day. Query 2 (report IV D): per day the number of vehicles whose max speed in the
      HAT exceeds ``speed_limit``, averaged over the D days of the data; sensitivity 1 / D.
    - ``unique_vehicles``: h3index, slot, date, vehicles (unique vehicles per HAT per day, all cells).
    - ``privacy``: one row: days, cells_selected, hats_released, max_hats_per_vehicle_day (K, over the released
      HATs), epsilon_per_day_speed (sum of the K largest per-HAT epsilons), epsilon_per_day_speeding (K / (D B)),
      cumulative_epsilon_per_day (report III E-F).
    """
    df = preprocess(read_itms_parquet(parquet_path), resolution, hours, speed_max)
    days = int(df["date"].nunique())
    unique_vehicles = (
        df.groupby(["h3index", "slot", "date"])["license_plate"].nunique().reset_index(name="vehicles")
    )
    cells = select_cells(df, hours, min_vehicles_per_day, days) if days else []
    df = df[df["h3index"].isin(cells)]

    per_vehicle_day = (
        df.groupby(["h3index", "slot", "date", "license_plate"])["speed"].agg(["mean", "max"]).reset_index()
    )
    rng = np.random.default_rng(seed)

    # Query 1: average over the N vehicle-days of each vehicle's daily mean speed in the HAT.
    q1 = per_vehicle_day.groupby(["h3index", "slot"])["mean"].agg(["sum", "count"]).reset_index()
    q1["true_mean_speed"] = q1["sum"] / q1["count"]
    q1["n_vehicle_days"] = q1["count"]
    q1["noise_scale"] = noise_scale
    q1["epsilon_hat_day"] = (speed_max - 0.0) / q1["count"] / noise_scale
    q1["mean_speed"] = q1["true_mean_speed"] + rng.laplace(0.0, noise_scale, len(q1))
    hat_speed = q1.rename(columns={"h3index": "h3_cell"})[
        [
            "h3_cell",
            "slot",
            "mean_speed",
            "true_mean_speed",
            "n_vehicle_days",
            "noise_scale",
            "epsilon_hat_day",
        ]
    ]

    # Query 2: vehicles per day whose max speed in the HAT exceeds the limit, averaged over the D days.
    over = per_vehicle_day[per_vehicle_day["max"] > speed_limit]
    counts = over.groupby(["h3index", "slot"])["license_plate"].count().reset_index(name="over")
    q2 = q1[["h3index", "slot"]].merge(counts, on=["h3index", "slot"], how="left").fillna({"over": 0})
    q2["true_vehicles_over_limit_per_day"] = q2["over"] / days if days else np.nan
    q2["noise_scale"] = noise_scale
    q2["epsilon_hat_day"] = 1.0 / days / noise_scale if days else np.nan
    q2["vehicles_over_limit_per_day"] = q2["true_vehicles_over_limit_per_day"] + rng.laplace(
        0.0, noise_scale, len(q2)
    )
    hat_speeding = q2.rename(columns={"h3index": "h3_cell"})[
        [
            "h3_cell",
            "slot",
            "vehicles_over_limit_per_day",
            "true_vehicles_over_limit_per_day",
            "noise_scale",
            "epsilon_hat_day",
        ]
    ]

    # Report III E-F: K = most HATs one vehicle visits in a day; epsilon per day = sum of the K largest.
    k = int(df.groupby(["license_plate", "date"])["HAT"].nunique().max()) if len(df) else 0
    eps_speed = float(np.sort(hat_speed["epsilon_hat_day"].to_numpy())[::-1][:k].sum())
    eps_speeding = k / days / noise_scale if days else 0.0
    privacy = pd.DataFrame(
        [
            {
                "days": days,
                "cells_selected": len(cells),
                "hats_released": len(hat_speed),
                "max_hats_per_vehicle_day": k,
                "epsilon_per_day_speed": eps_speed,
                "epsilon_per_day_speeding": eps_speeding,
                "cumulative_epsilon_per_day": eps_speed + eps_speeding,
            }
        ]
    )
    return {
        "hat_speed": hat_speed.reset_index(drop=True),
        "hat_speeding": hat_speeding.reset_index(drop=True),
        "unique_vehicles": unique_vehicles,
        "privacy": privacy,
    }


def main(argv: list[str]) -> None:
    """Time the baseline on one Parquet file and print records/s."""
    if len(argv) != 2:
        print("usage: baseline_itms_pandas.py FILE.parquet", file=sys.stderr)
        raise SystemExit(2)
    path = Path(argv[1])
    records = pq.ParquetFile(path).metadata.num_rows
    started = time.perf_counter()
    out = baseline_release(path)
    seconds = time.perf_counter() - started
    print(out["privacy"].to_string(index=False))
    print(f"{records:,} records in {seconds:.1f} s = {records / seconds:,.0f} records/s")


if __name__ == "__main__":
    main(sys.argv)
