"""urbandp against OpenDP, PipelineDP and Tumult on the same fleet task, at the same privacy loss (issue 21).

The task, the same for every contender: mean speed and vehicle-day count per H3 res-7 cell x 1-hour slot (all 24
hours), privacy unit a vehicle-day, K = 32 HATs per vehicle-day, speeds in [0, U = 65] km/h, DP partition selection
(or a public extent: every HAT of a bounding box gets a noisy count, and the HATs whose noisy count passes the
same rule for everyone are kept: at most 0.05 empty HATs expected per release), epsilon 1, 4 or 10 per day at delta
1e-6 per day.

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
  not counted;
* scores: every released mean is compared with the true HAT mean computed by ``peers/prepare.py`` (mean over all
  vehicle-days of their HAT mean speed, before truncation), independent of urbandp: HATs released (with a mean),
  released HATs that are truly empty, median and 90th percentile absolute error;
* the privacy loss each contender states is read from its own accountant and checked against (epsilon, delta).

Noise is unseeded: with ``--repeats R`` each figure is the mean over R runs, and run r hands the peers a table
truncated with seed ``TRUNCATION_SEED + r`` (the truncation draw moves the HATs released by a few percent; urbandp's
own truncation is fixed and public: daytime first, long dwells last, then a keyed hash; see bench_truncation.py).

    .venv/bin/python benchmarks/bench_peers.py                       # everything (about 40 minutes on 2 cores)
    .venv/bin/python benchmarks/bench_peers.py --datasets austin1 --peers urbandp opendp-gaussian
Results: benchmarks/results/peers.json and the table printed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from peers.prepare import TRUNCATION_SEED, prepare, truncate  # noqa: E402
from results_file import write_results  # noqa: E402
from urbandp.privacy.noise import rho_for_epsilon, zcdp_epsilon  # noqa: E402

DATA = HERE / "data" / "peers"
VENVS = HERE / ".peers"
AUSTIN = ROOT.parent / "shared" / "data" / "austin-avl"
K, U, DELTA, RESOLUTION = 32, 65.0, 1e-6, 7
SURAT_BBOX = (21.09, 72.75, 21.25, 72.91)
AUSTIN_BBOX = (30.15, -97.95, 30.55, -97.6)
AUSTIN_DAYS = ("2016-11-24", "2016-11-25", "2016-11-27", "2016-12-16")

PEERS: dict[str, dict[str, Any]] = {
    "opendp-gaussian": {"venv": "opendp", "runner": "run_opendp.py", "noise": "gaussian"},
    "opendp-laplace": {"venv": "opendp", "runner": "run_opendp.py", "noise": "laplace"},
    "pipelinedp": {"venv": "pipelinedp", "runner": "run_pipelinedp.py", "noise": "gaussian"},
    "tumult": {"venv": "tumult", "runner": "run_tumult.py", "noise": "gaussian with an extent, else laplace"},
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


def datasets() -> dict[str, dict[str, Any]]:
    return {
        "synth-month": {
            "inputs": [DATA / "synth_month.parquet"],
            "speed_factor": 1.0,
            "bbox": SURAT_BBOX,
            "urbandp": ["--start", "2021-11-15", "--end", "2021-12-15"],
        },
        "austin4": {
            "inputs": [AUSTIN / f"{d}.csv" for d in AUSTIN_DAYS],
            "speed_factor": 3.6,
            "bbox": AUSTIN_BBOX,
            "urbandp": ["--speed-unit", "m/s", "--dates", ",".join(AUSTIN_DAYS)],
        },
        "austin1": {
            "inputs": [AUSTIN / "2016-11-24.csv"],
            "speed_factor": 3.6,
            "bbox": AUSTIN_BBOX,
            "urbandp": ["--speed-unit", "m/s", "--start", "2016-11-24", "--end", "2016-11-24"],
        },
    }


def ensure_data(name: str, ds: dict[str, Any]) -> Path:
    """The raw input (the synthetic month is generated once) and the prepared table and truth, cached."""
    if name == "synth-month" and not ds["inputs"][0].exists():
        DATA.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                str(ROOT / ".venv" / "bin" / "urbandp"),
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


def run_urbandp(ds: dict[str, Any], eps: float, extent: bool, work: Path) -> dict[str, Any]:
    out = work / "urbandp"
    cmd = [
        str(ROOT / ".venv" / "bin" / "urbandp"),
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
        *ds["urbandp"],
    ]
    if extent:
        cmd += ["--domain-bbox", ",".join(str(x) for x in ds["bbox"])]
    proc, wall, mib = _timed(cmd, env={**os.environ, "NO_COLOR": "1"})
    if proc.returncode != 0:
        raise RuntimeError(f"urbandp failed: {proc.stderr.strip()[-800:]}")
    privacy = json.loads((out / "privacy.json").read_text())
    speed = pd.read_csv(out / "hat_speed.csv")
    table = pd.DataFrame(
        {
            "cell": speed["h3_cell"],
            "slot": speed["slot"].str.slice(0, 2).astype(int),
            "mean": speed["mean_speed"],
        }
    )
    loss = {"epsilon": privacy["cumulative_epsilon_per_day"], "delta": privacy["delta_per_day"]}
    return {"table": table, "loss": loss, "wall_s": wall, "peak_mib": mib}


def peer_rows(prepared: Path, repeat: int) -> Path:
    """The peers' table for one repeat: the vehicle-day x HAT rows truncated to K with seed TRUNCATION_SEED +
    repeat. Which HATs a truncation keeps moves the HATs that pass by a few percent (357.5 +- 3.0 over 12 seeds on
    four Austin days at epsilon 10), so every repeat redraws it, as urbandp's noise is redrawn."""
    if repeat == 0:
        return prepared / "rows.parquet"
    path = prepared / f"rows_r{repeat}.parquet"
    if not path.exists():
        rows = pd.read_parquet(prepared / "rows_all.parquet")
        truncate(rows, K, TRUNCATION_SEED + repeat).to_parquet(path, index=False)
    return path


