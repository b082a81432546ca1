"""The Python API's plain arguments: a value that is not what the parameter takes is refused naming it, and a
string is never read as a switch (``with_map="no"`` meant yes, ``allow_meaningless_epsilon="no"`` let an
epsilon-500 release out labelled NOT DP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import urbandp as ud

TINY = pl.DataFrame({"vehicle_id": ["a"], "timestamp": ["2021-11-15 10:00:00"], "speed": [20.0],
                     "latitude": [21.17], "longitude": [72.83]})  # fmt: skip
WINDOW = {"start": "2021-11-15", "end": "2021-11-15", "epsilon_per_day": 4}


@pytest.mark.parametrize(
    ("keywords", "parameter"),
    [
        ({"allow_meaningless_epsilon": "no"}, "allow_meaningless_epsilon"),
        ({"allow_meaningless_epsilon": 1}, "allow_meaningless_epsilon"),
        ({"noise": "random"}, "noise"),
        ({"store": ["a.sqlite"], "dataset": "x"}, "store"),
        ({"store": 123}, "store"),
        ({"dataset": 123}, "dataset"),
        ({"dataset": " "}, "dataset"),
        ({"operator": 5}, "operator"),
    ],
)
def test_the_session_refuses_a_bad_argument_naming_it(keywords: dict[str, Any], parameter: str) -> None:
    with pytest.raises(ud.InvalidParameterError) as err:
        ud.Session(**keywords)
    assert err.value.parameters == (parameter,)


def test_the_session_takes_a_numpy_bool_and_a_path(tmp_path: Path) -> None:
    s = ud.Session(tmp_path / "b.sqlite", "d", allow_meaningless_epsilon=np.bool_(True))
    assert s.allow_meaningless_epsilon is True and s.store == str(tmp_path / "b.sqlite")


@pytest.mark.parametrize(
    ("keywords", "parameter"),
    [
        ({"with_map": "no"}, "with_map"),
        ({"overwrite": "no"}, "overwrite"),
        ({"columns": ["speed"]}, "columns"),
        ({"columns": {"speed": 3}}, "columns"),
        ({"session": "s"}, "session"),
        ({"epsilon": 4}, "epsilon"),
    ],
)
def test_the_fleet_release_refuses_a_bad_argument_naming_it(keywords: dict[str, Any], parameter: str) -> None:
    with pytest.raises(ud.InvalidParameterError) as err:
        ud.fleet.release(TINY, **{**WINDOW, **keywords})
    assert err.value.parameters == (parameter,)


def test_a_number_is_a_finite_real_never_a_string_a_bool_or_an_overflow() -> None:
    from urbandp._arguments import check_number

    assert check_number(np.float32(0.5), "p") == 0.5 and check_number(np.int64(4), "k", integer=True) == 4
    assert check_number(2.0, "k", integer=True) == 2
    for value, text in [
        ("4", "p must be a number, got '4'"),
        (True, "p must be a number, got True"),
        (float("nan"), "p must be a finite number >= 0, got nan"),
        (10**400, "p must be a finite number >= 0, got an integer of 401 digits"),
        (-1, "p must be a finite number >= 0, got -1"),
    ]:
        with pytest.raises(ud.InvalidParameterError) as err:
            check_number(value, "p", minimum=0)
        assert (str(err.value), err.value.parameters) == (text, ("p",))
    with pytest.raises(ud.InvalidParameterError, match=r"^k must be an integer, got 2.5$"):
        check_number(2.5, "k", integer=True)


def test_a_day_is_a_date_a_midnight_datetime_or_iso_text() -> None:
    import datetime as dt

    from urbandp._arguments import check_date

    day = dt.date(2024, 1, 15)
    assert (
        check_date(day, "d")
        == check_date(dt.datetime(2024, 1, 15), "d")
        == check_date("2024-01-15", "d")
        == day
    )
    for value in (dt.datetime(2024, 1, 15, 10, 30), "2024-13-45", "20240115", "2024-W03-1", 20240115):
        with pytest.raises(ud.InvalidParameterError) as err:
            check_date(value, "d")
        assert err.value.parameters == ("d",)


def test_an_unknown_keyword_is_refused_naming_it_with_the_closest() -> None:
    with pytest.raises(ud.InvalidParameterError) as err:
        ud.budget.remaining("b.sqlite", "d", datset="x")  # type: ignore[call-arg]
    assert str(err.value) == "remaining() has no option datset (did you mean dataset?)"
    assert err.value.parameters == ("datset",)
    with pytest.raises(
        ud.InvalidParameterError, match=r"^Session\(\) has no option stor \(did you mean store\?\)$"
    ):
        ud.Session(stor="b.sqlite")  # type: ignore[call-arg]


def test_writing_a_release_takes_switches_only(tmp_path: Path) -> None:
    rel = ud.fleet.release(TINY, **WINDOW)
    for keywords, parameter in (({"overwrite": "no"}, "overwrite"), ({"with_map": "no"}, "with_map")):
        with pytest.raises(ud.InvalidParameterError) as err:
            rel.write(tmp_path / "rel", **keywords)
        assert err.value.parameters == (parameter,)
    assert not (tmp_path / "rel").exists()
    means = pl.DataFrame({"u": ["a", "b"], "v": [1.0, 2.0]})
    mean = ud.estimators.release(means, unit_column="u", value_column="v", epsilon=1, upper=10)
    with pytest.raises(ud.InvalidParameterError) as err:
        mean.write(tmp_path / "mean", overwrite="no")
    assert err.value.parameters == ("overwrite",) and not (tmp_path / "mean").exists()
