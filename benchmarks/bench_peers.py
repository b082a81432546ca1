"""urbandp against OpenDP, PipelineDP and Tumult on the same fleet task, at the same privacy loss (issues 21, 33).

The task, the same for every contender: mean speed and vehicle-day count per H3 res-7 cell x 1-hour slot (all 24
hours), privacy unit a vehicle-day, K = 32 HATs per vehicle-day, speeds in [0, U = 65] km/h, epsilon 1, 4 or 10 per
day at delta 1e-6 per day, under one of three domains (``--domain``):

* ``none``: each contender's own DP partition selection;
* ``extent``: the public bounding box: every HAT of it is a public key (``keys.parquet``);
* ``routes``: the public route domain (issue 33): the HATs of the agency's routes, computed here from public data
  only with urbandp's :mod:`urbandp.fleet._domain` (``load_public_domain`` + ``domain_grid``: the cells the
  routes pass through, widened by ``DOMAIN_RING`` = 1 ring, x the slots 0-23) and written as ``keys_routes.parquet``:
  for Austin the CapMetro routes of ``tests/fixtures/capmetro-routes-2015.geojson`` (urbandp: ``--domain-geojson
  ... --domain-ring 1``); for the synthetic month the GTFS feed ``benchmarks/data/peers/synth_month_gtfs`` when it
  exists (urbandp: ``--domain-gtfs ... --domain-ring 1``; its HATs are the slots with scheduled service on the
  month's days), else the mode is skipped for it.

With public keys every contender gets the same keys: OpenDP ``with_keys``, Tumult a ``KeySet``, PipelineDP
``public_partitions``, urbandp its domain flag; the peers' rows are restricted to the keys before they are truncated
to K (a filter on public keys, as urbandp drops off-domain records before truncation). Every key gets a noisy count
and sum; a mean is *shown* where the noisy count passes the same false-positive threshold for everyone (an expected
0.05 empty HATs per release over the keys: ``selection.false_positive_threshold`` of the contender's own count
noise) and the count's 95% interval, conditional on passing it, excludes 0 (``measure.count_intervals``), and the
noisy count is at least max(1, 2 sd): urbandp's own rule, applied to the peers' noisy counts here. Two urbandp
contenders: ``urbandp`` (no bounding or pooling flag: the defaults, ``auto``, choose L2-normalised weights and
pooling with public keys, truncation to K and pooling without), ``urbandp-truncate`` (the former default:
truncation to K, as the peers, no pooling) and ``urbandp-l2`` (``--contribution-bounding l2``: no truncation,
L2-normalised weights, Gaussian; only with public keys), and ``-pooled`` variants (``--borrow-strength parent``:
the published means and intervals are the robust empirical Bayes ones, whose 95% holds on average over HATs; free
post-processing that any DP table could get, shipped only by urbandp).

Intervals and useful HATs (issue 33): a shown mean is *useful* when it is not clamped and its 95% interval is at
most ``TARGET_WIDTH`` = 10 km/h wide. urbandp's are read from its own ``ci95_low/ci95_high`` and ``useful``
columns. The peers' are computed here, by the rule urbandp uses (``measure.fieller_interval``): Fieller's interval
for U/2 + S / N from the peer's noisy centred sum S and noisy count N and the sds of their noise, z = 1.96 for
Gaussian noise and ln(20) / sqrt 2 for Laplace (``measure.fieller_z``), clipped to [0, U]. Each runner reports the
noise it used, from the peer itself: OpenDP's ``query.summarize()`` scales, PipelineDP's additive mechanisms built
from its budget accountant's per-mechanism budgets and its sensitivities (their ``std``), Tumult's
``Session._noise_info`` (mechanism and parameter) before evaluating; the ``noise`` table lists them. Coverage: the
share of shown intervals that hold the true HAT mean (untruncated, ``truth.parquet``); a shown HAT with no vehicle
counts as a miss. Without public keys the peers' selection is their own (OpenDP thresholds the same count: its
threshold, from ``summarize()``, conditions the count's interval; PipelineDP's and Tumult's draws are separate).

Data: the synthetic month (``urbandp synth fleet --vehicles 300 --days 31``, seed 1), four Austin days
(``../shared/data/austin-avl/2016-11-2*`` and 2016-12-16, speeds in m/s) given to urbandp as four public days
(``--dates``), and one Austin day (2016-11-24).

How it runs:

* each peer runs in its own virtualenv, created here on first use (``benchmarks/.peers/<peer>``): OpenDP 0.16's
  Polars context needs polars 1.36.1, Tumult pins pandas 1.5 and pyspark 3.5;
* every contender runs as its own process, alternating the order from one cell of the table to the next; wall
  time and peak memory (largest process, GNU time's maximum resident set) are of that process;
* urbandp reads the raw records end to end (validation, H3, truncation, release, files); the peers get the
  vehicle-day x HAT table prepared by ``peers/prepare.py`` (pandas + h3), already truncated at random to K HATs per
  vehicle-day (OpenDP 0.16's ``truncate_num_groups(keep="sample")`` fails) and declare K. Their preparation time is
  not counted. Every peer sums the speeds centred at U/2 (bounds -U/2, U/2: half the sensitivity of a sum over
  [0, U]), as urbandp and PipelineDP's mean do;
* scores: every shown mean is compared with the true HAT mean computed by ``peers/prepare.py`` (mean over all
  vehicle-days of their HAT mean speed, before truncation), independent of urbandp: HATs with a mean, useful HATs,
  coverage, shown HATs that are truly empty, median and 90th percentile absolute error;
* the privacy loss each contender states is read from its own accountant and checked against (epsilon, delta).

Noise is unseeded: with ``--repeats R`` each figure is the mean over R runs, and run r hands the peers a table
truncated with seed ``TRUNCATION_SEED + r`` (the truncation draw moves the HATs released by a few percent; urbandp's
own truncation is fixed and public: daytime first, long dwells last, then a keyed hash; see bench_truncation.py).

    .venv/bin/python benchmarks/bench_peers.py                       # everything (about 40 minutes on 2 cores)
    .venv/bin/python benchmarks/bench_peers.py --datasets austin1 --peers urbandp opendp-gaussian
    .venv/bin/python benchmarks/bench_peers.py --datasets austin4 --epsilons 4 --domain routes extent \
        --repeats 3 --results peers_routes
Results: benchmarks/results/<--results>.json and the tables printed at the end. ``--extent yes|no|both`` (the
issue-21 flag) still works: it means ``--domain extent``, ``none``, ``none extent``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from peers.prepare import TRUNCATION_SEED, prepare, truncate  # noqa: E402
from results_file import write_results  # noqa: E402
from urbandp._grid.h3cells import cell_to_string  # noqa: E402
from urbandp._privacy.noise import rho_for_epsilon, zcdp_epsilon  # noqa: E402
from urbandp.fleet._domain import domain_grid, load_public_domain  # noqa: E402
from urbandp.fleet._measure import count_intervals, fieller_interval  # noqa: E402
from urbandp.fleet._measure_selection import EXPECTED_FALSE_POSITIVES, false_positive_threshold  # noqa: E402
from urbandp.fleet._options import HatReleaseConfig  # noqa: E402

DATA = HERE / "data" / "peers"
VENVS = HERE / ".peers"
AUSTIN = ROOT.parent / "shared" / "data" / "austin-avl"
CAPMETRO_ROUTES = ROOT / "tests" / "fixtures" / "capmetro-routes-2015.geojson"
SYNTH_GTFS = DATA / "synth_month_gtfs"
K, U, DELTA, RESOLUTION = 32, 65.0, 1e-6, 7
SLOTS = list(range(24))
DOMAIN_RING = 1
TARGET_WIDTH = 10.0  # km/h: urbandp's --target-width default
SURAT_BBOX = (21.09, 72.75, 21.25, 72.91)
AUSTIN_BBOX = (30.15, -97.95, 30.55, -97.6)
AUSTIN_DAYS = ("2016-11-24", "2016-11-25", "2016-11-27", "2016-12-16")
DOMAINS = ("none", "extent", "routes")
URBANDP = {
    "urbandp": [],
    "urbandp-truncate": ["--contribution-bounding", "truncate", "--borrow-strength", "none"],
    "urbandp-l2": ["--contribution-bounding", "l2", "--borrow-strength", "none"],
    "urbandp-pooled": ["--contribution-bounding", "truncate", "--borrow-strength", "parent"],
    "urbandp-l2-pooled": ["--contribution-bounding", "l2", "--borrow-strength", "parent"],
}
"""urbandp's contenders. ``urbandp`` is the release as a user gets it, with no bounding or pooling flag: its
``auto`` defaults resolve to L2 weights and pooling with public keys, to truncation and pooling without;
``urbandp-truncate`` is the former default (truncation to K, no pooling). The ``-pooled`` ones, and ``urbandp``
where it pools, publish the robust empirical Bayes columns (``pooled_*``) as their means and intervals (free
post-processing of the same kind of release, docs/fleet.md "Borrowing strength")."""

PEERS: dict[str, dict[str, Any]] = {
    "opendp-gaussian": {"venv": "opendp", "runner": "run_opendp.py", "noise": "gaussian"},
    "opendp-laplace": {"venv": "opendp", "runner": "run_opendp.py", "noise": "laplace"},
    "pipelinedp": {"venv": "pipelinedp", "runner": "run_pipelinedp.py", "noise": "gaussian"},
    "tumult": {
        "venv": "tumult",
        "runner": "run_tumult.py",
        "noise": "gaussian with public keys, else laplace",
    },
}
VENV_PACKAGES = {
    "opendp": ["opendp[polars]==0.16.0", "pyarrow"],
    "pipelinedp": ["pipeline-dp==0.3.1", "pandas", "pyarrow"],
    "tumult": ["tmlt.analytics==0.21.0", "pyarrow"],
}


def peer_python(venv: str) -> Path:
    """The peer's virtualenv python, created with its pinned packages on first use."""
    python = VENVS / venv / "bin" / "python"
    if not python.exists():
        print(f"creating {VENVS / venv} ({', '.join(VENV_PACKAGES[venv])})", flush=True)
        subprocess.run(["python3", "-m", "venv", str(VENVS / venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *VENV_PACKAGES[venv]], check=True)
    return python


def urbandp_command() -> list[str]:
    """The urbandp CLI: the repository's .venv, else the console script beside the Python running this file."""
    script = ROOT / ".venv" / "bin" / "urbandp"
    return [str(script if script.exists() else Path(sys.executable).parent / "urbandp")]


def datasets() -> dict[str, dict[str, Any]]:
    """Inputs, speed unit, extent and urbandp's window flags; ``routes``: urbandp's route-domain flags and the public
    days a GTFS schedule is read on (None: no route domain for this data)."""
    month = [dt.date(2021, 11, 15) + dt.timedelta(days=i) for i in range(31)]
    return {
        "synth-month": {
            "inputs": [DATA / "synth_month.parquet"],
            "speed_factor": 1.0,
            "bbox": SURAT_BBOX,
            "urbandp": ["--start", "2021-11-15", "--end", "2021-12-15"],
            "routes": (
                {"flag": "--domain-gtfs", "path": SYNTH_GTFS, "days": month} if SYNTH_GTFS.exists() else None
            ),
        },
        "austin4": {
            "inputs": [AUSTIN / f"{d}.csv" for d in AUSTIN_DAYS],
            "speed_factor": 3.6,
            "bbox": AUSTIN_BBOX,
            "urbandp": ["--speed-unit", "m/s", "--dates", ",".join(AUSTIN_DAYS)],
            "routes": {"flag": "--domain-geojson", "path": CAPMETRO_ROUTES, "days": None},
        },
        "austin1": {
            "inputs": [AUSTIN / "2016-11-24.csv"],
            "speed_factor": 3.6,
            "bbox": AUSTIN_BBOX,
            "urbandp": ["--speed-unit", "m/s", "--start", "2016-11-24", "--end", "2016-11-24"],
            "routes": {"flag": "--domain-geojson", "path": CAPMETRO_ROUTES, "days": None},
        },
    }


def ensure_data(name: str, ds: dict[str, Any]) -> Path:
    """The raw input (the synthetic month is generated once) and the prepared table and truth, cached."""
    if name == "synth-month" and not ds["inputs"][0].exists():
        DATA.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                *urbandp_command(),
                "synth",
                "fleet",
                "--vehicles",
                "300",
                "--days",
                "31",
                "--out",
                str(ds["inputs"][0]),
                "--seed",
                "1",
            ],
            check=True,
        )
    out = DATA / name
    if not (out / "rows_all.parquet").exists():
        t = time.perf_counter()
        facts = prepare(
            ds["inputs"],
            out,
            speed_factor=ds["speed_factor"],
            resolution=RESOLUTION,
            speed_max=U,
            k=K,
            bbox=ds["bbox"],
        )
        (out / "facts.json").write_text(json.dumps(facts, indent=2))
        print(f"prepared {name} in {time.perf_counter() - t:.1f} s: {facts}", flush=True)
    return out


