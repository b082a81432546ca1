"""The release spec's hash (issue 32, :func:`urbandp._provenance.spec_sha256`): a file option enters by its content,
a number by its value whatever its Python type, and the fields a wing leaves out never enter."""

from __future__ import annotations

import shutil
from pathlib import Path

from urbandp._provenance import canonical, spec_fields, spec_sha256
from urbandp.sensing._options import QueryOptions
from urbandp.sensing._report import spec_sha256 as sensing_hash

QUERY = {"rect": (22.5, 88.3, 22.6, 88.4), "sigma2_min": 0.0, "sigma2_max": 1.0}


def test_numbers_hash_by_value_and_tuples_as_lists() -> None:
    assert canonical({"epsilon": 1, "bbox": (1.0, 2.5)}) == canonical({"epsilon": 1.0, "bbox": [1, 2.5]})
    assert spec_sha256("x", {"epsilon": 1}) == spec_sha256("x", {"epsilon": 1.0})
    assert spec_sha256("x", {"epsilon": 1}) != spec_sha256("x", {"epsilon": 1.5})
    assert spec_sha256("x", {"flag": True}) != spec_sha256("x", {"flag": 1})  # a bool stays a bool
    assert spec_sha256("x", {"epsilon": 1}) != spec_sha256("y", {"epsilon": 1})  # the release kind enters


def test_a_file_option_hashes_by_content_not_by_folder(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    cells = tmp_path / "a" / "cells.txt"
    cells.write_text("c1\nc2\n")
    copy = tmp_path / "b" / "elsewhere" / "cells.txt"
    copy.parent.mkdir(parents=True)
    shutil.copy(cells, copy)
    here = sensing_hash("query", QueryOptions(cells=cells, **QUERY))  # type: ignore[arg-type]
    assert here == sensing_hash("query", QueryOptions(cells=copy, **QUERY))  # type: ignore[arg-type]
    copy.write_text("c1\nc3\n")
    assert here != sensing_hash("query", QueryOptions(cells=copy, **QUERY))  # type: ignore[arg-type]


def test_fields_left_out_never_enter() -> None:
    options = QueryOptions(**QUERY)  # type: ignore[arg-type]
    assert "epsilon" not in spec_fields(options, leave_out=("epsilon",))
    assert set(spec_fields(options)) == {
        "rect", "type", "window", "select", "cells", "alpha", "rho", "theta", "theta2", "steepness", "epsilon",
        "sigma2_min", "sigma2_max",
    }  # fmt: skip
