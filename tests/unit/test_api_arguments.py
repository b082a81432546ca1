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
