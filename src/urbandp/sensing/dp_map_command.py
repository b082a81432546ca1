"""`urbandp sensing dp-map`: the release, in the order that keeps it honest (DESIGN.md, "Outputs", rule 5).

1. Validate every option (finite, positive, in its domain) and the output path: one line and exit 2 otherwise.
2. Read the readings (bad rows to a staging quarantine), restrict them to the public ``--start/--end`` window.
3. Compute the cost before any noise (:func:`urbandp.sensing.dp_map.plan_dp_map`): refuse an over-budget
   release, or one whose noise would be meaningless, before a single draw.
4. Reserve the charge in the budget store (``--dataset``) BEFORE any noise; a run that fails after it stays
   charged (``aborted after noise``). A release labelled NOT DP is refused with ``--dataset``.
5. Fit, add noise and write everything into a temporary directory that is renamed into place at the end
   (:func:`urbandp.reports.outputs.atomic_output_dir`): the release directory holds only the DP map and
   privacy.json; the quarantine, the leakage measures, the true-sigma2 plot (it shows every reading's location)
   and the utility curve go to ``owner_only/<name>/`` beside it, listed in privacy.json as not DP.
6. Commit the reservation with the content hash of the published directory.
"""

from __future__ import annotations

import datetime as dt
import math
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from urbandp.errors import InputError
from urbandp.privacy.report import write_privacy_json

MAX_PRECISION = 15


MIN_SENSITIVITY = 1e-6
"""Smallest --sensitivity: far above the 2^-40 lattice the bounded Laplace is drawn on (bounded_laplace.py)."""


@dataclass(frozen=True)
class DpMapOptions:
    """The options of `sensing dp-map` (validated in ``__post_init__``, Tumult-style)."""

    input_path: Path
    out: Path
    epsilon: float = 1.0
    bbox: tuple[float, float, float, float] | None = None
    bbox_from_data_not_private: bool = False
    cell_metres: float = 500.0
    window_minutes: int = 60
    kernel: str = "matern32"
    sensitivity: float = 1.0
    upper: float | None = None
    calibration: str = "holohan"
    utility_epsilons: tuple[float, ...] = (0.5, 1.0, 10.0)
    min_readings: int = 3
    budget: float | None = None
    precision: int = 4
    value_column: str | None = None
    dataset: str | None = None
    budget_store: str | None = None
    start: str | None = None
    end: str | None = None
    delta: float = 1e-6
    allow_meaningless_epsilon: bool = False

    def __post_init__(self) -> None:
        from urbandp.sensing.bounded_laplace import CALIBRATIONS

        for name, v in (("--epsilon", self.epsilon), ("--sensitivity", self.sensitivity)):
            if not (v > 0 and math.isfinite(v)):
                raise InputError(f"{name} must be a positive finite number, got {v}")
        if self.sensitivity < MIN_SENSITIVITY:
            raise InputError(
                f"--sensitivity must be at least {MIN_SENSITIVITY:g} (noise is drawn on a 2^-40 lattice, so a "
                f"smaller sensitivity is rounded away), got {self.sensitivity:g}"
            )
        if self.upper is not None and not (math.isfinite(self.upper) and self.upper >= self.sensitivity):
            raise InputError(f"--upper must be finite and >= --sensitivity, got {self.upper}")
        if self.budget is not None and not (self.budget > 0 and math.isfinite(self.budget)):
            raise InputError(f"--budget must be a positive finite number, got {self.budget}")
        if self.calibration not in CALIBRATIONS:
            raise InputError(
                f"--calibration must be one of {', '.join(CALIBRATIONS)}, got {self.calibration!r}"
            )
        if self.bbox is None and not self.bbox_from_data_not_private:
            raise InputError("give a public --bbox (or --bbox-from-data-not-private, which is not DP)")
        if self.min_readings < 2:
            raise InputError(f"--min-readings must be >= 2, got {self.min_readings}")
        if not 0 <= self.precision <= MAX_PRECISION:
            raise InputError(f"--precision must be between 0 and {MAX_PRECISION}, got {self.precision}")
        if any(not (e > 0 and math.isfinite(e)) for e in self.utility_epsilons):
            raise InputError("--utility-epsilons must all be positive finite numbers")
        if self.dataset is not None and self.calibration == "paper":
            raise InputError("--dataset: the paper's calibration is not DP and cannot be charged to a budget")
        if self.dataset is not None and (self.start is None or self.bbox is None):
            raise InputError(  # a release labelled NOT DP is never booked as DP spend (issue 20)
                "--dataset: without --start/--end and a public --bbox the release is NOT differentially private "
                "(its window or box is read from the readings); it cannot be charged to a budget as DP spend"
            )
        if (self.start is None) != (self.end is None):
            raise InputError("give both --start and --end (a public time window), or neither")


