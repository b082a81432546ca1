"""The fleet's ``--config`` file is parsed by the one TOML reader (:func:`urbandp._config_tables.read_document`),
as the other wings' files are: the same one-line refusals for a missing, malformed or unreadable file."""

from __future__ import annotations

from pathlib import Path

import pytest

from urbandp._config_tables import read_document
from urbandp.errors import InputDataError
from urbandp.fleet._options_input import read_toml


@pytest.mark.parametrize("text", [None, "[release\n", b"\xff\xfe[release]"])
def test_a_bad_fleet_config_is_refused_as_every_wing_s(text: str | bytes | None, tmp_path: Path) -> None:
    path = tmp_path / "cfg.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text)
    with pytest.raises(InputDataError) as fleet:
        read_toml(path)
    with pytest.raises(InputDataError) as other:
        read_document(path)
    assert str(fleet.value) == str(other.value)
    assert fleet.value.parameters == ("config",)
    assert str(fleet.value).startswith(f"config {path}: ")


def test_a_fleet_config_reads_its_tables(tmp_path: Path) -> None:
    path = tmp_path / "cfg.toml"
    path.write_text('[release]\nspeed_max = 60\n[input]\nspeed_unit = "mph"\n')
    assert read_toml(path) == {"release": {"speed_max": 60}, "input": {"speed_unit": "mph"}}
