"""The fleet task in OpenDP 0.16's Polars context (run in its own virtualenv: it needs polars 1.36.1).

Input: rows.parquet from prepare.py (one row per vehicle-day x HAT, at most K HATs per vehicle-day already). The
privacy unit is declared as bounds on that table: a vehicle-day is at most one row per HAT and at most K HATs
(``dp.polars.Bound``), which is what an identifier plus truncation would enforce. Query: per HAT ``dp.len()``
(the noisy vehicle-day count: OpenDP thresholds it for partition selection and it is the mean's denominator) and
``speed.dp.sum((0, U))``; the mean is their ratio (post-processing). With a public extent the key set is given
(``with_keys``), so no selection threshold.

Noise: ``laplace`` asks for (epsilon, delta) directly; ``gaussian`` asks for approximate zCDP (rho, delta / 2) with
rho chosen so that OpenDP's own zCDP -> (epsilon, delta) conversion at delta / 2 gives epsilon; the loss is then
read back from OpenDP's maps. Usage: run_opendp.py SPEC.json (keys: rows, keys, out, epsilon, delta, k,
speed_max, noise, extent).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from statistics import NormalDist

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


def extent_threshold(noise: str, scale: float, keys: int, expected_empty: float = 0.05) -> float:
    """Noisy-count threshold over a public extent of ``keys`` HATs with an expected 0.05 empty HATs released."""
    if noise == "gaussian":
        return scale * NormalDist().inv_cdf(1.0 - expected_empty / keys)
    return scale * math.log(keys / (2.0 * expected_empty))


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    t0 = time.perf_counter()
    rows = pl.read_parquet(spec["rows"]).select("vd", "cell", pl.col("slot").cast(pl.Int32), "speed")
    k, u, eps, delta = int(spec["k"]), float(spec["speed_max"]), float(spec["epsilon"]), float(spec["delta"])
    unit = dp.unit_of(contributions=1, identifier="vd")
    if spec["noise"] == "gaussian":
        rho = rho_for(eps, delta / 2)
        loss = dp.loss_of(rho=rho, delta=delta / 2)
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
    if spec["extent"]:
        keys = pl.read_parquet(spec["keys"]).select("cell", pl.col("slot").cast(pl.Int32))
        query = (
            query.group_by("cell", "slot")
            .agg(dp.len(), pl.col("speed").fill_null(0.0).dp.sum((0.0, u)))
            .with_keys(keys)
        )
    else:
        query = query.group_by("cell", "slot").agg(dp.len(), pl.col("speed").fill_null(0.0).dp.sum((0.0, u)))
    measurement = query.resolve()
    d_in = unit[1]
    loss_map = measurement.map(d_in)
    if spec["noise"] == "gaussian":
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
    released = query.release().collect()
    summary = query.summarize()
    count_scale = float(summary.filter(pl.col("column") == "len")["scale"][0])
    out = released.select(
        "cell",
        pl.col("slot").cast(pl.Int64),
        (pl.col("speed") / pl.col("len")).clip(0.0, u).alias("mean"),
        pl.col("len").alias("count"),
    ).filter(pl.col("count").is_not_null() & (pl.col("count") > 0))
    if spec["extent"]:
        # every key of the extent got a noisy count: keep those over the same false-positive rule for everyone
        out = out.filter(pl.col("count") >= extent_threshold(spec["noise"], count_scale, len(keys)))
    out.write_csv(spec["out"])
    elapsed = time.perf_counter() - t0
    print(json.dumps({"loss": stated, "seconds_inside": elapsed, "count_scale": count_scale}))


if __name__ == "__main__":
    main()