def parse_utility_epsilons(text: str) -> tuple[float, ...]:
    """``"0.5,1,10"`` -> (0.5, 1.0, 10.0); ``""`` -> () (utility curve off); an empty item (``"1,,2"``) is
    refused, not skipped."""
    if not text.strip():
        return ()
    try:
        return tuple(float(e) for e in text.split(","))
    except ValueError:
        raise InputError(f"--utility-epsilons must be comma-separated numbers, got {text!r}") from None


def parse_window(start: str, end: str) -> tuple[np.datetime64, np.datetime64]:
    """Public ``[start, end)``: ISO dates or date-times; a date-only ``end`` includes that whole day."""

    def one(text: str, option: str) -> tuple[np.datetime64, bool]:
        t = text.strip()
        try:
            if len(t) == 10:
                return np.datetime64(dt.date.fromisoformat(t), "m"), True
            return np.datetime64(dt.datetime.fromisoformat(t).replace(tzinfo=None), "m"), False
        except ValueError:
            raise InputError(
                f"{option} must be an ISO date or date-time like 2023-04-25, got {text!r}"
            ) from None

    s, _ = one(start, "--start")
    e, date_only = one(end, "--end")
    if date_only:
        e = e + np.timedelta64(1, "D")
    if not e > s:
        raise InputError(f"--end ({end}) must not be before --start ({start})")
    return s, e


class _LineProgress:
    """Progress as plain lines on stderr when it is not a terminal (a log, CI): one line per task at most every
    ``every`` seconds, and one when it completes, so a long run is never silent."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.tasks: dict[int, dict[str, Any]] = {}

    def __enter__(self) -> _LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, total: int | None = None) -> int:
        self.tasks[len(self.tasks)] = {"name": description, "start": time.monotonic(), "last": 0.0}
        return len(self.tasks) - 1

    def update(self, task: int, completed: int, total: int) -> None:
        t = self.tasks[task]
        now = time.monotonic() - t["start"]
        if completed >= total or now - t["last"] >= self.every:
            t["last"] = now
            print(f"urbandp: dp-map: {t['name']}: {completed}/{total} windows ({now:.1f} s)", file=sys.stderr)


def _progress() -> Any:
    """A transient progress bar on stderr, or :class:`_LineProgress` lines when stderr is not a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if not sys.stderr.isatty():
        return _LineProgress()
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )


