"""pm-map's loss per reading under the vehicle-window unit: the truncation to M readings is stable under removing
one reading (at most two kept readings change), so a reading costs 2 epsilon / M, and privacy.json says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from urbandp.sensing._grid import SquareGrid
from urbandp.sensing._pm_map_mechanism import cell_aggregates, plan_pm_map, truncate_vehicle_windows
from urbandp.sensing._readings import Readings

BBOX = (22.50, 88.30, 22.60, 88.40)  # 11 km square: 100 cells of 1.1 km
WINDOW = np.array([np.datetime64("2024-01-15T08:00")])


def _unit(n: int) -> tuple[Readings, np.ndarray]:
    """One vehicle-window of ``n`` readings a minute apart, each in its own cell, at the extremes of [0, C]
    (so every swap moves the centred sum by the most), plus 3 readings of another vehicle."""
    grid_step = 0.1 / 10
    lat = np.array([22.5 + grid_step * (i % 10 + 0.5) for i in range(n + 3)])
    lon = np.array([88.3 + grid_step * (i // 10 + 0.5) for i in range(n + 3)])
    t = (np.datetime64("2024-01-15T08:00") + np.arange(n + 3).astype("timedelta64[m]")).astype(
        "datetime64[us]"
    )
    value = np.where(np.arange(n + 3) % 2 == 0, 0.0, 250.0)
    vehicle = np.array(["a"] * n + ["b"] * 3)
    return Readings(lat, lon, t, value, vehicle), vehicle


def _without(r: Readings, i: int) -> Readings:
    mask = np.ones(len(r), dtype=bool)
    mask[i] = False
    return r.subset(mask)


@pytest.mark.parametrize("m", [1, 2, 3, 5])
def test_removing_one_reading_changes_at_most_two_kept_readings(m: int) -> None:
    """For each n from M to 20 and each reading removed: the symmetric difference of the kept readings is at most
    2 (it is 2 where the removed reading was kept and the unit holds more than M), and the window's count vector
    moves by at most 2 and its centred-sum vector by at most C = 250 in L1 norm. A selection by evenly spaced
    ranks reaches 2M and M x 250 here."""
    grid = SquareGrid(*BBOX, 1100.0)
    worst_sym, worst_count, worst_sum = 0, 0.0, 0.0
    for n in range(m, 21):
        r, vehicle = _unit(n)
        w = np.zeros(len(r), dtype=np.int64)
        keep = truncate_vehicle_windows(vehicle, w, r.time, m)
        assert int(keep[:n].sum()) == min(n, m) and int(keep[n:].sum()) == min(3, m)
        full = cell_aggregates(r, grid, WINDOW, 60, 250.0, vehicle, m)
        for i in range(n):
            rest = np.delete(np.arange(len(r)), i)
            kept_after = rest[truncate_vehicle_windows(vehicle[rest], w[rest], r.time[rest], m)]
            sym = len(set(np.flatnonzero(keep).tolist()) ^ set(kept_after.tolist()))
            neighbour = _without(r, i)
            agg = cell_aggregates(neighbour, grid, WINDOW, 60, 250.0, neighbour.vehicle, m)
            worst_sym = max(worst_sym, sym)
            worst_count = max(worst_count, float(np.abs(full.counts - agg.counts).sum()))
            worst_sum = max(worst_sum, float(np.abs(full.centred_sums - agg.centred_sums).sum()))
    assert (worst_sym, worst_count, worst_sum) == (2, 2.0, 250.0)


def test_the_kept_readings_do_not_depend_on_input_order_values_or_places() -> None:
    r, vehicle = _unit(12)
    w = np.zeros(len(r), dtype=np.int64)
    keep = truncate_vehicle_windows(vehicle, w, r.time, 3)
    perm = np.random.default_rng(1).permutation(len(r))
    again = np.empty(len(r), dtype=bool)
    again[perm] = truncate_vehicle_windows(vehicle[perm], w[perm], r.time[perm], 3)
    assert (again == keep).all()
    # the kept readings are spread over the window, not its first M minutes: this seed keeps minutes 0, 7 and 9
    assert np.flatnonzero(keep[:12]).tolist() == [0, 7, 9]
    # a second vehicle at the same minutes keeps other minutes (its id is in the key)
    other = np.array(["c"] * 15)
    assert np.flatnonzero(truncate_vehicle_windows(other, w, r.time, 3)[:12]).tolist() != [0, 7, 9]


@pytest.mark.parametrize(("m", "per_reading"), [(1, 8.0), (2, 4.0), (3, 8.0 / 3.0), (5, 1.6)])
def test_loss_per_reading_is_two_epsilon_over_m(m: int, per_reading: float) -> None:
    """epsilon 4 per vehicle-window: count at L1 distance 2 and centred sum at 250 through OpenDP's maps."""
    plan = plan_pm_map(4.0, 250.0, m, "vehicle-window")
    assert plan.loss_per_reading().epsilon == pytest.approx(per_reading, rel=1e-9)
    assert plan.loss_per_reading().delta == 0.0
    assert plan_pm_map(4.0).loss_per_reading().epsilon == plan_pm_map(4.0).loss_per_unit().epsilon


def test_privacy_json_states_the_loss_per_reading() -> None:
    import urbandp as ud

    r, vehicle = _unit(12)
    df = pl.DataFrame(
        {
            "lat": r.lat,
            "lon": r.lon,
            "time": np.datetime_as_string(r.time, unit="s"),
            "pm25": r.value,
            "vehicle": vehicle,
        }
    )
    box = BBOX
    kw = {"bbox": box, "start": "2024-01-15T08:00", "end": "2024-01-15T09:00", "epsilon": 4.0}
    kw |= {"cell_metres": 1100.0, "smoother": "none"}
    for m, per_reading in ((1, 8.0), (3, 8.0 / 3.0)):
        rel = ud.sensing.pm_map(df, max_readings_per_vehicle_window=m, **kw)  # type: ignore[arg-type]
        doc = rel.privacy.model_dump()
        assert doc["privacy_unit"] == "one vehicle-window" and doc["epsilon_per_unit"] == pytest.approx(4.0)
        assert doc["epsilon_per_reading"] == pytest.approx(per_reading, rel=1e-9)
        assert f"2 x 4 / {m}" in doc["epsilon_per_reading_note"]
    rel = ud.sensing.pm_map(df.drop("vehicle"), **kw)  # type: ignore[arg-type]
    assert rel.privacy.model_dump()["epsilon_per_reading"] == pytest.approx(4.0)


def test_the_command_states_the_loss_per_reading(tmp_path: Path) -> None:
    """The command's summary line names the reading's loss beside the vehicle-window's and the vehicle-day's."""
    from typer.testing import CliRunner

    from urbandp.cli import app

    r, vehicle = _unit(12)
    csv = tmp_path / "readings.csv"
    pl.DataFrame(
        {
            "lat": r.lat,
            "lon": r.lon,
            "time": np.datetime_as_string(r.time, unit="s"),
            "pm25": r.value,
            "vehicle": vehicle,
        }
    ).write_csv(csv)
    box = ",".join(str(x) for x in BBOX)
    res = CliRunner().invoke(
        app,
        ["sensing", "pm-map", str(csv), "--bbox", box, "--start", "2024-01-15T08:00", "--end", "2024-01-15T09:00",
         "--epsilon", "4", "--cell-metres", "1100", "--smoother", "none", "--out", str(tmp_path / "map")],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (
        "epsilon 4 per vehicle-window (at most 3 readings, 2.667 per reading; 4 per vehicle-day)"
        in res.stdout
    )