def run_peer(
    name: str, prepared: Path, eps: float, extent: bool, work: Path, repeat: int = 0
) -> dict[str, Any]:
    peer = PEERS[name]
    spec = {
        "rows": str(peer_rows(prepared, repeat)),
        "keys": str(prepared / "keys.parquet"),
        "out": str(work / f"{name}.csv"),
        "epsilon": eps,
        "delta": DELTA,
        "k": K,
        "speed_max": U,
        "noise": peer["noise"],
        "extent": extent,
        "rho": rho_for_epsilon(eps, DELTA),  # a zCDP peer's budget: OpenDP's conversion, as for urbandp
    }
    spec_path = work / f"{name}.json"
    spec_path.write_text(json.dumps(spec))
    python = peer_python(peer["venv"])
    proc, wall, mib = _timed([str(python), str(HERE / "peers" / peer["runner"]), str(spec_path)])
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed: {proc.stderr.strip()[-800:]}")
    report = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
    table = pd.read_csv(spec["out"])
    loss = dict(report["loss"])
    # a zCDP accountant (Tumult's RhoZCDPBudget) states rho: converted at the target delta
    if "epsilon" not in loss:
        loss.update(epsilon=zcdp_epsilon(float(loss["rho"]), DELTA), delta=DELTA)
    return {"table": table, "loss": loss, "wall_s": wall, "peak_mib": mib}


