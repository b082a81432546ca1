"""The experiments' library errors name the parameter as Python calls it and list it in ``parameters``;
``urbandp experiment ...`` renames them to its flags (issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest

from urbandp._cli_support import _cli_names
from urbandp._experiments import cli
from urbandp._experiments.busiest_hat import extract_busiest_hat
from urbandp._experiments.mean_experiment import parse_epsilons
from urbandp.errors import InvalidParameterError


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1,zero", "epsilons must be comma-separated numbers, got '1,zero'"),
        ("1,inf", "epsilons must be positive finite numbers, got '1,inf'"),
        (
            "1e-300",
            "epsilons must be >= 1e-06 (got 1e-300): the noise scale U/epsilon would overflow and every "
            "estimate would be noise",
        ),
    ],
)
def test_epsilons_errors_name_the_parameter(text: str, message: str) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        parse_epsilons(text)
    assert str(caught.value) == message and "--" not in message
    assert caught.value.parameters == ("epsilons",)
    # the command line prints the text it always printed: only the parameter becomes the flag
    assert caught.value.naming(_cli_names(cli.mean)) == "--" + message


def test_busiest_hat_resolution_error_names_the_parameter(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        extract_busiest_hat([tmp_path / "avl.csv"], tmp_path / "h.csv", resolution=16, hours=(9, 21))
    assert str(caught.value) == "resolution must be one of the H3 resolutions 0..15, got 16"
    assert caught.value.parameters == ("resolution",)
    assert (
        caught.value.naming(_cli_names(cli.busiest_hat))
        == "--resolution must be one of the H3 resolutions 0..15, got 16"
    )
