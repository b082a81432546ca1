"""What made a release is recorded: ``urbandp --version`` and privacy.json's ``software`` block (issue 32)."""

from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path

import pytest
from urbandp_process import run_urbandp

import urbandp
from urbandp.privacy.report import privacy_document

pytestmark = pytest.mark.system


def test_version_prints_urbandp_opendp_and_python() -> None:
    res = run_urbandp("--version")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == (
        f"urbandp {urbandp.__version__} (OpenDP {metadata.version('opendp')}, Python {platform.python_version()})"
    )


def test_the_installed_version_is_the_package_version() -> None:
    """pyproject reads the version from ``urbandp.__version__``: the two can never disagree."""
    assert metadata.version("urbandp") == urbandp.__version__


def test_every_privacy_document_records_the_software() -> None:
    doc = privacy_document({"not_dp_reasons": [], "privacy_unit": "vehicle-day"})
    assert doc["software"] == {
        "urbandp": urbandp.__version__,
        "opendp": metadata.version("opendp"),
        "python": platform.python_version(),
    }


def test_a_real_release_records_the_software(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.parquet"
    assert (
        run_urbandp("synth", "fleet", "--vehicles", "4", "--days", "1", "--out", str(fleet)).returncode == 0
    )
    out = tmp_path / "rel"
    res = run_urbandp(
        "release",
        str(fleet),
        "--out",
        str(out),
        "--epsilon-per-day",
        "4",
        "--no-map",
        "--start",
        "2021-11-15",
        "--end",
        "2021-11-15",
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads((out / "privacy.json").read_text())
    assert doc["software"]["urbandp"] == urbandp.__version__
    assert doc["software"]["opendp"] == metadata.version("opendp")
