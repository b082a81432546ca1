"""Plan a `sensing pm-map` release before any reading is read: for each window length and cell size, how many
readings a cell gets and whether its DP mean carries more signal than noise: arithmetic on public figures (or a
paid DP histogram), never on the readings (docs/sensing.md, "Plan before the release", with the Kolkata check).

Model, per candidate (window ``W`` days, cell side ``z``): the grid over the box has ``G(z)`` cells, the fleet
visits ``share x G`` of them, so a visited cell holds ``n = R W / (share G)`` readings. The release
(:mod:`urbandp.sensing._pm_map_mechanism`, unit one reading) adds Laplace noise of scales ``2/epsilon`` to the
count and ``C/epsilon`` to the centred sum; the first-order noise variance of the cell mean
``C/2 + S~/N~`` is ``(var_S + (m - C/2)^2 var_N) / n^2`` (:func:`~urbandp.sensing._pm_map_mechanism.mean_noise_var`),
and the readings themselves add ``s^2 / n`` (``s`` the spread of readings within a cell). A cell is
**informative** when that total is at most ``tau^2`` (``tau`` the spread of the true cell means): the smoother
then fits on it (:func:`~urbandp.sensing._pm_map_mechanism.smooth_cells` uses the same rule), and its shrunk mean
keeps at least half of its own deviation. The plan is the shortest window, then the finest cells, at which a
visited cell is informative and its count clears its noise (``n >= 2 sd``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from urbandp.errors import Advice
from urbandp.sensing._grid import SquareGrid
from urbandp.sensing._options import NAMED_WINDOWS, PlanOptions
from urbandp.sensing._pm_map_mechanism import plan_pm_map


@dataclass(frozen=True)
class PlanRow:
    """One candidate: window (days), cell side, the readings a visited cell holds and the noise of its mean."""

    window_days: float
    cell_metres: float
    cells: int
    cells_visited: float
    readings_per_cell: float
    privacy_noise_sd: float
    sampling_sd: float
    informative: bool

    @property
    def total_sd(self) -> float:
        return math.hypot(self.privacy_noise_sd, self.sampling_sd)


def plan_sensing(o: PlanOptions) -> tuple[list[PlanRow], PlanRow | None]:
    """Every candidate (window, cell size) and the plan: the shortest informative window, then the finest cells
    (None when none is). ``o.level``: the typical PM2.5 (it enters the count noise's share of the mean's)."""
    plan = plan_pm_map(o.epsilon, o.clip)
    var_s, var_n = plan.total.std**2, plan.count.std**2
    rows: list[PlanRow] = []
    for days in sorted(o.windows):
        for z in sorted(o.cell_metres):
            g = SquareGrid(*o.bbox, z).n_cells
            visited = max(1.0, o.share_visited * g)
            n = o.readings_per_day * days / visited
            privacy_var = (var_s + (o.level - o.clip / 2.0) ** 2 * var_n) / max(n, 1e-9) ** 2
            sampling_var = o.spread_within**2 / max(n, 1e-9)
            clear = n >= max(1.0, 2.0 * plan.count.std)
            informative = clear and privacy_var + sampling_var <= o.spread_between**2
            rows.append(
                PlanRow(days, z, g, visited, n, math.sqrt(privacy_var), math.sqrt(sampling_var), informative)
            )
    best = next((r for r in rows if r.informative), None)
    return rows, best


def describe_window(days: float) -> str:
    """``1 hour``, ``1 day``, ``7 days``: the window as the table prints it."""
    if days < 1:
        return f"{days * 24:g} hour" + ("s" if days * 24 != 1 else "")
    return f"{days:g} day" + ("s" if days != 1 else "")


def window_option(days: float) -> str:
    """The pm-map option for a window of ``days``: ``window="hour|day|week"`` or ``window_minutes=<minutes>``."""
    for name, minutes in NAMED_WINDOWS.items():
        if math.isclose(days, minutes / 1440):
            return f'window="{name}"'
    return f"window_minutes={round(days * 1440)}"


def plan_text(rows: list[PlanRow], best: PlanRow | None, epsilon: float) -> Advice:
    """The table `urbandp sensing plan` prints, and its recommendation in pm-map's parameters (an
    :class:`~urbandp.errors.Advice`: the command line shows them as flags)."""
    lines = [
        f"{'window':>10} {'cell m':>7} {'cells':>7} {'readings/cell':>14} {'DP noise sd':>12} "
        f"{'sampling sd':>12}  informative"
    ]
    for r in rows:
        lines.append(
            f"{describe_window(r.window_days):>10} {r.cell_metres:>7g} {r.cells:>7} {r.readings_per_cell:>14.1f} "
            f"{r.privacy_noise_sd:>12.3g} {r.sampling_sd:>12.3g}  {'yes' if r.informative else 'no'}"
        )
    if best is None:
        lines.append(
            f"plan: no candidate is informative at epsilon {epsilon:g} per reading; try longer windows, larger "
            "cells or a larger epsilon"
        )
    else:
        lines.append(
            f"plan: {window_option(best.window_days)} cell_metres={best.cell_metres:g} (the shortest informative "
            f"window, then the finest cells): about {best.readings_per_cell:.0f} readings per visited cell, noise "
            f"sd {best.total_sd:.3g} ug/m3 of its mean"
        )
    return Advice("\n".join(lines), parameters=("window", "window_minutes", "cell_metres"))