def route_keys(ds: dict[str, Any], prepared: Path) -> Path:
    """The route domain's HATs (cell as an H3 string, slot), from public data only, with urbandp's own loader:
    the routes' cells at RESOLUTION widened by DOMAIN_RING rings, x SLOTS (a GTFS feed: the slots with scheduled
    service on the public days). Written to ``keys_routes.parquet`` beside the prepared table."""
    routes = ds["routes"]
    source = "domain_gtfs" if routes["flag"] == "--domain-gtfs" else "domain_geojson"
    cfg = HatReleaseConfig(
        epsilon_per_day=1.0,  # any: the domain depends on the public files, resolution, slots and days only
        resolution=RESOLUTION,
        slot_minutes=60,
        hours=(0, 24),
        domain_ring=DOMAIN_RING,
        **{source: str(routes["path"])},
    )
    domain = load_public_domain(cfg, routes["days"])
    assert domain is not None
    grid = domain_grid(domain, SLOTS).select(
        cell_to_string(pl.col("cell")).alias("cell"), pl.col("slot").cast(pl.Int16)
    )
    path = prepared / "keys_routes.parquet"
    grid.write_parquet(path)
    return path


def keys_for(domain: str, ds: dict[str, Any], prepared: Path) -> Path | None:
    """The public keys every contender gets under ``domain`` (None: no public keys)."""
    if domain == "none":
        return None
    if domain == "extent":
        return prepared / "keys.parquet"
    return route_keys(ds, prepared)


