"""Windows begin at the public start (not at multiples of the window length since 1970), and `window` names a
length: the whole start..end period in one window, a day, a week, or N minutes."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import urbandp as ud
from urbandp.errors import InputError
from urbandp.sensing._options import window_length
from urbandp.sensing._readings import window_starts

BBOX = (22.50, 88.30, 22.52, 88.32)


def _csv(tmp_path: Path) -> Path:
    """Readings on 1 Dec, 15 Jan and 31 Jan (one cell); the period 1 Dec - 31 Jan is 62 days (89,280 minutes)."""
    path = tmp_path / "r.csv"
    path.write_text(
        "lat,lon,time,pm\n"
        "22.505,88.305,2023-12-01T10:00,40\n"
        "22.505,88.305,2024-01-15T10:00,60\n"
        "22.505,88.305,2024-01-31T23:00,80\n"
    )
    return path


def _windows(path: Path, **kw: object) -> tuple[list[str], int]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = ud.sensing.pm_map(
            path, bbox=BBOX, start="2023-12-01", end="2024-01-31", epsilon=4, smoother="none", **kw
        )
    cells = rel.tables["pm_cells"]
    labels = sorted(set(cells["window"].to_list()))
    return labels, int(rel.privacy.windows["minutes"])  # type: ignore[attr-defined]


def test_window_starts_count_from_the_origin() -> None:
    t = np.array(["2023-12-01T00:00", "2024-01-31T23:59"], dtype="datetime64[us]")
    origin = np.datetime64("2023-12-01T00:00", "m")
    assert window_starts(t, 89280, origin).astype(str).tolist() == ["2023-12-01T00:00"] * 2
    # from the epoch the same 62-day window splits the period and begins before it
    assert window_starts(t, 89280).astype(str).tolist() == ["2023-10-24T00:00", "2023-12-25T00:00"]


def test_pm_map_windows_start_at_start(tmp_path: Path) -> None:
    path = _csv(tmp_path)
    assert _windows(path, window_minutes=89280) == (["2023-12-01T00:00"], 89280)
    assert _windows(path, window="season") == (["2023-12-01T00:00"], 62 * 1440)
    assert _windows(path, window="whole") == (["2023-12-01T00:00"], 62 * 1440)
    labels, minutes = _windows(path, window="week")
    assert minutes == 10080 and labels[:2] == ["2023-12-01T00:00", "2023-12-08T00:00"] and len(labels) == 9
    assert _windows(path, window="44640")[0] == ["2023-12-01T00:00", "2024-01-01T00:00"]


def test_window_names_and_refusals() -> None:
    assert window_length("day", "2024-01-01", "2024-01-02") == 1440
    assert window_length(" Season ", "2024-01-01T06:00", "2024-01-01T08:30") == 150
    for bad in ("fortnight", "0", "-5", "1.5"):
        with pytest.raises(InputError, match=r"^window must be"):
            window_length(bad, "2024-01-01", "2024-01-02")


def test_window_and_window_minutes_conflict(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="window or window_minutes"):
        _windows(_csv(tmp_path), window="day", window_minutes=30)


def test_dp_map_windows_start_at_start_and_hold_their_readings(tmp_path: Path) -> None:
    import io

    import polars as pl

    from urbandp.sensing._synth import write_synth_readings

    path = write_synth_readings(tmp_path / "s.csv", 600, 4, 3, 3)
    times = pl.read_csv(path)["time"].str.to_datetime().to_numpy().astype("datetime64[m]")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = ud.sensing.dp_map(
            path, bbox=(22.49, 88.32, 22.60, 88.44), start="2024-01-15T08:30", end="2024-01-15T10:30",
            epsilon=0.3, cell_metres=1000, utility_epsilons=(),
        )  # fmt: skip
    assert sorted(set(m.table["window"].to_list())) == ["2024-01-15T08:30", "2024-01-15T09:30"]
    leak = pl.read_csv(io.BytesIO(m.owner["files"]["leakage.csv"]))  # type: ignore[index]
    for w, n in zip(leak["window"], leak["n_readings"], strict=True):
        start = np.datetime64(w, "m")
        assert n == int(((times >= start) & (times < start + np.timedelta64(60, "m"))).sum()) > 0