class _WindowClock:
    """Seconds per window of a stage, from its progress callbacks (owner material: a window's fit time grows with
    its true number of readings)."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.seconds: list[float] = []

    def tick(self, done: int, total: int) -> None:
        now = time.monotonic()
        self.seconds.append(now - self.last)
        self.last = now

    def restart(self) -> None:
        self.last = time.monotonic()

    def summary(self, name: str, per_window: bool = True) -> str:
        if not self.seconds:
            return f"{name}: no window"
        v = np.array(self.seconds)
        text = f"{name}: {len(v)} windows in {v.sum():.1f} s"
        if per_window:
            text += f" (median {1000 * np.median(v):.0f} ms, slowest {1000 * v.max():.0f} ms per window)"
        return text


def _warn(message: str) -> None:
    print(f"urbandp: warning: {message}", file=sys.stderr)


def run_dp_map(o: DpMapOptions) -> dict[str, Any]:
    """Run the release (see the module docstring); returns privacy.json's content."""
    import polars as pl

    from urbandp.privacy.guards import check_delta
    from urbandp.privacy.loss import Loss
    from urbandp.privacy.rounding import round_to_precision
    from urbandp.privacy.session import Session, days_between
    from urbandp.reports.outputs import atomic_output_dir, check_output_path, owner_dir_for
    from urbandp.sensing.bounded_laplace import check_meaningful
    from urbandp.sensing.dp_map import (
        all_windows,
        fit_for_release,
        plan_dp_map,
        public_windows,
        release_dp_map,
    )
    from urbandp.sensing.gp import blas_threads_limit
    from urbandp.sensing.grid import SquareGrid
    from urbandp.sensing.readings import read_readings, windows_per_day

    check_output_path(o.out)
    check_delta(o.delta, "--delta")
    hi = o.sensitivity if o.upper is None else o.upper
    for e in (o.epsilon, *o.utility_epsilons):  # same floor for the utility curve (closed form breaks below)
        try:
            check_meaningful(e, o.sensitivity, 0.0, hi)
        except ValueError as err:
            option = "--epsilon" if e == o.epsilon else "--utility-epsilons"
            raise InputError(f"{option}: {err}") from None
    window = parse_window(o.start, o.end) if o.start is not None and o.end is not None else None
    with tempfile.TemporaryDirectory(prefix="urbandp-dpmap-") as stage:
        q_stage = Path(stage) / "quarantine.csv"
        readings, load = read_readings(o.input_path, o.value_column, q_stage, o.bbox)
        rows: dict[str, Any] = dict(load.__dict__)
        if window is not None:
            t = readings.time.astype("datetime64[m]")
            inside = (t >= window[0]) & (t < window[1])
            rows["rows_outside_window"] = int((~inside).sum())
            if not inside.any():
                raise InputError(
                    f"no usable reading inside --start {o.start} --end {o.end} "
                    f"({len(readings)} usable readings lie outside it)"
                )
            readings = readings.subset(inside)
            windows = public_windows(window[0], window[1], o.window_minutes)
        else:
            windows = all_windows(readings, o.window_minutes)
        if o.bbox is not None:
            grid = SquareGrid(*o.bbox, o.cell_metres)
        else:
            grid = SquareGrid.covering(readings.lat, readings.lon, o.cell_metres)
        if grid.n_cells > 250_000:
            raise InputError(f"grid of {grid.n_cells} cells is too large; use a larger --cell-metres")
        plan = None
        if o.calibration != "paper":
            plan = plan_dp_map(
                len(windows),
                grid.n_cells,
                o.epsilon,
                o.sensitivity,
                o.upper,
                o.delta,
                windows_per_day(windows, o.window_minutes),
            )
            plan.check()  # before any noise: meaningless noise or unbounded work
        elif len(readings) < o.min_readings:
            raise InputError(
                f"the paper's calibration releases only fitted windows; none has {o.min_readings} readings "
                f"({len(readings)} usable)"
            )
        not_dp: list[str] = []
        if window is None:
            not_dp.append(
                "the time window (first to last released window) was derived from the data's first and last "
                "reading; give --start and --end to make it public"
            )
        if o.bbox is None:
            not_dp.append("the bounding box was taken from the readings (--bbox-from-data-not-private)")
        if o.calibration == "paper":
            not_dp.append(
                "paper calibration: b = Delta/epsilon with the upper bound taken from the data (no finite epsilon)"
            )
        days = sorted({str(w)[:10] for w in windows})
        cap = None if o.budget is None else Loss.approx_dp(o.budget, 1.0)
        with (
            Session(
                o.dataset,
                o.budget_store,
                unit="vehicle-day",
                out=o.out,
                cap=cap,
                allow_meaningless_epsilon=o.allow_meaningless_epsilon,
            ) as session,
            atomic_output_dir(o.out) as d,
        ):
            session.refuse_not_dp(not_dp)
            # before any noise; kept (aborted after noise) if anything below fails. The loss per vehicle-day is
            # booked, so the one guard (privacy/guards.py, in reserve) checks what a vehicle pays in a day
            session.reserve(
                plan.loss_per_vehicle_day() if plan is not None else Loss(),
                days_between(days[0], days[-1]),
                "sensing-dp-map",
                {"epsilon_cell": o.epsilon, "cells": grid.n_cells, "windows": len(windows)},
                cap_on=plan.loss_total() if plan is not None else Loss(),
            )
            not_dp = list(session.not_dp_reasons)  # with a meaningless loss allowed: its reasons
            shutil.copyfile(q_stage, d.owner_path("quarantine.csv"))
            noise = session.noise
            with blas_threads_limit(), _progress() as bar:
                fit_task = bar.add_task("GP per window", total=None)
                fit_clock, noise_clock = _WindowClock(), _WindowClock()

                def fit_progress(i: int, n: int) -> None:
                    fit_clock.tick(i, n)
                    bar.update(fit_task, completed=i, total=n)

                def noise_progress(i: int, n: int) -> None:
                    noise_clock.tick(i, n)
                    bar.update(noise_task, completed=i, total=n)

                fitted = fit_for_release(
                    readings,
                    grid,
                    o.sensitivity,
                    o.calibration,
                    o.window_minutes,
                    o.kernel,
                    o.min_readings,
                    progress=fit_progress,
                )
                noise_task = bar.add_task("bounded Laplace (OpenDP)", total=None)
                noise_clock.restart()
                if o.calibration == "paper" and not fitted:
                    raise InputError(f"no window has at least {o.min_readings} readings")
                rel = release_dp_map(
                    readings,
                    grid,
                    o.epsilon,
                    noise,
                    o.sensitivity,
                    o.upper,
                    o.calibration,
                    o.window_minutes,
                    o.kernel,
                    o.min_readings,
                    None,  # the cap (--budget) was checked by the session, on the whole map, before any noise
                    fitted=fitted,
                    progress=noise_progress,
                    windows=windows if o.calibration != "paper" else None,
                )
            privacy = _write(o, d, rel, grid, fitted, rows, not_dp, plan, round_to_precision, pl)
            owner = owner_dir_for(o.out)
            privacy["not_dp_outputs"] = {
                str(owner / name): why for name, why in _OWNER_FILES.items() if (d.owner / name).exists()
            }
            write_privacy_json(d.release, privacy)
            pl.DataFrame(
                {
                    "stage": ["gp_fit"] * len(fit_clock.seconds) + ["noise"] * len(noise_clock.seconds),
                    "seconds": fit_clock.seconds + noise_clock.seconds,
                }
            ).write_csv(d.owner_path("window_timing.csv"))
            session.set_output(o.out)
            # the noise is drawn in bulk (one OpenDP call per core), so only its total time means something
            for line in (fit_clock.summary("GP fits"), noise_clock.summary("noise", per_window=False)):
                session.say(f"urbandp: dp-map timing (owner only): {line}", err=True)
    return privacy


