"""SSD trajectory perturbation (report section 6.1, eq. 16; Jiang et al. 2013): the body behind
:func:`urbandp.survey.perturb_trajectories`. NOT DP as a whole (start and end points exact): refused with a
dataset, nothing reserved."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import urbandp.survey._published as release
import urbandp.survey._shared_options as shared
import urbandp.survey._ssd as ssd
from urbandp._figures import saved_figure
from urbandp._geodesy import LocalProjection
from urbandp._release_options import ReleaseOptions, option
from urbandp._table_reader import read_table
from urbandp.errors import InputError
from urbandp.survey._charge import SurveyCharge
from urbandp.survey._io import require_columns
from urbandp.survey._locations import ROUND_DEGREES
from urbandp.survey._od_release import check_person
from urbandp.survey._report import TrajectoriesPrivacyReport, ledger
from urbandp.survey._result import SurveyRelease
from urbandp.survey._trips import keep_per_person

NOT_DP = [
    "perturb-trajectories publishes every trip's start and end point unchanged",
    "the reachability loop depends on the true end point (leakage not accounted)",
    "a trip with a step longer than max_step_metres or fewer than 3 points is quarantined (owner only), "
    "not released: its absence depends on its true points",
]
Plot = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class TrajectoriesSpec(ReleaseOptions):
    """The options of ``survey perturb-trajectories`` (:mod:`urbandp._release_options`)."""

    lat: str = option(help="Latitude column.")
    lon: str = option(help="Longitude column.")
    trip: str = option(help="Trip (trajectory) id column.")
    epsilon: float = option(help="SSD parameter epsilon (per step, report eq. 16).", gt=0)
    max_step_metres: float = option(help="Declared maximum step M (metres).", gt=0)
    order: str | None = option(None, help="Column giving the point order, e.g. time (default: file order).")
    every: int = option(1, help="Keep every k-th point of each trip (fewer steps, less epsilon).", ge=1)
    max_trips: int | None = option(None, help="Process only the first K trips (default: all).", ge=1)
    person: str | None = option(
        None,
        help="Person id column: with --max-trips-per-person each person keeps at most that many trips "
        "(default: none; the loss per person is unbounded).",
    )
    max_trips_per_person: int | None = shared.max_trips_per_person("a person loses at most K trips' worth")
    separator: str = shared.separator()
    budget_epsilon: float | None = option(None, help="Refuse trips costing more (default: no cap).", gt=0)
    keep_columns: str | None = shared.keep_columns()
    command: str = "urbandp.survey.perturb_trajectories (Python)"

    def model_post_init(self, context: Any, /) -> None:
        check_person(self.person, self.max_trips_per_person)


@dataclass
class _Perturbed:
    pieces: list[pl.DataFrame] = field(default_factory=list)
    plots: list[Plot] = field(default_factory=list)
    skipped: list[pl.DataFrame] = field(default_factory=list)
    worst: float = 0.0


def _ordered(frame: pl.DataFrame, spec: TrajectoriesSpec) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The rows with readable coordinates (``__lat``, ``__lon``) in trip order, and the others."""
    f = frame.with_row_index("row", offset=1).with_columns(
        pl.col(spec.lat).cast(pl.Float64, strict=False).alias("__lat"),
        pl.col(spec.lon).cast(pl.Float64, strict=False).alias("__lon"),
    )
    badmask = f.get_column("__lat").is_null() | f.get_column("__lon").is_null()
    bad, f = f.filter(badmask), f.filter(~badmask)
    if spec.order:
        numeric = f.get_column(spec.order).cast(pl.Float64, strict=False)
        key = numeric if numeric.null_count() == 0 else f.get_column(spec.order).cast(pl.String)
        f = (
            f.with_columns(key.alias("__order"))
            .sort(spec.trip, "__order", maintain_order=True)
            .drop("__order")
        )
    return f, bad


def _perturb_all(f: pl.DataFrame, spec: TrajectoriesSpec, public: dict[str, str]) -> _Perturbed:
    """SSD on every usable trip; a trip with too few points or a too-long step is quarantined."""
    done = _Perturbed()
    trips = f.get_column(spec.trip).unique(maintain_order=True).to_list()
    for tid in trips if spec.max_trips is None else trips[: spec.max_trips]:
        whole = f.filter(pl.col(spec.trip) == tid)
        t = whole.gather_every(spec.every)
        la, lo = t.get_column("__lat").to_numpy(), t.get_column("__lon").to_numpy()
        plane = LocalProjection(float(la[0]), float(lo[0]))  # metres east and north of the trip's start
        xy = plane.to_metres(la, lo)
        steps = np.hypot(*np.diff(xy, axis=0).T)
        why = (
            "too_few_points"
            if len(la) < 3
            else "step_exceeds_max_step"
            if steps.max() > spec.max_step_metres
            else ""
        )
        if why:
            done.skipped.append(whole.drop("__lat", "__lon").with_columns(pl.lit(why).alias("reason")))
            continue
        pert = ssd.perturb_trip(xy, spec.epsilon, spec.max_step_metres)
        nla, nlo = np.round(plane.to_degrees(pert), ROUND_DEGREES)
        done.worst = max(done.worst, ssd.ssd_epsilon(spec.epsilon, max(len(la) - 2, 0))["per_trip"])
        moved = t.drop("row", "__lat", "__lon").with_columns(
            pl.Series(spec.lat, nla), pl.Series(spec.lon, nlo)
        )
        done.pieces.append(release.select_released(moved, public, [spec.lat, spec.lon]))
        done.plots.append((la, lo, nla, nlo))
    return done


