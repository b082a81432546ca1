"""Which HATs a vehicle-day keeps: urbandp's truncation against the keyed hash alone, at the same noise (issue 21).

A vehicle-day with more than K HATs must drop some. Which ones does not change the privacy loss (the choice reads
only the vehicle-day's own presence), but it changes how many HATs reach the selection threshold. This compares,
on the peer benchmark's tables (``bench_peers.py`` prepares them) and the same calibration:

* baseline: the previous policy, a keyed hash of (vehicle, day, cell, slot) alone;
* urbandp: :func:`urbandp.fleet._measure.truncate_vehicle_days` (daytime first, long dwells last, then the hash).

For each data set x epsilon x extent cell it reports the **expected** HATs released, sum over HATs of
P(count + N(0, sigma^2) >= threshold), with sigma and the threshold taken from urbandp's own release of the same
cell (run with exact noise, so nothing random enters), and the sampling error of the truncated HAT means against
the untruncated ones on the HATs with at least the threshold's vehicle-days. No noise is drawn: the figures are
exact and repeatable.

    .venv/bin/python benchmarks/bench_truncation.py     # about 20 s; results/truncation.json
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy.stats import norm

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_peers import AUSTIN_BBOX, DELTA, RESOLUTION, SURAT_BBOX, K, U, datasets, ensure_data  # noqa: E402
from results_file import write_results  # noqa: E402
from urbandp._privacy.noise import ExactNoiseForTesting  # noqa: E402
from urbandp.fleet._hat_release import _release_hats  # noqa: E402
from urbandp.fleet._measure import truncate_vehicle_days, truncation_key  # noqa: E402
from urbandp.fleet._measure_selection import domain_cells  # noqa: E402
from urbandp.fleet._options import HatReleaseConfig  # noqa: E402

EXACT = ExactNoiseForTesting(acknowledge_not_private=True)
BBOX = {"synth-month": SURAT_BBOX, "austin4": AUSTIN_BBOX, "austin1": AUSTIN_BBOX}


def contributions(name: str) -> tuple[pl.DataFrame, list[dt.date]]:
    """The prepared vehicle-day x HAT table in urbandp's contribution layout, and its days."""
    rows = pl.read_parquet(ensure_data(name, datasets()[name]) / "rows_all.parquet")
    parts = pl.col("vd").str.split_exact("|", 1)
    table = rows.select(
        parts.struct.field("field_0").alias("vehicle"),
        parts.struct.field("field_1").str.to_date().alias("day"),
        pl.col("cell").map_elements(lambda c: int(c, 16), return_dtype=pl.UInt64).alias("cell"),
        pl.col("slot").cast(pl.Int16),
        pl.lit(1, dtype=pl.UInt32).alias("n_records"),
        pl.col("speed").clip(0.0, U).alias("mean_speed"),
        pl.col("speed").alias("max_speed"),
    )
    return table, sorted(set(table["day"].to_list()))


def hash_only(table: pl.DataFrame, k: int) -> pl.DataFrame:
    """The previous policy: the K HATs of lowest keyed hash of (vehicle, day, cell, slot)."""
    key = truncation_key()
    rank = pl.struct(key.alias("a"), pl.col("cell").alias("b"), pl.col("slot").alias("c")).rank("ordinal")
    return table.filter(rank.over("vehicle", "day") <= k)


def calibration(
    table: pl.DataFrame, days: list[dt.date], eps: float, extent: tuple[float, ...] | None
) -> tuple[float, float]:
    """urbandp's selection threshold and count sigma for the cell (one release with exact noise)."""
    cfg = HatReleaseConfig(
        epsilon_per_day=eps,
        delta=DELTA,
        max_hats_per_vehicle_day=K,
        resolution=RESOLUTION,
        hours=(0, 24),
        speed_max=U,
        dates=tuple(days),
        domain_bbox=extent,
    )
    sel = _release_hats(table, cfg, len(days), EXACT).privacy["selection"]
    return float(sel["threshold_vehicle_days"]), float(sel["noise_scale"])


def score(
    kept: pl.DataFrame, truth: pl.DataFrame, threshold: float, sigma: float, extent: bool
) -> dict[str, float]:
    per_hat = kept.group_by("cell", "slot").agg(pl.len().alias("n"), pl.col("mean_speed").mean().alias("m"))
    if extent:  # HATs outside the extent never pass; the domain's empty HATs add the same for both policies
        per_hat = per_hat.join(truth.filter(pl.col("in_extent")), on=["cell", "slot"], how="semi")
    n = per_hat["n"].to_numpy().astype(float)
    expected = float(norm.sf((threshold - n) / sigma).sum())
    big = per_hat.filter(pl.col("n") >= threshold).join(truth, on=["cell", "slot"])
    err = (big["m"] - big["true"]).abs()
    return {
        "expected_hats": expected,
        "hats_at_threshold": big.height,
        "sampling_median": float(err.median()) if big.height else float("nan"),  # type: ignore[arg-type]
        "sampling_p90": float(err.quantile(0.9)) if big.height else float("nan"),  # type: ignore[arg-type]
    }


def main() -> None:
    load_before = os.getloadavg()
    rows: list[dict[str, Any]] = []
    for name in ("synth-month", "austin4", "austin1"):
        table, days = contributions(name)
        domain = domain_cells(BBOX[name], RESOLUTION).cast(pl.UInt64)
        truth = table.group_by("cell", "slot").agg(pl.col("mean_speed").mean().alias("true"))
        truth = truth.with_columns(pl.col("cell").is_in(domain.implode()).alias("in_extent"))
        policies = {"hash only": hash_only(table, K), "urbandp": truncate_vehicle_days(table, K)[0]}
        for eps in (1.0, 4.0, 10.0):
            for extent in (False, True):
                threshold, sigma = calibration(table, days, eps, BBOX[name] if extent else None)
                for policy, kept in policies.items():
                    row = {"dataset": name, "epsilon_per_day": eps, "extent": extent, "policy": policy}
                    row |= {"threshold": threshold, "sigma": sigma} | score(
                        kept, truth, threshold, sigma, extent
                    )
                    rows.append(row)
                base, ours = rows[-2], rows[-1]
                print(
                    f"{name:12s} eps {eps:4.0f} extent {'bbox' if extent else 'none':4s}  expected HATs "
                    f"{base['expected_hats']:7.1f} -> {ours['expected_hats']:7.1f}  ({ours['expected_hats'] / max(base['expected_hats'], 1e-9):5.3f}x)"
                    f"  sampling median {base['sampling_median']:.3f} -> {ours['sampling_median']:.3f}",
                    flush=True,
                )
    pairs = [(a["expected_hats"], b["expected_hats"]) for a, b in zip(rows[::2], rows[1::2], strict=True)]
    ratio = geo(pairs)
    worst = min(ours - base for base, ours in pairs)
    summary = {"expected_hats_ratio_geomean": ratio, "largest_loss_expected_hats": -worst}
    write_results(
        "truncation", {**summary, "rows": rows, "k": K, "speed_max": U, "delta": DELTA}, load_before
    )
    print(
        f"ratio of expected HATs (urbandp / hash only), geometric mean over cells with >= 1 HAT: {ratio:.3f}"
    )
    print(f"largest loss of any cell: {-worst:.2f} expected HATs")


def geo(pairs: list[tuple[float, float]]) -> float:
    """Geometric mean of urbandp / hash-only expected HATs over the cells where the hash passes at least one."""
    ratios = [b / a for a, b in pairs if a >= 1.0]
    return float(np.exp(np.mean(np.log(ratios))))


if __name__ == "__main__":
    main()
