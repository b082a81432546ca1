"""Which count each pooled interval reads: the rules measured on four public Austin weekdays and a synthetic test.

The default release of ``bench_default_austin.py`` (same days, extent, hours; L2 and pooling chosen by ``auto``) is
released ``--runs`` times per epsilon with OpenDP noise; pooling is post-processing of the published table, so each
release is pooled again by every rule below and scored against the same truth (``bench_default_austin.score``).
Beside it, the 6 synthetic releases of the statistical test on useful HATs (2,401 HATs each, counts a few
vehicle-days next to a noise sd of 2, its seed) are pooled by each rule: the coverage of the pooled-useful subset.

Rules (``N~`` the noisy count, ``N^ = E[N | N~]`` by Tweedie's formula, ``mu`` the leave-one-out prior mean):

* ``noisy``: the variance at ``N~`` (the first pooled release);
* ``one-sd``: at ``N~`` minus one sd of the count's noise (the rule before);
* ``tweedie-variance``: at ``N^``, the mean as published;
* ``tweedie-own-mean``: the mean ``U/2 + S~/N^`` and the variance at ``N^`` with the HAT's own mean in ``c``;
* ``default``: the library's (``urbandp.fleet._postprocess_pooling``): as above with ``c`` from ``mu``;
* ``tweedie-second-moment``: as above with ``c^2 = (mu - U/2)^2 + tau^2 + v``, the prior's second moment.

    .venv/bin/python benchmarks/bench_pooling_rules.py [--runs 10]
Results: benchmarks/results/pooling_rules.json and a table (docs/fleet.md shows it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "unit" / "fleet"))

import bench_default_austin as austin  # noqa: E402
from results_file import write_results  # noqa: E402
from urbandp._privacy.noise import OpenDPNoise  # noqa: E402
from urbandp.fleet import _postprocess_pooling as pooling  # noqa: E402
from urbandp.fleet._pipeline import release_fleet  # noqa: E402

RULES = ("noisy", "one-sd", "tweedie-variance", "tweedie-own-mean", "default", "tweedie-second-moment")
LABELS = {
    "noisy": "the noisy count",
    "one-sd": "one sd below the noisy count (the rule before)",
    "tweedie-variance": "`E[N given N~]` (Tweedie), variance only",
    "tweedie-own-mean": "`E[N given N~]`, mean `S~ / E[N given N~]` too, own mean in the variance",
    "default": "**the same with the parent's mean in the variance (the default)**",
    "tweedie-second-moment": "the same with the parent's second moment `(mu - U/2)^2 + tau^2 + v`",
}


def pooled_by(
    rule: str, speed: pl.DataFrame, privacy: dict[str, Any], u: float, target: float
) -> pl.DataFrame:
    """The table's pooled columns by ``rule`` (the default: the library's own function)."""
    speed = speed.drop([c for c in pooling.POOLED_COLUMNS if c in speed.columns])
    if rule == "default":
        return pooling.with_pooled_means(speed, privacy, u, target, 9)[0]
    sd_sum, sd_count = pooling.noise_sds(privacy)
    idx = np.flatnonzero((speed["mean_speed"].is_not_null() & ~speed["clamped"].fill_null(False)).to_numpy())
    y = speed["mean_speed"].to_numpy()[idx].astype(float)
    n = speed["noisy_vehicle_days"].to_numpy()[idx].astype(float)
    low = speed["vehicle_days_ci95_low"].to_numpy()[idx].astype(float)
    cells = [str(c) for c in speed["h3_cell"].to_numpy()[idx]]
    var = (sd_sum**2 + (y - u / 2) ** 2 * sd_count**2) / n**2
    released = speed["noisy_vehicle_days"].to_numpy().astype(float)
    n_hat = np.minimum(pooling.tweedie_counts(n, released, sd_count, low), n)
    y_hat = u / 2 + (y - u / 2) * n / n_hat
    if rule == "noisy":
        result = pooling.pool(y, var, cells, u)
    elif rule == "one-sd":
        below = np.where(low > 0, np.maximum(n - (n - low) / pooling.Z_975, low), n)
        result = pooling.pool(y, var, cells, u, (sd_sum**2 + (y - u / 2) ** 2 * sd_count**2) / below**2)
    elif rule == "tweedie-variance":
        result = pooling.pool(y, var, cells, u, (sd_sum**2 + (y - u / 2) ** 2 * sd_count**2) / n_hat**2)
    elif rule == "tweedie-own-mean":
        own = (sd_sum**2 + (y_hat - u / 2) ** 2 * sd_count**2) / n_hat**2
        result = pooling.pool(y_hat, var, cells, u, own)
    else:  # tweedie-second-moment
        groups = list(pooling._group_keys(cells))
        mu, v = pooling._prior_means(y_hat, var, groups)
        tau = pooling.pool(y_hat, var, cells, u).tau
        c2 = (mu - u / 2) ** 2 + tau**2 + v
        result = pooling.pool(y_hat, var, cells, u, (sd_sum**2 + c2 * sd_count**2) / n_hat**2)
    columns = []
    for name, values in zip(pooling.POOLED_COLUMNS[:3], (result.mean, result.low, result.high), strict=True):
        full = np.full(speed.height, np.nan)
        full[idx] = values
        columns.append(pl.Series(name, full, nan_to_null=True))
    width = pl.col("pooled_ci95_high") - pl.col("pooled_ci95_low")
    return speed.with_columns(columns).with_columns((width <= target).fill_null(False).alias("pooled_useful"))


def synthetic(rule: str) -> dict[str, float]:
    """The statistical test's 6 synthetic releases (its seed), pooled by ``rule``: pooled-useful draws and held."""
    import test_useful_coverage as t

    rng = np.random.default_rng(20261129)
    privacy = {"noise_scale_kind": "gaussian sigma", "noise_scale": {"speed": t.SD_S, "count": t.SD_N}}
    held = useful = 0
    for _ in range(t.RELEASES):
        table, truth = t.released_table(rng)
        rows = pooled_by(rule, table, privacy, t.U, t.TARGET).with_columns(pl.Series("truth", truth))
        rows = rows.filter(pl.col("pooled_useful"))
        inside = (rows["pooled_ci95_low"] <= rows["truth"]) & (rows["truth"] <= rows["pooled_ci95_high"])
        held += int(inside.sum())
        useful += rows.height
    return {"useful_draws": float(useful), "coverage_useful": held / useful}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--results", default="pooling_rules", help="results/NAME.json")
    args = ap.parse_args()
    load = os.getloadavg()
    true = austin.truth()
    scores: dict[tuple[str, float], list[dict[str, float]]] = {(r, e): [] for r in RULES for e in (4.0, 10.0)}
    for eps in (4.0, 10.0):
        cfg = austin.spec(epsilon_per_day=eps)
        for _ in range(args.runs):
            rel, _ = release_fleet(austin.PATHS, cfg, options=austin.OPTIONS, noise=OpenDPNoise())
            for rule in RULES:
                scores[(rule, eps)].append(
                    austin.score(pooled_by(rule, rel.speed, rel.privacy, 65.0, 10.0), true)
                )
    rows = []
    for rule in RULES:
        row: dict[str, Any] = {"rule": rule, "synthetic": synthetic(rule)}
        for eps in (4.0, 10.0):
            s = scores[(rule, eps)]
            total: Callable[[str], float] = lambda key, s=s: sum(x[key] for x in s)  # noqa: E731
            row[f"eps{eps:g}"] = {
                "useful": total("useful") / len(s),
                "coverage_shown": total("held_shown") / total("shown"),
                "coverage_useful": total("held_useful") / total("useful"),
            }
        print(json.dumps(row), flush=True)
        rows.append(row)
    lines = [
        "| count each pooled interval reads | useful, eps 4 | useful, eps 10 | coverage of shown / useful, eps 4 | "
        "eps 10 | synthetic: coverage of pooled-useful (draws) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        e4, e10, syn = r["eps4"], r["eps10"], r["synthetic"]
        bold = "**" if r["rule"] == "default" else ""
        lines.append(
            f"| {LABELS[r['rule']]} | {bold}{e4['useful']:.1f}{bold} | {bold}{e10['useful']:.1f}{bold} | "
            f"{100 * e4['coverage_shown']:.1f}% / {100 * e4['coverage_useful']:.1f}% | "
            f"{100 * e10['coverage_shown']:.1f}% / {100 * e10['coverage_useful']:.1f}% | "
            f"{bold}{100 * syn['coverage_useful']:.1f}% ({syn['useful_draws']:,.0f}){bold} |"
        )
    markdown = "\n".join(lines)
    write_results(args.results, {"runs": args.runs, "rows": rows, "markdown": markdown}, load)
    print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
