"""Atomic output directories and strict JSON (docs/design.md, "Outputs")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from urbandp._outputs import MARKER, atomic_output_dir, dumps_strict, output_policy, owner_dir_for
from urbandp.errors import InputError


def test_success_replaces_old_output_whole(tmp_path: Path) -> None:
    out = tmp_path / "rel"
    with atomic_output_dir(out) as d:
        (d.release / "map.html").write_text("old")
        d.owner_path("quarantine.csv").write_text("x")
    with output_policy(overwrite=True), atomic_output_dir(out) as d:
        (d.release / "table.csv").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "table.csv"]
    assert not owner_dir_for(out).exists()  # the old owner material went with the old release
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_failure_leaves_old_output_untouched(tmp_path: Path) -> None:
    out = tmp_path / "rel"
    with atomic_output_dir(out) as d:
        (d.release / "a.csv").write_text("1")
    with pytest.raises(RuntimeError), output_policy(overwrite=True), atomic_output_dir(out) as d:
        (d.release / "a.csv").write_text("half")
        raise RuntimeError("disk full")
    assert (out / "a.csv").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rel"]


def test_owner_material_sits_beside_the_release(tmp_path: Path) -> None:
    out = tmp_path / "rel"
    with atomic_output_dir(out) as d:
        d.owner_path("quarantine.csv").write_text("raw")
    assert (tmp_path / "owner_only" / "rel" / "quarantine.csv").read_text() == "raw"
    assert "NOT differentially private" in (tmp_path / "owner_only" / "rel" / "README.txt").read_text()
    assert not (out / "owner_only").exists()


def test_output_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("")
    with pytest.raises(InputError, match="existing file"), atomic_output_dir(f):
        pass
    with pytest.raises(InputError, match="is a file"), atomic_output_dir(f / "sub"):
        pass


def test_strict_json_has_no_infinity_or_nan() -> None:
    text = dumps_strict({"a": float("inf"), "b": [float("nan"), 1.5], "c": Path("x")})
    assert json.loads(text) == {"a": None, "b": [None, 1.5], "c": "x"}
    assert "Infinity" not in text and "NaN" not in text