def trajectories_body(spec: TrajectoriesSpec, path: Path, label: str, charge: SurveyCharge) -> SurveyRelease:
    """Check, refuse a dataset (NOT DP), read, perturb and describe one ``survey perturb-trajectories`` release."""
    ssd.check_work(spec.epsilon)  # the work bound, from epsilon alone, before the data is read
    for reason in NOT_DP:  # with a dataset the first one refuses the run
        charge.refuse_not_dp(reason)
    frame = read_table(path, spec.separator)
    extra = [c for c in (spec.order, spec.person) if c]
    require_columns(frame, Path(label), spec.lat, spec.lon, spec.trip, *extra)
    needed = {"trip": spec.trip}
    public = release.public_columns(
        frame, Path(label), spec.keep_columns, None, needed, [spec.lat, spec.lon], options=("keep_columns",)
    )
    f, bad = _ordered(frame, spec)
    over = f.clear()
    if spec.person is not None and spec.max_trips_per_person is not None:
        keep = pl.Series(keep_per_person(f, spec.person, [spec.trip], spec.max_trips_per_person))
        over = (
            f.filter(~keep)
            .drop("__lat", "__lon")
            .with_columns(pl.lit("over_max_trips_per_person").alias("reason"))
        )
        f = f.filter(keep)
    done = _perturb_all(f, spec, public)
    if not done.pieces:
        raise InputError(
            f"no trajectory of {label} is usable: each needs >= 3 points and every step <= max_step_metres",
            parameters="max_step_metres",  # not "every": here it is a word, not the parameter
        )
    per_point = ssd.ssd_epsilon(spec.epsilon, 1)["per_point"]
    released = pl.concat(done.pieces, how="vertical_relaxed")
    bad_rows = bad.drop("__lat", "__lon").with_columns(pl.lit("bad_coordinate").alias("reason"))
    counts = {
        "trips_perturbed": len(done.pieces),
        "trips_quarantined": len(done.skipped),
        "points_released": released.height,
        "rows_with_bad_coordinate": bad.height,
        "rows_over_max_trips_per_person_or_without_person": over.height,
        "epsilon_per_trip_max_data_dependent": done.worst,
    }
    plot = functools.partial(plot_trajectories, done.plots, epsilon=spec.epsilon, m=spec.max_step_metres)
    return SurveyRelease(
        tables={"trajectories": released},
        privacy=_trajectories_report(spec, per_point, public),
        owner={
            "original_vs_perturbed.png": plot,
            "quarantine.csv": pl.concat([*done.skipped, bad_rows, over], how="diagonal_relaxed"),
            "input_report.json": release.input_report(counts),
        },
        file_name="trajectories.csv",
        summary=f"quarantined {len(done.skipped)} trips; perturbed {len(done.pieces)} trips, {released.height:,} "
        f"points (epsilon per point {per_point:.4g}, largest trip {done.worst:.4g})",
    )


def _trajectories_report(
    spec: TrajectoriesSpec, per_point: float, public: dict[str, str]
) -> TrajectoriesPrivacyReport:
    """The typed privacy report: the SSD parameter and its cost per interior point (public)."""
    name = "perturb-trajectories (per interior point)"
    k = spec.max_trips_per_person
    return TrajectoriesPrivacyReport(
        command=spec.command,
        unit="trip" if k is None else "person",
        neighbouring="replace-one (one trip)"
        if k is None
        else "replace one person's trips (at most max_trips_per_person of them are released)",
        max_trips_per_person=k,
        person_column=spec.person,
        epsilon_per_person=f"at most {k} x epsilon_per_trip (basic composition over the trips kept per person)"
        if k is not None
        else "unbounded: no max_trips_per_person (a person with n trips loses n trips' worth)",
        mechanism="SSD (Jiang et al. 2013) as in report section 6.1 eq. 16",
        ssd_parameter_epsilon=spec.epsilon,
        max_step_metres=spec.max_step_metres,
        epsilon_per_point=per_point,
        epsilon_per_trip="epsilon_per_point x the trip's interior points (a trip of n + 2 released points costs "
        "n x epsilon_per_point)",
        every=spec.every,
        public_columns=release.declaration(public),
        ledger=ledger(spec.budget_epsilon, name, per_point, "trip", "SSD"),
        not_dp_reasons=NOT_DP,
        differentially_private=False,
    )


def plot_trajectories(plots: list[Plot], path: Path, *, epsilon: float, m: float) -> None:
    """Owner only: the first six true trips and their perturbed versions."""
    from urbandp._geodesy import degree_aspect

    shown = plots[:6]
    cols = min(3, len(shown))
    rows = (len(shown) + cols - 1) // cols
    size = (4.6 * cols, 4.2 * rows)
    with saved_figure(path, rows, cols, figsize=size, squeeze=False) as (fig, axes):
        for ax in axes.ravel()[len(shown) :]:
            ax.axis("off")
        for k, (ax, (la, lo, nla, nlo)) in enumerate(zip(axes.ravel(), shown, strict=False)):
            ax.plot(lo, la, "-", color="black", lw=1.4, label="original")
            ax.plot(nlo, nla, "-", color="tab:red", lw=0.9, alpha=0.85, label="SSD perturbed")
            ax.plot([lo[0], lo[-1]], [la[0], la[-1]], "o", color="tab:blue", ms=5, label="start/end (exact)")
            ax.set_title(f"trip {k + 1}: {len(la)} points", fontsize=9)
            ax.tick_params(labelsize=7)
            ax.set_aspect(degree_aspect(float(np.mean(la)), float(np.mean(lo))))
            if k == 0:
                ax.legend(fontsize=7)
        fig.suptitle(
            f"SSD (report eq. 16), epsilon={epsilon:g}, M={m:g} m. Owner only: shows the true trips.",
            fontsize=10,
        )