_OWNER_FILES = {
    "quarantine.csv": "raw rejected readings with their reason",
    "input_report.json": "row counts of the raw input",
    "leakage.csv": "per window: true counts of readings and visited cells, leakage before/after noise",
    "leakage_summary.json": "mean leakage measures over windows (computed from the true readings)",
    "dp_sigma2.png": "true sigma_p^2 beside the DP map, with every reading's location (the routes)",
    "rmse_vs_epsilon.csv": "utility experiment: RMSE against the true sigma_p^2 per window",
    "rmse_vs_epsilon.png": "utility experiment: CDF of that RMSE (paper Fig. 6)",
    "window_timing.csv": "seconds per window of the GP fits and the noise (grows with a window's true readings)",
}


def _write(o, d, rel, grid, fitted, rows, not_dp, plan, round_to_precision, pl):
    """Write the release (d.release) and the owner material (d.owner); returns privacy.json's content."""
    from urbandp.reports.outputs import write_json
    from urbandp.sensing.dp_map import rmse_vs_epsilon
    from urbandp.sensing.plots import contour_panels, rmse_cdf

    ids, lat, lon = grid.centroids()
    pl.concat(
        [
            pl.DataFrame(
                {
                    "cell_id": ids,
                    "lat": np.round(lat, 6),
                    "lon": np.round(lon, 6),
                    "window": [str(w.window.astype("datetime64[m]"))] * len(ids),
                    "sigma2_dp": round_to_precision(w.sigma2_dp, o.precision),
                }
            )
            for w in rel.windows
        ]
    ).write_csv(d.release / "dp_grid.csv")
    write_json(d.owner_path("input_report.json"), {"note": "raw-data counts; NOT DP", "rows": rows})
    leak_rows = [
        {
            "window": str(w.window.astype("datetime64[m]")),
            "n_readings": w.n_readings,
            "visited_cells": w.leak_before.visited_cells,
            "spearman_before": w.leak_before.spearman_distance,
            "spearman_after": w.leak_after.spearman_distance,
            "recall_before": w.leak_before.visited_recall,
            "recall_after": w.leak_after.visited_recall,
            "recall_chance": w.leak_before.visited_recall_chance,
        }
        for w in rel.windows
        if w.leak_before is not None and w.leak_after is not None
    ]
    summary: dict[str, Any] = {}
    if leak_rows:
        lk = pl.DataFrame(leak_rows)
        lk.write_csv(d.owner_path("leakage.csv"))
        summary = {c: float(lk[c].drop_nans().mean()) for c in lk.columns if c != "window"}
        write_json(
            d.owner_path("leakage_summary.json"),
            {"note": "computed from the true readings; NOT DP", "leakage_mean": summary},
        )
    with_leak = [w for w in rel.windows if w.leak_before is not None]
    if with_leak:
        w = max(with_leak, key=lambda w: w.n_readings)
        contour_panels(
            grid,
            [
                ("sigma_p^2 (standardised, TRUE)", w.sigma2_std),
                (f"DP sigma_p^2, eps/cell={o.epsilon:g}", w.sigma2_dp),
            ],
            d.owner_path("dp_sigma2.png"),
            f"window {w.window} (owner only: shows the true map and the readings)",
            w.fitted.reading_xy_km if w.fitted is not None else None,
        )
    privacy: dict[str, Any] = dict(rel.privacy)
    if plan is not None:
        privacy.update(plan.to_json())
        privacy["epsilon_budget"] = o.budget
    if not_dp:
        privacy["differentially_private"] = False
    privacy["not_dp_reasons"] = not_dp
    privacy["dp_label"] = (
        "differentially private (per reading, and per vehicle-day)"
        if not not_dp
        else "NOT differentially private"
    )
    if plan is not None:
        privacy["budget_booked"] = {"unit": "vehicle-day", "epsilon_per_day": plan.epsilon_per_vehicle_day}
    privacy["bbox"] = [grid.lat_min, grid.lon_min, grid.lat_max, grid.lon_max]
    privacy["bbox_source"] = "--bbox (public)" if o.bbox else "from the readings: NOT differentially private"
    privacy["windows_source"] = (
        f"public --start {o.start} --end {o.end}"
        if o.start is not None
        else "every window from the first to the last reading (time range from the data: NOT DP)"
    )
    privacy["released_unit"] = "standardised sigma_p^2 (fraction of the window's value variance)"
    privacy["warnings"] = []
    for reason in not_dp:
        _warn(f"NOT differentially private: {reason}")
    if o.utility_epsilons and fitted:
        rows_u = rmse_vs_epsilon(fitted, list(o.utility_epsilons), o.sensitivity, o.upper, o.calibration)
        pl.DataFrame(rows_u).write_csv(d.owner_path("rmse_vs_epsilon.csv"))
        rmse_cdf(
            rows_u,
            d.owner_path("rmse_vs_epsilon.png"),
            f"RMSE of DP sigma_p^2 over {len(fitted)} windows ({o.calibration})",
        )
    return privacy
