"""What made a release is recorded: ``urbandp --version`` and privacy.json's ``software`` block (issue 32)."""

from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path

import pytest
from urbandp_process import run_urbandp

import urbandp
from urbandp._privacy.report import privacy_document

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


def test_the_release_spec_is_hashed_into_privacy_json(tmp_path: Path) -> None:
    """Same parameters, same hash (whatever the data); one parameter changed, another hash."""
    import urbandp as ud

    fleet = tmp_path / "fleet.parquet"
    assert (
        run_urbandp("synth", "fleet", "--vehicles", "4", "--days", "1", "--out", str(fleet)).returncode == 0
    )
    common = {"start": "2021-11-15", "end": "2021-11-15", "domain_bbox": (21.09, 72.75, 21.25, 72.91)}
    first = ud.fleet.release(fleet, epsilon_per_day=4, **common).privacy.spec_sha256
    again = ud.fleet.release(fleet, epsilon_per_day=4, **common).privacy.spec_sha256
    other = ud.fleet.release(fleet, epsilon_per_day=5, **common).privacy.spec_sha256
    assert first is not None and first.startswith("sha256:") and first == again and first != other