def score(table: pd.DataFrame, truth: pd.DataFrame) -> dict[str, float]:
    """HATs released with a mean, truly empty ones among them, and the median / p90 absolute error."""
    released = table.dropna(subset=["mean"]).astype({"slot": int})
    joined = released.merge(truth, on=["cell", "slot"], how="left")
    empty = int(joined["true_mean"].isna().sum())
    err = (joined["mean"] - joined["true_mean"]).abs().dropna().to_numpy()
    return {
        "hats": float(len(released)),
        "empty_hats": float(empty),
        "median_error": float(np.median(err)) if err.size else float("nan"),
        "p90_error": float(np.quantile(err, 0.9)) if err.size else float("nan"),
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


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", nargs="*", default=["synth-month", "austin4", "austin1"])
    parser.add_argument("--epsilons", nargs="*", type=float, default=[1.0, 4.0, 10.0])
    parser.add_argument("--extent", choices=["both", "yes", "no"], default="both")
    parser.add_argument("--peers", nargs="*", default=["urbandp", *PEERS])
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
        extents = {"both": [False, True], "yes": [True], "no": [False]}[args.extent]
        for extent in extents:
            for eps in args.epsilons:
                order = args.peers[cell % len(args.peers) :] + args.peers[: cell % len(args.peers)]
                cell += 1
                tables: dict[str, list[pd.DataFrame]] = {}
                cell_rows: list[dict[str, Any]] = []
                for name in order:
                    scores: list[dict[str, float]] = []
                    for repeat in range(args.repeats):
                        with tempfile.TemporaryDirectory() as tmp:
                            try:
                                if name == "urbandp":
                                    run = run_urbandp(ds, eps, extent, Path(tmp))
                                else:
                                    run = run_peer(name, prepared, eps, extent, Path(tmp), repeat)
                            except RuntimeError as err:
                                print(f"  {ds_name} eps {eps:g} extent {extent}: {err}", flush=True)
                                break
                        tables.setdefault(name, []).append(run["table"])
                        s = score(run["table"], truth)
                        s.update(wall_s=run["wall_s"], peak_mib=run["peak_mib"])
                        scores.append(s)
                    if not scores:
                        continue
                    mean = {key: mean_of_runs([s[key] for s in scores]) for key in scores[0]}
                    per_run = [s["hats"] for s in scores]
                    row = {
                        "dataset": ds_name,
                        "epsilon_per_day": eps,
                        "extent": extent,
                        "contender": name,
                        **mean,
                        "runs": len(scores),
                        "hats_per_run": per_run,
                        "stated_loss": run["loss"],
                        "loss_within_target": loss_ok(run["loss"], eps),
                    }
                    rows.append(row)
                    cell_rows.append(row)
                    print(
                        f"{ds_name:11s} eps {eps:>4g} extent {'yes' if extent else 'no ':3s} {name:16s} "
                        f"HATs {mean['hats']:7.1f} empty {mean['empty_hats']:4.1f} median {mean['median_error']:6.2f} "
                        f"p90 {mean['p90_error']:6.2f}  {mean['wall_s']:6.1f} s {mean['peak_mib']:7.0f} MiB"
                        f"  loss ok: {row['loss_within_target']}",
                        flush=True,
                    )
                for row in cell_rows:  # each peer against urbandp on the HATs both released, repeat by repeat
                    name = row["contender"]
                    if name == "urbandp" or "urbandp" not in tables:
                        continue
                    pairs = [
                        matched(u, t, truth) for u, t in zip(tables["urbandp"], tables[name], strict=False)
                    ]
                    keys = set().union(*pairs) if pairs else set()
                    row["matched"] = {k: mean_of_runs([p.get(k, np.nan) for p in pairs]) for k in keys}
                    row["matched"]["hats_pooled"] = float(sum(p["hats"] for p in pairs))
    print()
    print(markdown_table(rows))
    print()
    print(matched_table(rows))
    write_results(
        args.results,
        {"rows": rows, "markdown": markdown_table(rows), "matched_markdown": matched_table(rows)},
        load_before,
    )
    return 0


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """One line per (data, epsilon, extent): each contender's HATs, median / p90 error, time and memory."""
    names = list(dict.fromkeys(r["contender"] for r in rows))
    head = "| data, eps/day, extent | " + " | ".join(names) + " |"
    lines = [head, "|" + "---|" * (len(names) + 1)]
    keys = list(dict.fromkeys((r["dataset"], r["epsilon_per_day"], r["extent"]) for r in rows))
    for ds, eps, extent in keys:
        cells = []
        for name in names:
            r = next(
                (
                    x
                    for x in rows
                    if (x["dataset"], x["epsilon_per_day"], x["extent"], x["contender"])
                    == (ds, eps, extent, name)
                ),
                None,
            )
            cells.append(
                ""
                if r is None
                else f"{r['hats']:.0f}, {r['median_error']:.2f} / {r['p90_error']:.2f}, "
                f"{r['wall_s']:.1f} s, {r['peak_mib']:.0f} MiB"
            )
        lines.append(f"| {ds}, {eps:g}, {'bbox' if extent else 'none'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# Fewer shared HATs than this (pooled over the runs) make no median or p90 worth comparing: the p90 of nine values is
# their largest. Such pairs are listed but do not decide the verdict.
MIN_SHARED_HATS = 10


def hats_noise(ours: dict[str, Any], best: dict[str, Any]) -> float:
    """Two standard errors of the difference of the mean HATs released (from each contender's runs), or 0 when a
    contender has fewer than two runs or the rows predate the per-run counts."""
    se2 = 0.0
    for row in (ours, best):
        runs = row.get("hats_per_run") or []
        if len(runs) < 2:
            return 0.0
        se2 += float(np.var(runs, ddof=1)) / len(runs)
    return 2.0 * float(np.sqrt(se2))


def verdict(ours: dict[str, Any], peers: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """``ahead``: urbandp releases at least as many HATs as every peer and is no less accurate than any of them on
    the HATs both released (median and p90), wherever they share at least MIN_SHARED_HATS over the runs;
    ``within noise``: the same, except that the best peer's mean HATs exceed ours by less than two standard errors
    of the difference over the runs; ``behind`` otherwise. Also the per-peer descriptions."""
    best = max(peers, key=lambda r: r["hats"])
    gap = best["hats"] - ours["hats"]
    errors_ok, parts = True, []
    for r in peers:
        m = r.get("matched", {})
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
    return ("within noise" if gap < hats_noise(ours, best) else "behind"), parts


def matched_table(rows: list[dict[str, Any]]) -> str:
    """Per cell: HATs (urbandp against the best peer) and, against each peer on the HATs both released, the
    median / p90 errors (urbandp's first), and the :func:`verdict`."""
    lines = [
        "| data, eps/day, extent | urbandp HATs | best peer HATs | against each peer on shared HATs: n, median "
        "ours/theirs, p90 ours/theirs | verdict |",
        "|---|---|---|---|---|",
    ]
    keys = list(dict.fromkeys((r["dataset"], r["epsilon_per_day"], r["extent"]) for r in rows))
    for ds, eps, extent in keys:
        cell = [r for r in rows if (r["dataset"], r["epsilon_per_day"], r["extent"]) == (ds, eps, extent)]
        ours = next((r for r in cell if r["contender"] == "urbandp"), None)
        peers = [r for r in cell if r["contender"] != "urbandp"]
        if ours is None or not peers:
            continue
        best = max(peers, key=lambda r: r["hats"])
        said, parts = verdict(ours, peers)
        lines.append(
            f"| {ds}, {eps:g}, {'bbox' if extent else 'none'} | {ours['hats']:.1f} | {best['hats']:.1f} "
            f"({best['contender']}) | {'; '.join(parts)} | {said} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
