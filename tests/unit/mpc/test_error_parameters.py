""":meth:`Client.query` errors name the parameter as Python calls it and list it in ``parameters``; ``urbandp
mpc query`` renames them to its flags, giving the text it always printed (issue 31). The checks run before the
client talks to a server, so they need no SPU and no connection."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from urbandp._cli_support import _cli_names
from urbandp.errors import InvalidParameterError
from urbandp.mpc import _cli as cli
from urbandp.mpc._client import Client

RECT = (22.50, 88.32, 22.56, 88.37)


@pytest.mark.parametrize(
    ("function", "kwargs", "message", "parameters", "cli_text"),
    [
        (
            "median",
            {"cells": [1]},
            "function must be one of average, min, max, min-exact, max-exact, count, range, got 'median'",
            ("function",),
            "--function must be one of average, min, max, min-exact, max-exact, count, range, got 'median'",
        ),
        ("count", {"cells": [1]}, "count needs theta", ("theta",), "count needs --theta"),
        (
            "range",
            {"cells": [1], "theta": 5.0, "theta2": 1.0},
            "range needs theta T1,T2 with T1 < T2",
            ("theta",),
            "range needs --theta T1,T2 with T1 < T2",
        ),
        (
            "average",
            {"cells": [1], "route": np.zeros((1, 2))},
            "give exactly one of cells and route",
            ("cells", "route"),
            "give exactly one of --cells and --route",
        ),
    ],
)
def test_query_errors_name_the_parameter(
    function: str, kwargs: dict[str, Any], message: str, parameters: tuple[str, ...], cli_text: str
) -> None:
    client = Client.__new__(Client)  # not connected: the checks come first
    with pytest.raises(InvalidParameterError) as caught:
        client.query(function, RECT, **kwargs)
    assert str(caught.value) == message and "--" not in message
    assert caught.value.parameters == parameters
    assert caught.value.naming(_cli_names(cli.query)) == cli_text
