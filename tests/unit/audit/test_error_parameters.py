"""The auditor's errors name the parameter as Python calls it and list it in ``parameters``; the command's
flags replace them on the command line, giving the text the CLI always printed (issue 31)."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
import pytest

import urbandp as ud
from urbandp._cli_support import _cli_names
from urbandp.audit import _cli as cli
from urbandp.audit._tables import published_table_from_frame
from urbandp.errors import InputDataError, InvalidParameterError

TABLE = pl.DataFrame({"mode": ["bus"], "day": [1], "tap": ["on"], "location": ["A"], "count": [40.0]})
PAIRS = pl.DataFrame({"a": [1, 2], "b": [2, 1]})
PUB = published_table_from_frame(TABLE)

CASES: list[tuple[Callable[[], object], str, tuple[str, ...], Callable[..., object], str]] = [
    (
        lambda: ud.audit.noise_scale(PAIRS, alpha=1.5),
        "alpha must be a finite number > 0 and < 1, got 1.5",
        ("alpha",),
        cli.noise_scale,
        "--alpha must be a finite number > 0 and < 1, got 1.5",
    ),
    (
        lambda: ud.audit.noise_scale(PAIRS, model="gauss"),
        "model must be one of continuous, discrete, got 'gauss'",
        ("model",),
        cli.noise_scale,
        "--model must be one of continuous, discrete, got 'gauss'",
    ),
    (
        lambda: ud.audit.zero_skipping(TABLE, group_sizes="1,x"),
        "group_sizes must be integers like 1,5,12, got '1,x'",
        ("group_sizes",),
        cli.zero_skipping,
        "--group-sizes must be integers like 1,5,12, got '1,x'",
    ),
    (
        lambda: ud.audit.zero_skipping(TABLE, group_sizes=[0]),
        "group_sizes must be positive integers",
        ("group_sizes",),
        cli.zero_skipping,
        "--group-sizes must be positive integers",
    ),
    (
        lambda: ud.audit.zero_skipping(TABLE, method="magic"),
        "method must be one of auto, data61-2016, urbandp, unknown, got 'magic'",
        ("method",),
        cli.zero_skipping,
        "--method must be one of auto, data61-2016, urbandp, unknown, got 'magic'",
    ),
    (
        lambda: ud.audit.zero_skipping(TABLE, threshold=float("nan")),
        "threshold must be a finite number >= 0, got nan",
        ("threshold",),
        cli.zero_skipping,
        "--threshold must be a finite number >= 0, got nan",
    ),
    (
        lambda: ud.audit.zero_skipping(TABLE, method="data61-2016", scale=-2.0),
        "scale must be a finite number > 0, got -2.0",
        ("scale",),
        cli.zero_skipping,
        "--scale must be a finite number > 0, got -2.0",
    ),
    (
        lambda: ud.audit.differencing(TABLE, TABLE, marginal_scale=0.0),
        "marginal_scale must be a finite number > 0, got 0.0",
        ("marginal_scale",),
        cli.differencing,
        "--marginal-scale must be a finite number > 0, got 0.0",
    ),
    (
        lambda: ud.audit.differencing(TABLE, TABLE, max_cells=-1),
        "max_cells must be an integer >= 0, got -1",
        ("max_cells",),
        cli.differencing,
        "--max-cells must be an integer >= 0, got -1",
    ),
    (
        lambda: ud.audit.differencing(TABLE, TABLE),
        "no scale given and no noise_scale in privacy.json (estimate it with `urbandp audit noise-scale`)",
        ("scale",),
        cli.differencing,
        "no --scale given and no noise_scale in privacy.json (estimate it with `urbandp audit noise-scale`)",
    ),
    (
        lambda: ud.audit.pairs(TABLE, route="ferry:A>B", lag_minutes=1440),
        "lag_minutes must be an integer >= 0 and <= 1439, got 1440",
        ("lag_minutes",),
        cli.pairs,
        "--lag-minutes must be an integer >= 0 and <= 1439, got 1440",
    ),
]


@pytest.mark.parametrize(("call", "message", "parameters", "command", "cli_text"), CASES)
def test_library_names_the_parameter_and_the_cli_its_flag(
    call: Callable[[], object],
    message: str,
    parameters: tuple[str, ...],
    command: Callable[..., object],
    cli_text: str,
) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        call()
    assert str(caught.value) == message and "--" not in message
    assert caught.value.parameters == parameters
    assert caught.value.naming(_cli_names(command)) == cli_text


def test_a_bad_noise_scale_in_privacy_json_names_no_parameter() -> None:
    """``privacy.json``'s ``noise_scale`` is the release's, not a parameter of the call: bad input data, and
    nothing in the message is renamed."""
    with pytest.raises(InputDataError) as caught:
        ud.audit.zero_skipping(TABLE, method="data61-2016", privacy={"noise_scale": -1.0})
    assert str(caught.value) == "privacy.json noise_scale must be a positive finite number, got -1.0"
    assert caught.value.parameters == ()
