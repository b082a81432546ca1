"""The fleet task in OpenDP 0.16's Polars context (run in its own virtualenv: it needs polars 1.36.1).

Input: rows.parquet from prepare.py (one row per vehicle-day x HAT, at most K HATs per vehicle-day already). The
privacy unit is declared as bounds on that table: a vehicle-day is at most one row per HAT and at most K HATs
(``dp.polars.Bound``), which is what an identifier plus truncation would enforce. Query: per HAT
``dp.len(signed=True)`` (the noisy vehicle-day count, not clamped at 0: OpenDP thresholds it for partition
selection and it is the mean's denominator) and the sum of the speeds centred at U/2, ``(speed - U/2).dp.sum((-U/2,
U/2))`` (half the sensitivity of a sum over (0, U)); the mean U/2 + sum / count is post-processing, done by the
benchmark. With public keys (an extent or a route domain, ``spec["keys"]``) the key set is given (``with_keys``):
every key gets a noisy count and sum, no selection threshold and no selection delta.

Noise: ``laplace`` asks for (epsilon, delta) directly; ``gaussian`` asks for zCDP rho chosen so that OpenDP's own
zCDP -> (epsilon, delta) conversion gives epsilon at delta (with keys) or at delta / 2 (the other half for its
selection, without keys); the loss is read back from OpenDP's maps. Output: the CSV (cell, slot, count, sum) and
one JSON line with the loss and the noise: the distributions and scales ``query.summarize()`` states, turned into
sds (``noise_sd``). Usage: run_opendp.py SPEC.json (keys: rows, keys (a path, or null without public keys), out,
epsilon, delta, k, speed_max, noise).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import opendp.prelude as dp
import polars as pl

dp.enable_features("contrib")


def rho_for(epsilon: float, delta: float) -> float:
    """The largest rho whose OpenDP zCDP -> approx-DP conversion at ``delta`` is at most ``epsilon``."""
    lo, hi = 0.0, epsilon
    for _ in range(200):
        mid = (lo + hi) / 2
        eps_mid = _epsilon_at(mid, delta)
        lo, hi = (mid, hi) if eps_mid <= epsilon else (lo, mid)
    return lo


def _epsilon_at(rho: float, delta: float) -> float:
    """OpenDP's conversion of rho-zCDP to (epsilon, delta): a Gaussian of sd 1 at sensitivity sqrt(2 rho)."""
    m = dp.c.make_zCDP_to_approxDP(
        dp.m.make_gaussian(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), 1.0)
    )
    return float(m.map((2.0 * rho) ** 0.5).epsilon(delta))


def noise_sd(distribution: str, scale: float) -> float:
    """The sd of OpenDP's noise from ``summarize()``: Gaussian (continuous or integer) ``scale`` (the discrete
    Gaussian's sd is ``scale`` to within 1e-10 relative at scale >= 1); continuous Laplace ``scale sqrt 2``;
    the integer (discrete) Laplace of scale b exactly ``sqrt(2 e^-1/b) / (1 - e^-1/b)``."""
    if "Gaussian" in distribution:
        return scale
    if "Integer" in distribution:
        q = math.exp(-1.0 / scale)
        return math.sqrt(2.0 * q) / (1.0 - q)
    return scale * math.sqrt(2.0)


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    t0 = time.perf_counter()
    rows = pl.read_parquet(spec["rows"]).select("vd", "cell", pl.col("slot").cast(pl.Int32), "speed")
    k, u, eps, delta = int(spec["k"]), float(spec["speed_max"]), float(spec["epsilon"]), float(spec["delta"])
    unit = dp.unit_of(contributions=1, identifier="vd")
    keyed = bool(spec["keys"])
    if spec["noise"] == "gaussian" and keyed:  # public keys: no selection, so no delta is spent on it
        loss = dp.loss_of(rho=rho_for(eps, delta))
    elif spec["noise"] == "gaussian":
        loss = dp.loss_of(rho=rho_for(eps, delta / 2), delta=delta / 2)
    else:
        loss = dp.loss_of(epsilon=eps, delta=delta)
    ctx = dp.Context.compositor(
        data=rows.lazy(),
        privacy_unit=unit,
        privacy_loss=loss,
        split_evenly_over=1,
        # public bounds: vehicle-days per HAT (fleet x days; the float sum's rounding slack grows with it) and HATs
        margins=[dp.polars.Margin(by=["cell", "slot"], max_length=10_000, max_groups=10_000_000)],
    )
    # the rows are already truncated at random (keep="sample" fails in 0.16): "first" keeps them all
    query = (
        ctx.query()
        .truncate_per_group(1, by=["cell", "slot"], keep="first")
        .truncate_num_groups(k, by=["cell", "slot"], keep="first")
    )
    centre = u / 2.0
    # the signed count (unclamped: the interval needs the noise as drawn) and the sum of speeds centred at U/2,
    # whose bounds (-U/2, U/2) halve the sum's sensitivity (the mean is U/2 + sum / count)
    aggregates = query.group_by("cell", "slot").agg(
        dp.len(signed=True), (pl.col("speed").fill_null(centre) - centre).dp.sum((-centre, centre))
    )
    if keyed:
        keys = pl.read_parquet(spec["keys"]).select("cell", pl.col("slot").cast(pl.Int32))
        aggregates = aggregates.with_keys(keys)
    measurement = aggregates.resolve()
    d_in = unit[1]
    loss_map = measurement.map(d_in)
    if spec["noise"] == "gaussian" and keyed:
        stated = {"rho": float(loss_map), "epsilon": _epsilon_at(float(loss_map), delta), "delta": delta}
    elif spec["noise"] == "gaussian":
        rho_used, delta_sel = loss_map
        approx = _epsilon_at(float(rho_used), delta / 2)
        stated = {
            "rho": float(rho_used),
            "delta_selection": float(delta_sel),
            "epsilon": approx,
            "delta": float(delta_sel) + delta / 2,
        }
    else:
        stated = {"epsilon": float(loss_map[0]), "delta": float(loss_map[1])}
    released = aggregates.release().collect()
    summary = aggregates.summarize()
    by_column = {row["column"]: row for row in summary.to_dicts()}
    count_row, sum_row = by_column["len"], by_column["speed"]
    out = released.select(
        "cell",
        pl.col("slot").cast(pl.Int64),
        pl.col("len").cast(pl.Float64).alias("count"),
        pl.col("speed").alias("sum"),
    ).filter(pl.col("count").is_not_null())
    out.write_csv(spec["out"])
    threshold = count_row.get("threshold")
    report = {
        "loss": stated,
        "seconds_inside": time.perf_counter() - t0,
        "centre": centre,
        "count_noise": "gaussian" if "Gaussian" in count_row["distribution"] else "laplace",
        "sum_noise": "gaussian" if "Gaussian" in sum_row["distribution"] else "laplace",
        "count_sd": noise_sd(count_row["distribution"], float(count_row["scale"])),
        "count_scale": float(count_row["scale"]),
        "sum_sd": noise_sd(sum_row["distribution"], float(sum_row["scale"])),
        "selection_threshold": None if threshold is None else float(threshold),
        "scales_from": f"OpenDP summarize(): len {count_row['distribution']} scale {float(count_row['scale']):.6g}, "
        f"sum {sum_row['distribution']} scale {float(sum_row['scale']):.6g}",
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
