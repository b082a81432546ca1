"""Library errors name the parameter; the command line names its flag, or the config file's key (issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from urbandp.cli import app
from urbandp.errors import InputDataError, InputError, InvalidParameterError, flag_of
from urbandp.sensing.options import check_grid_options

RUN = CliRunner()


def test_naming_renames_whole_words_only() -> None:
    err = InvalidParameterError(
        "give both start and end (start_date and --start are other words)", parameters=("start", "end")
    )
    assert err.naming(flag_of) == "give both --start and --end (start_date and --start are other words)"
    assert str(err) == "give both start and end (start_date and --start are other words)"


def test_naming_without_parameters_is_the_message() -> None:
    assert InputError("input not found: a.csv").naming(lambda p: "X") == "input not found: a.csv"


def test_renamed_keeps_the_class_and_the_other_parameters() -> None:
    err = InputDataError("a and b are both wrong", parameters=("a", "b"))
    err.extra = 7  # type: ignore[attr-defined]
    new = err.renamed(lambda p: "a in c.toml [t]" if p == "a" else None)
    assert type(new) is InputDataError and new.exit_code == err.exit_code
    assert str(new) == "a in c.toml [t] and b are both wrong"
    assert new.parameters == ("b",) and new.extra == 7  # type: ignore[attr-defined]


def test_library_message_names_the_parameter() -> None:
    with pytest.raises(InvalidParameterError, match=r"^cell_metres must be > 0, got -1$") as caught:
        check_grid_options(-1, 5)
    assert caught.value.parameters == ("cell_metres",)


@pytest.fixture(scope="module")
def readings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("naming") / "readings.csv"
    assert RUN.invoke(app, ["sensing", "synth", str(path), "--readings", "200"]).exit_code == 0
    return path


def test_cli_names_the_flag(readings: Path, tmp_path: Path) -> None:
    res = RUN.invoke(
        app, ["sensing", "dp-map", str(readings), "--out", str(tmp_path / "o"), "--cell-metres", "-5"]
    )
    assert res.exit_code == 2
    assert res.stderr.strip() == "urbandp: error: --cell-metres must be > 0, got -5.0"


def test_cli_names_the_config_key_for_a_value_from_the_file(readings: Path, tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[sensing.dp-map]\ncell_metres = -5\n")
    base = ["sensing", "dp-map", str(readings), "--out", str(tmp_path / "o"), "--config", str(config)]
    res = RUN.invoke(app, base)
    assert res.exit_code == 2
    assert (
        res.stderr.strip()
        == f"urbandp: error: cell_metres in {config} [sensing.dp-map] must be > 0, got -5.0"
    )
    # a flag typed on the command line wins over the file, and the error names the flag
    res = RUN.invoke(app, [*base, "--cell-metres", "-3"])
    assert res.stderr.strip() == "urbandp: error: --cell-metres must be > 0, got -3.0"
