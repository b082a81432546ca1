""":class:`FleetSpec` errors name the parameter as Python calls it and list it in ``parameters``; ``urbandp
synth fleet`` renames them to its flags, in the wording of every release option."""

from __future__ import annotations

from typing import Any

import pytest

from urbandp._cli_support import _cli_names
from urbandp._synth import cli
from urbandp._synth.fleet import FleetSpec, generate_fleet
from urbandp.errors import InvalidParameterError

BASE = {"vehicles": 2, "days": 1, "seed": 0}


@pytest.mark.parametrize(
    ("changes", "message", "parameters", "cli_text"),
    [
        (
            {"vehicles": 0},
            "vehicles must be an integer >= 1, got 0",
            ("vehicles",),
            "--vehicles must be an integer >= 1, got 0",
        ),
        (
            {"days": 0},
            "days must be an integer >= 1 and <= 3660 (ten years), got 0",
            ("days",),
            "--days must be an integer >= 1 and <= 3660 (ten years), got 0",
        ),
        (
            {"days": 5000},
            "days must be an integer >= 1 and <= 3660 (ten years), got 5000",
            ("days",),
            "--days must be an integer >= 1 and <= 3660 (ten years), got 5000",
        ),
        (
            {"seed": -1},
            "seed must be an integer >= 0, got -1",
            ("seed",),
            "--seed must be an integer >= 0, got -1",
        ),
        (
            {"records_per_vehicle_day": 1.0},
            "records_per_vehicle_day must be a finite number >= 2 and <= 20000, got 1.0",
            ("records_per_vehicle_day",),
            "--records-per-vehicle-day must be a finite number >= 2 and <= 20000, got 1.0",
        ),
        (
            {"vehicles": 20_000, "days": 3000, "records_per_vehicle_day": 20_000},
            "vehicles x days x records_per_vehicle_day asks for about 1,200,000,000,000 records; at most "
            "200,000,000 are generated in one file (about 20 GB of CSV)",
            ("vehicles", "days", "records_per_vehicle_day"),
            "--vehicles x --days x --records-per-vehicle-day asks for about 1,200,000,000,000 records; at most "
            "200,000,000 are generated in one file (about 20 GB of CSV)",
        ),
        (
            {"dirty_fraction": 0.9},
            "dirty_fraction must be a finite number >= 0 and <= 0.5, got 0.9",
            ("dirty_fraction",),
            "--dirty-fraction must be a finite number >= 0 and <= 0.5, got 0.9",
        ),
        (
            {"routes": 0},
            "routes must be an integer >= 1 and <= 200, got 0",
            ("routes",),
            "--routes must be an integer >= 1 and <= 200, got 0",
        ),
    ],
)
def test_spec_errors_name_the_parameter(
    changes: dict[str, Any], message: str, parameters: tuple[str, ...], cli_text: str
) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        FleetSpec(**(BASE | changes))
    assert str(caught.value) == message and "--" not in message
    assert caught.value.parameters == parameters
    assert caught.value.naming(_cli_names(cli.fleet)) == cli_text


def test_generate_fleet_names_its_keyword() -> None:
    """The public function's keyword is the parameter the message names (no ``synth fleet`` flag)."""
    with pytest.raises(
        InvalidParameterError, match=r"^speeder_fraction must be a finite number >= 0 and <= 1, got 2$"
    ) as caught:
        generate_fleet(2, 1, 0, speeder_fraction=2)
    assert caught.value.parameters == ("speeder_fraction",)