def urbandp_domain_flags(domain: str, ds: dict[str, Any]) -> list[str]:
    if domain == "extent":
        return ["--domain-bbox", ",".join(str(x) for x in ds["bbox"])]
    if domain == "routes":
        return [ds["routes"]["flag"], str(ds["routes"]["path"]), "--domain-ring", str(DOMAIN_RING)]
    return []


def _timed(
    cmd: list[str], env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Run under GNU time: (process, wall seconds, peak resident MiB of the largest process)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%e %M", "-o", tf.name, *cmd],
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        wall, kib = tf.read().strip().splitlines()[-1].split()
    return proc, float(wall), float(kib) / 1024.0


def run_urbandp(ds: dict[str, Any], eps: float, domain: str, work: Path, extra: list[str]) -> dict[str, Any]:
    out = work / "urbandp"
    cmd = [
        *urbandp_command(),
        "release",
        *[str(p) for p in ds["inputs"]],
        "--out",
        str(out),
        "--overwrite",
        "--no-map",
        "--epsilon-per-day",
        str(eps),
        "--delta",
        str(DELTA),
        "--max-hats-per-vehicle-day",
        str(K),
        "--resolution",
        str(RESOLUTION),
        "--slot-minutes",
        "60",
        "--hours",
        "0-24",
        "--speed-max",
        str(U),
        "--target-width",
        str(TARGET_WIDTH),
        *ds["urbandp"],
        *urbandp_domain_flags(domain, ds),
        *extra,
    ]
    proc, wall, mib = _timed(cmd, env={**os.environ, "NO_COLOR": "1"})
    if proc.returncode != 0:
        raise RuntimeError(f"urbandp failed: {proc.stderr.strip()[-800:]}")
    privacy = json.loads((out / "privacy.json").read_text())
    speed = pd.read_csv(out / "hat_speed.csv")
    pooled = "pooled_mean_speed" in speed.columns
    prefix = "pooled_" if pooled else ""
    table = pd.DataFrame(
        {
            "cell": speed["h3_cell"],
            "slot": speed["slot"].str.slice(0, 2).astype(int),
            "mean": speed[f"{prefix}mean_speed"],
            "low": speed[f"{prefix}ci95_low"],
            "high": speed[f"{prefix}ci95_high"],
            "useful": speed[f"{prefix}useful"].astype(str).str.lower() == "true",
        }
    )
    loss = {"epsilon": privacy["cumulative_epsilon_per_day"], "delta": privacy["delta_per_day"]}
    scales = privacy.get("noise_scale", {})
    noise = {
        "count_sd": scales.get("count") or scales.get("selection"),
        "sum_sd": scales.get("speed"),
        "scales_from": f"urbandp privacy.json noise_scale ({privacy.get('noise_scale_kind', '')}): {scales}",
    }
    return {"table": table, "loss": loss, "wall_s": wall, "peak_mib": mib, "noise": noise}


def peer_rows(prepared: Path, repeat: int, keys: Path | None, cache: Path) -> Path:
    """The peers' table for one repeat: the vehicle-day x HAT rows truncated to K with seed TRUNCATION_SEED +
    repeat. Which HATs a truncation keeps moves the HATs that pass by a few percent (357.5 +- 3.0 over 12 seeds on
    four Austin days at epsilon 10), so every repeat redraws it, as urbandp's noise is redrawn. With public keys
    the rows are first restricted to them (a filter on public keys: urbandp drops off-domain records before its
    truncation too), so a vehicle-day's K HATs are keys; written to ``cache`` (the cell's own folder)."""
    if keys is None:
        if repeat == 0:
            return prepared / "rows.parquet"
        path = prepared / f"rows_r{repeat}.parquet"
        if not path.exists():
            rows = pd.read_parquet(prepared / "rows_all.parquet")
            truncate(rows, K, TRUNCATION_SEED + repeat).to_parquet(path, index=False)
        return path
    path = cache / f"rows_r{repeat}.parquet"
    if not path.exists():
        rows = pd.read_parquet(prepared / "rows_all.parquet").astype({"slot": int})
        on_keys = rows.merge(pd.read_parquet(keys).astype({"slot": int}), on=["cell", "slot"], how="inner")
        truncate(on_keys, K, TRUNCATION_SEED + repeat).to_parquet(path, index=False)
    return path


def run_peer(name: str, rows: Path, keys: Path | None, eps: float, work: Path) -> dict[str, Any]:
    peer = PEERS[name]
    spec = {
        "rows": str(rows),
        "keys": None if keys is None else str(keys),
        "out": str(work / f"{name}.csv"),
        "epsilon": eps,
        "delta": DELTA,
        "k": K,
        "speed_max": U,
        "noise": peer["noise"],
        "rho": rho_for_epsilon(eps, DELTA),  # a zCDP peer's budget: OpenDP's conversion, as for urbandp
    }
    spec_path = work / f"{name}.json"
    spec_path.write_text(json.dumps(spec))
    python = peer_python(peer["venv"])
    proc, wall, mib = _timed([str(python), str(HERE / "peers" / peer["runner"]), str(spec_path)])
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed: {proc.stderr.strip()[-800:]}")
    report = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
    noisy = pd.read_csv(spec["out"])
    n_keys = None if keys is None else len(pd.read_parquet(keys))
    table = peer_estimates(noisy, report, n_keys)
    loss = dict(report["loss"])
    # a zCDP accountant (Tumult's RhoZCDPBudget) states rho: converted at the target delta
    if "epsilon" not in loss:
        loss.update(epsilon=zcdp_epsilon(float(loss["rho"]), DELTA), delta=DELTA)
    noise = {
        key: report.get(key) for key in ("count_noise", "sum_noise", "count_sd", "sum_sd", "scales_from")
    }
    return {"table": table, "loss": loss, "wall_s": wall, "peak_mib": mib, "noise": noise}


def peer_estimates(noisy: pd.DataFrame, report: dict[str, Any], n_keys: int | None) -> pd.DataFrame:
    """A peer's means and 95% intervals from its noisy count N and noisy centred sum S, by urbandp's rule.

    The mean U/2 + S / N is shown where the count passes the false-positive threshold over the ``n_keys`` public
    keys (the peer's own count noise; ``selection.false_positive_threshold``) and its 95% interval conditional on
    passing excludes 0 (``measure.count_intervals``), and N >= max(1, 2 sd); without public keys the threshold is
    the peer's own selection threshold on this count where it has one (OpenDP), else none. The interval is
    Fieller's (``measure.fieller_interval``) from the sds the peer reported, clipped to [0, U]; a mean outside
    [0, U] is clamped and flagged, and not useful.
    """
    n = noisy["count"].to_numpy(dtype=float)
    s = noisy["sum"].to_numpy(dtype=float)
    sd_n, sd_s, centre = float(report["count_sd"]), float(report["sum_sd"]), float(report["centre"])
    gaussian = report["count_noise"] == "gaussian"
    threshold: float | None
    if n_keys is not None:
        threshold = false_positive_threshold(
            float(report["count_scale"]), n_keys, 0.0, gaussian, EXPECTED_FALSE_POSITIVES
        )
        release_all = True
    else:
        own = report.get("selection_threshold")
        threshold, release_all = (None if own is None else float(own)), False
    _, _, shown = count_intervals(n, sd_n, threshold, gaussian, release_all)
    ok = shown & (n >= max(1.0, 2.0 * sd_n))
    denom = np.where(ok, n, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = centre + s / denom
    clamped = ok & ((raw < 0.0) | (raw > U))
    z = 1.96 if report["sum_noise"] == "gaussian" else math.log(20.0) / math.sqrt(2.0)
    lo, hi = fieller_interval(s, denom, sd_s, sd_n, z)
    low, high = np.clip(centre + lo, 0.0, U), np.clip(centre + hi, 0.0, U)
    return pd.DataFrame(
        {
            "cell": noisy["cell"],
            "slot": noisy["slot"].astype(int),
            "mean": np.clip(raw, 0.0, U),
            "low": np.where(ok, low, np.nan),
            "high": np.where(ok, high, np.nan),
            "useful": ok & ~clamped & (high - low <= TARGET_WIDTH),
            "count": n,
        }
    )


def score(table: pd.DataFrame, truth: pd.DataFrame) -> dict[str, float]:
    """HATs with a mean, useful ones, coverage of their intervals (a truly empty HAT: a miss), truly empty HATs
    with a mean, the median / p90 absolute error and the median interval width."""
    shown = table.dropna(subset=["mean"]).astype({"slot": int})
    joined = shown.merge(truth, on=["cell", "slot"], how="left")
    empty = int(joined["true_mean"].isna().sum())
    err = (joined["mean"] - joined["true_mean"]).abs().dropna().to_numpy()
    held = (joined["low"] <= joined["true_mean"]) & (joined["true_mean"] <= joined["high"])
    width = (joined["high"] - joined["low"]).to_numpy()
    return {
        "hats": float(len(shown)),
        "useful": float(shown["useful"].sum()),
        "coverage": float(held.mean()) if len(joined) else float("nan"),
        "empty_hats": float(empty),
        "median_error": float(np.median(err)) if err.size else float("nan"),
        "p90_error": float(np.quantile(err, 0.9)) if err.size else float("nan"),
        "median_width": float(np.median(width)) if width.size else float("nan"),
    }


def matched(ours: pd.DataFrame, theirs: pd.DataFrame, truth: pd.DataFrame) -> dict[str, float]:
    """Errors of urbandp and of a peer on the HATs that both released with a mean (the same population: a
    contender that releases only the largest HATs has a lower median over its own set without being more
    accurate on any of them)."""
    a = ours.dropna(subset=["mean"]).astype({"slot": int}).merge(truth, on=["cell", "slot"])
    b = theirs.dropna(subset=["mean"]).astype({"slot": int}).merge(truth, on=["cell", "slot"])
    both = a.merge(b, on=["cell", "slot"], suffixes=("_u", "_p"))
    eu = (both["mean_u"] - both["true_mean_u"]).abs().to_numpy()
    ep = (both["mean_p"] - both["true_mean_p"]).abs().to_numpy()
    if not len(both):
        return {"hats": 0.0}
    return {
        "hats": float(len(both)),
        "urbandp_median": float(np.median(eu)),
        "peer_median": float(np.median(ep)),
        "urbandp_p90": float(np.quantile(eu, 0.9)),
        "peer_p90": float(np.quantile(ep, 0.9)),
    }


def mean_of_runs(values: list[float]) -> float:
    """Mean over the runs that have the figure (a median of no HATs is nan), nan when none has it."""
    finite = [v for v in values if not np.isnan(v)]
    return float(np.mean(finite)) if finite else float("nan")


def loss_ok(loss: dict[str, Any], eps: float) -> bool:
    return float(loss["epsilon"]) <= eps * (1 + 1e-9) and float(loss.get("delta", 0.0)) <= DELTA * (1 + 1e-9)


# the row key holding a peer's errors against each urbandp contender on the HATs both showed
MATCHED_KEY = {
    "urbandp": "matched",
    "urbandp-truncate": "matched_truncate",
    "urbandp-l2": "matched_l2",
    "urbandp-pooled": "matched_pooled",
    "urbandp-l2-pooled": "matched_l2_pooled",
}


def domains_from(args: argparse.Namespace) -> list[str]:
    if args.extent is not None:  # the issue-21 flag
        return {"both": ["none", "extent"], "yes": ["extent"], "no": ["none"]}[args.extent]
    return list(dict.fromkeys(args.domain))


def run_contender(
    name: str,
    ds: dict[str, Any],
    prepared: Path,
    keys: Path | None,
    domain: str,
    eps: float,
    repeat: int,
    cache: Path,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        if name in URBANDP:
            return run_urbandp(ds, eps, domain, Path(tmp), URBANDP[name])
        return run_peer(name, peer_rows(prepared, repeat, keys, cache), keys, eps, Path(tmp))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", nargs="*", default=["synth-month", "austin4", "austin1"])
    parser.add_argument("--epsilons", nargs="*", type=float, default=[1.0, 4.0, 10.0])
    parser.add_argument("--domain", nargs="*", choices=DOMAINS, default=list(DOMAINS))
    parser.add_argument("--extent", choices=["both", "yes", "no"], default=None, help="issue 21: --domain")
    parser.add_argument("--peers", nargs="*", default=[*URBANDP, *PEERS])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--results", default="peers", help="name of the results file (results/NAME.json)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    all_ds = datasets()
    rows: list[dict[str, Any]] = []
    cell = 0
    for ds_name in args.datasets:
        ds = all_ds[ds_name]
        prepared = ensure_data(ds_name, ds)
        truth = pd.read_parquet(prepared / "truth.parquet").astype({"slot": int})
        for domain in domains_from(args):
            if domain == "routes" and ds["routes"] is None:
                print(f"{ds_name}: no route domain (no {SYNTH_GTFS}); routes skipped", flush=True)
                continue
            keys = keys_for(domain, ds, prepared)
            names = [n for n in args.peers if not (n.startswith("urbandp-l2") and keys is None)]
            for eps in args.epsilons:
                order = names[cell % len(names) :] + names[: cell % len(names)]
                cell += 1
                with tempfile.TemporaryDirectory() as cache:
                    rows += run_cell(
                        ds_name, ds, prepared, truth, keys, domain, eps, order, args, Path(cache)
                    )
    tables = report_tables(rows)
    print()
    print(tables)
    write_results(
        args.results,
        {
            "rows": rows,
            "markdown": markdown_table(rows),
            "useful_markdown": useful_table(rows),
            "noise_markdown": noise_table(rows),
            "matched_markdown": matched_table(rows),
            "matched_useful_markdown": "\n\n".join(
                matched_table(rows, ours, "useful")
                for ours in URBANDP
                if any(r["contender"] == ours for r in rows)
            ),
        },
        load_before,
    )
    return 0


def run_cell(
    ds_name: str,
    ds: dict[str, Any],
    prepared: Path,
    truth: pd.DataFrame,
    keys: Path | None,
    domain: str,
    eps: float,
    order: list[str],
    args: argparse.Namespace,
    cache: Path,
) -> list[dict[str, Any]]:
    """Every contender of one (data, domain, epsilon) cell, ``args.repeats`` runs each, scored; then each peer's
    errors against each urbandp contender on the HATs both showed, run by run."""
    tables: dict[str, list[pd.DataFrame]] = {}
    cell_rows: list[dict[str, Any]] = []
    for name in order:
        scores: list[dict[str, float]] = []
        run: dict[str, Any] = {}
        for repeat in range(args.repeats):
            try:
                run = run_contender(name, ds, prepared, keys, domain, eps, repeat, cache)
            except RuntimeError as err:
                print(f"  {ds_name} eps {eps:g} domain {domain}: {err}", flush=True)
                break
            tables.setdefault(name, []).append(run["table"])
            s = score(run["table"], truth)
            s.update(wall_s=run["wall_s"], peak_mib=run["peak_mib"])
            scores.append(s)
        if not scores:
            continue
        mean = {key: mean_of_runs([s[key] for s in scores]) for key in scores[0]}
        row = {
            "dataset": ds_name,
            "epsilon_per_day": eps,
            "domain": domain,
            "extent": domain != "none",
            "keys": None if keys is None else len(pd.read_parquet(keys)),
            "contender": name,
            **mean,
            "runs": len(scores),
            "hats_per_run": [s["hats"] for s in scores],
            "useful_per_run": [s["useful"] for s in scores],
            "stated_loss": run["loss"],
            "loss_within_target": loss_ok(run["loss"], eps),
            "noise": run["noise"],
        }
        cell_rows.append(row)
        print(
            f"{ds_name:11s} eps {eps:>4g} {domain:6s} {name:16s} HATs {mean['hats']:7.1f} useful "
            f"{mean['useful']:6.1f} coverage {mean['coverage']:.3f} empty {mean['empty_hats']:4.1f} median "
            f"{mean['median_error']:6.2f} p90 {mean['p90_error']:6.2f}  {mean['wall_s']:6.1f} s "
            f"{mean['peak_mib']:7.0f} MiB  loss ok: {row['loss_within_target']}",
            flush=True,
        )
    for row in cell_rows:
        if row["contender"] in URBANDP:
            continue
        for ours, key in MATCHED_KEY.items():
            if ours not in tables:
                continue
            pairs = [
                matched(u, t, truth) for u, t in zip(tables[ours], tables[row["contender"]], strict=False)
            ]
            names = set().union(*pairs) if pairs else set()
            row[key] = {k: mean_of_runs([p.get(k, np.nan) for p in pairs]) for k in names}
            row[key]["hats_pooled"] = float(sum(p["hats"] for p in pairs))
    return cell_rows


def domain_of(row: dict[str, Any]) -> str:
    """The row's domain (rows of issue-21 result files have only ``extent``: bbox or none)."""
    return str(row.get("domain") or ("extent" if row["extent"] else "none"))


def label(ds: str, eps: float, domain: str) -> str:
    return f"{ds}, {eps:g}, {'bbox' if domain == 'extent' else domain}"


def cells_of(rows: list[dict[str, Any]]) -> list[tuple[str, float, str]]:
    return list(dict.fromkeys((r["dataset"], r["epsilon_per_day"], domain_of(r)) for r in rows))


def in_cell(rows: list[dict[str, Any]], key: tuple[str, float, str]) -> list[dict[str, Any]]:
    return [r for r in rows if (r["dataset"], r["epsilon_per_day"], domain_of(r)) == key]


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """One line per (data, epsilon, domain): each contender's HATs, median / p90 error, time and memory."""
    names = list(dict.fromkeys(r["contender"] for r in rows))
    head = "| data, eps/day, domain | " + " | ".join(names) + " |"
    lines = [head, "|" + "---|" * (len(names) + 1)]
    for key in cells_of(rows):
        cell = {r["contender"]: r for r in in_cell(rows, key)}
        cells = [
            ""
            if (r := cell.get(name)) is None
            else f"{r['hats']:.0f}, {r['median_error']:.2f} / {r['p90_error']:.2f}, "
            f"{r['wall_s']:.1f} s, {r['peak_mib']:.0f} MiB"
            for name in names
        ]
        lines.append(f"| {label(*key)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def useful_table(rows: list[dict[str, Any]]) -> str:
    """One line per contender and cell: HATs with a mean, useful HATs (95% interval <= 10 km/h), coverage of the
    shown intervals, median / p90 error, median interval width, truly empty HATs with a mean, loss within target."""
    lines = [
        "| data, eps/day, domain | contender | HATs with a mean | useful | coverage | median / p90 error | "
        "median width | empty HATs | loss ok |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key in cells_of(rows):
        for r in in_cell(rows, key):
            if "useful" not in r:
                continue
            lines.append(
                f"| {label(*key)} | {r['contender']} | {r['hats']:.1f} | {r['useful']:.1f} | "
                f"{r['coverage']:.3f} | {r['median_error']:.2f} / {r['p90_error']:.2f} | "
                f"{r['median_width']:.1f} | {r['empty_hats']:.1f} | {'yes' if r['loss_within_target'] else 'NO'} |"
            )
    return "\n".join(lines)


def noise_table(rows: list[dict[str, Any]]) -> str:
    """The noise each contender used, as it states it (the count's and the sum's sd, per HAT)."""
    lines = ["| data, eps/day, domain | contender | count sd | sum sd | from |", "|---|---|---|---|---|"]
    for key in cells_of(rows):
        for r in in_cell(rows, key):
            noise = r.get("noise") or {}
            if not noise:
                continue

            def num(x: Any) -> str:
                return "not stated" if x is None else f"{float(x):.2f}"

            lines.append(
                f"| {label(*key)} | {r['contender']} | {num(noise.get('count_sd'))} | {num(noise.get('sum_sd'))} | "
                f"{noise.get('scales_from', '')} |"
            )
    return "\n".join(lines)


# Fewer shared HATs than this (pooled over the runs) make no median or p90 worth comparing: the p90 of nine values is
# their largest. Such pairs are listed but do not decide the verdict.
MIN_SHARED_HATS = 10


def hats_noise(ours: dict[str, Any], best: dict[str, Any], metric: str = "hats") -> float:
    """Two standard errors of the difference of the mean ``metric`` (HATs with a mean, or useful HATs) of two
    contenders over their runs, or 0 when a contender has fewer than two runs or the rows predate the per-run
    figures."""
    se2 = 0.0
    for row in (ours, best):
        runs = row.get(f"{metric}_per_run") or []
        if len(runs) < 2:
            return 0.0
        se2 += float(np.var(runs, ddof=1)) / len(runs)
    return 2.0 * float(np.sqrt(se2))


def verdict(
    ours: dict[str, Any], peers: list[dict[str, Any]], metric: str = "hats", matched_key: str = "matched"
) -> tuple[str, list[str]]:
    """``ahead``: urbandp has at least as many ``metric`` (HATs with a mean, or useful HATs) as every peer and is
    no less accurate than any of them on the HATs both showed (median and p90), wherever they share at least
    MIN_SHARED_HATS over the runs; ``within noise``: the same, except that the best peer's mean exceeds ours by
    less than two standard errors of the difference over the runs; ``behind`` otherwise. Also the per-peer
    descriptions."""
    best = max(peers, key=lambda r: r[metric])
    gap = best[metric] - ours[metric]
    errors_ok, parts = True, []
    for r in peers:
        m = r.get(matched_key, {})
        if not m.get("hats"):
            parts.append(f"{r['contender']}: none shared")
            continue
        text = (
            f"{r['contender']}: {m['hats']:.0f}, {m['urbandp_median']:.2f}/{m['peer_median']:.2f}, "
            f"{m['urbandp_p90']:.2f}/{m['peer_p90']:.2f}"
        )
        pooled = m.get("hats_pooled", m["hats"] * r.get("runs", 1))
        if pooled < MIN_SHARED_HATS:
            parts.append(f"{text} (too few to compare)")
            continue
        parts.append(text)
        errors_ok &= m["urbandp_median"] <= m["peer_median"] and m["urbandp_p90"] <= m["peer_p90"]
    if not errors_ok:
        return "behind", parts
    if gap <= 0:
        return "ahead", parts
    return ("within noise" if gap < hats_noise(ours, best, metric) else "behind"), parts


def matched_table(rows: list[dict[str, Any]], ours_name: str = "urbandp", metric: str = "hats") -> str:
    """Per cell: ``metric`` (HATs with a mean, or useful HATs) of ``ours_name`` against the best peer and, against
    each peer on the HATs both showed, the median / p90 errors (ours first), and the :func:`verdict`."""
    what = "HATs" if metric == "hats" else "useful HATs"
    lines = [
        f"| data, eps/day, domain | {ours_name} {what} | best peer {what} | against each peer on shared HATs: n, "
        "median ours/theirs, p90 ours/theirs | verdict |",
        "|---|---|---|---|---|",
    ]
    for key in cells_of(rows):
        cell = in_cell(rows, key)
        ours = next((r for r in cell if r["contender"] == ours_name), None)
        peers = [r for r in cell if r["contender"] not in URBANDP]
        if ours is None or not peers:
            continue
        best = max(peers, key=lambda r: r[metric])
        said, parts = verdict(ours, peers, metric, MATCHED_KEY[ours_name])
        lines.append(
            f"| {label(*key)} | {ours[metric]:.1f} | {best[metric]:.1f} "
            f"({best['contender']}) | {'; '.join(parts)} | {said} |"
        )
    return "\n".join(lines)


def report_tables(rows: list[dict[str, Any]]) -> str:
    """Everything printed at the end: the useful-HAT table, the noise each contender used, the verdicts on useful
    HATs and on HATs with a mean for each urbandp contender, and the issue-21 table (time, memory)."""
    parts = [useful_table(rows), noise_table(rows)]
    for ours in URBANDP:
        if any(r["contender"] == ours for r in rows):
            parts += [matched_table(rows, ours, "useful"), matched_table(rows, ours, "hats")]
    parts.append(markdown_table(rows))
    return "\n\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
