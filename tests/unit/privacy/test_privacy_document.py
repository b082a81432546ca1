"""privacy.json has one serializer (issue 20): it never writes a document that misstates what is DP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from urbandp._privacy.report import PrivacyDocumentError, privacy_document, write_privacy_json


def test_header_first_and_flag_from_reasons(tmp_path: Path) -> None:
    path = write_privacy_json(tmp_path, {"epsilon": float("inf"), "unit": "trip", "not_dp_reasons": []})
    doc = json.loads(path.read_text())
    assert list(doc)[:3] == ["differentially_private", "not_dp_reasons", "unit"]
    assert doc["differentially_private"] is True
    assert doc["epsilon"] is None  # strict JSON: no Infinity token


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        (
            {"differentially_private": True, "not_dp_reasons": ["K read from the data"], "unit": "u"},
            "labels a",
        ),
        ({"differentially_private": False, "not_dp_reasons": [], "unit": "u"}, "without saying why"),
        ({"not_dp_reasons": [], "epsilon": 1.0}, "privacy unit"),
        ({"unit": "u"}, "not_dp_reasons"),
        ({"differentially_private": "yes", "not_dp_reasons": [], "unit": "u"}, "true or false"),
    ],
)
def test_misstated_documents_are_refused_and_nothing_is_written(
    tmp_path: Path, doc: dict[str, object], why: str
) -> None:
    with pytest.raises(PrivacyDocumentError, match=why):
        write_privacy_json(tmp_path, doc)
    assert not (tmp_path / "privacy.json").exists()


def test_not_dp_document_keeps_its_reasons() -> None:
    doc = privacy_document(
        {"not_dp_reasons": ["public-threshold reads true counts"], "privacy_unit": "vehicle-day"}
    )
    assert doc["differentially_private"] is False
