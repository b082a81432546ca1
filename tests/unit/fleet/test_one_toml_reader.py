"""The fleet's ``--config`` file is read by the one reader of config tables (:mod:`urbandp._config_tables`), as
the other wings' files are: the same one-line refusals for a missing, malformed or unreadable file, an unknown
table or key, and a value of the wrong type, each naming the file and the key."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from urbandp._config_tables import read_document
from urbandp.errors import InputDataError, InputError
from urbandp.fleet._options_input import configure, read_config


@pytest.mark.parametrize("text", [None, "[release\n", b"\xff\xfe[release]"])
def test_a_bad_fleet_config_is_refused_as_every_wing_s(text: str | bytes | None, tmp_path: Path) -> None:
    path = tmp_path / "cfg.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text)
    with pytest.raises(InputDataError) as fleet:
        read_config(path)
    with pytest.raises(InputDataError) as other:
        read_document(path)
    assert str(fleet.value) == str(other.value)
    assert fleet.value.parameters == ("config",)
    assert str(fleet.value).startswith(f"config {path}: ")


def test_a_fleet_config_reads_its_tables(tmp_path: Path) -> None:
    path = tmp_path / "cfg.toml"
    path.write_text('[release]\nspeed_max = 60\n[input]\nspeed_unit = "mph"\n[columns]\nvehicle = "bus"\n')
    values = {
        "speed_max": (f"speed_max in {path} [release]", 60),
        "speed_unit": (f"speed_unit in {path} [input]", "mph"),
    }
    assert read_config(path) == (values, {"vehicle": "bus"})
    path.write_text(
        '[input.speed_unit_since]\n"2016-01-01" = "m/s"\n'
    )  # the flag's DAY=UNIT items, as a table
    switches = {"speed_unit_since": (f"speed_unit_since in {path} [input]", ["2016-01-01=m/s"])}
    assert read_config(path) == (switches, {})
    _, options, _, _ = configure({"noise_scale": 1, "config": path})
    assert options.speed_unit_since == ((dt.date(2016, 1, 1), "m/s"),)
    # options outside a table, in a file without [release], are the release's
    path.write_text("speed_max = 60\n")
    assert read_config(path) == ({"speed_max": (f"speed_max in {path}", 60)}, {})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[relase]\nspeed_max = 60\n", "config {}: unknown table [relase] (did you mean [release]?)"),
        ("[release]\nspeed_max = 60\nzzz = 1\n", "zzz in {} [release] is not an option"),
        (
            "[release]\nspead_max = 60\n",
            "spead_max in {} [release] is not an option (did you mean 'speed_max'?)",
        ),
        (
            '[release]\nspeed_max = "60"\n',
            "speed_max in {} [release] = '60' is not a value release's speed_max takes",
        ),
        (
            "[input]\nspeed_unit = 1\n",
            "speed_unit in {} [input] = 1 is not a value release's speed_unit takes",
        ),
        ("[columns]\nvehicle = 3\n", "vehicle in {} [columns] = 3 is not a column name"),
        ("[release]\nspeed_max = 60\n[release.zzz]\n", "zzz in {} [release] is not an option"),
        (
            "speed_max = 60\n[release]\n",
            "config {}: key 'speed_max' is outside a table; put the options in a [release] table",
        ),
    ],
)
def test_a_bad_table_key_or_value_is_refused_naming_the_file_and_key(
    text: str, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "cfg.toml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_config(path)
    assert str(err.value) == message.format(path)
