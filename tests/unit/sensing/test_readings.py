"""Reading the Kolkata format and quarantining bad rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from urbandp.errors import InputError
from urbandp.sensing._readings import read_readings, window_starts


def test_kolkata_format_and_quarantine(tmp_path: Path) -> None:
    src = tmp_path / "m.csv"
    src.write_text(
        "lat,long,time,pm\n"
        "22.46,88.31,9/15/2023 5:00,13.3\n"
        "22.46,88.31,9/15/2023 12:00,19.6\n"
        "abc,88.31,9/15/2023 13:00,1\n"
        "22.46,88.31,15/9/2023 13:00,1\n"
        "22.46,88.31,9/15/2023 13:00,\n"
        "95,88.31,9/15/2023 13:00,3\n"
        "22.46,88.31,2023-09-15T14:30:00+05:30,20.0\n"
    )
    q = tmp_path / "q.csv"
    r, rep = read_readings(src, quarantine_path=q)
    assert (rep.rows_read, rep.rows_kept, rep.rows_quarantined) == (7, 3, 4)
    assert rep.reasons == {
        "latitude not a number": 1,
        "latitude outside [-90, 90]": 1,
        "time not parseable": 1,
        "value not a finite number": 1,
    }
    assert r.time[0] == np.datetime64("2023-09-15T05:00")
    assert r.time[2] == np.datetime64("2023-09-15T09:00")  # +05:30 converted to UTC
    lines = q.read_text().splitlines()
    assert lines[0] == "line,lat,long,time,pm,reason" and len(lines) == 5
    assert lines[1].startswith("4,abc,")  # file line numbers (header is line 1)


def test_bbox_quarantines_outside(tmp_path: Path) -> None:
    src = tmp_path / "m.csv"
    src.write_text("lat,lon,time,value\n22.5,88.3,2023-01-01 10:00,1\n23.5,88.3,2023-01-01 10:00,1\n")
    r, rep = read_readings(src, bbox=(22.0, 88.0, 23.0, 89.0))
    assert len(r) == 1 and rep.reasons == {"outside the bounding box": 1}


def test_unusable_inputs(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        read_readings(tmp_path / "nope.csv")
    src = tmp_path / "a.csv"
    src.write_text("lat,lon,value\n1,2,3\n")
    with pytest.raises(InputError, match="no time column"):
        read_readings(src)
    src.write_text("lat,lon,time,value\n")
    with pytest.raises(InputError):
        read_readings(src)
    src.write_text("lat,lon,time,value\nx,y,z,w\n")
    with pytest.raises(InputError, match="no usable rows"):
        read_readings(src)


def test_window_starts() -> None:
    t = np.array(["2023-09-15T05:59", "2023-09-15T06:00", "2023-09-15T06:31"], dtype="datetime64[us]")
    assert window_starts(t, 60).astype(str).tolist() == [
        "2023-09-15T05:00",
        "2023-09-15T06:00",
        "2023-09-15T06:00",
    ]
    assert window_starts(t, 30).astype(str).tolist()[2] == "2023-09-15T06:30"
