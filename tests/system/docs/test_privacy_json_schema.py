"""docs/privacy-json.md publishes the JSON Schema of every typed privacy report (issue 31): the file is what the
models generate, and a real release's privacy.json validates against its schema."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import urbandp as ud
from urbandp._privacy.report import PrivacyReport
from urbandp._synth.fleet import generate_fleet
from urbandp.fleet._report import FleetPrivacyReport

pytestmark = pytest.mark.system
DOCS = Path(__file__).resolve().parents[3] / "docs"
START = dt.date(2024, 3, 4)


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_privacy_schema", DOCS / "gen_privacy_schema.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _published() -> dict[str, dict[str, Any]]:
    """Each published schema, by its section's class path."""
    text = (DOCS / "privacy-json.md").read_text(encoding="utf-8")
    found = re.findall(r"^## `([\w.]+)`\n.*?```json\n(.*?)\n```", text, flags=re.S | re.M)
    return {name: json.loads(schema) for name, schema in found}


def _subclasses(cls: type) -> set[type]:
    return {c for sub in cls.__subclasses__() for c in {sub, *_subclasses(sub)}}


def test_the_published_page_is_what_the_models_generate() -> None:
    gen = _generator()
    assert (DOCS / "privacy-json.md").read_text(encoding="utf-8") == gen.render(), (
        "docs/privacy-json.md is out of date: run python docs/gen_privacy_schema.py"
    )


def test_every_typed_report_is_published() -> None:
    """A new report class must be added to the generator's list (its schema would otherwise go unpublished)."""
    gen = _generator()
    gen.report_classes()  # imports every wing's report module
    typed = {f"{c.__module__}.{c.__name__}" for c in {PrivacyReport, *_subclasses(PrivacyReport)}}
    assert typed == set(_published())
    for name, schema in _published().items():
        module, cls = name.rsplit(".", 1)
        assert schema == getattr(importlib.import_module(module), cls).json_schema()


def _check_against(schema: dict[str, Any], document: dict[str, Any]) -> None:
    """The schema's required fields are present and their JSON types agree (jsonschema, when installed, checks
    the whole schema, draft 2020-12 as pydantic writes it)."""
    try:
        import jsonschema
    except ImportError:
        kinds = {"string": str, "boolean": bool, "integer": int, "number": (int, float), "array": list,
                 "object": dict, "null": type(None)}  # fmt: skip
        assert set(schema["required"]) <= set(document)
        for key, spec in schema["properties"].items():
            options = spec.get("anyOf", [spec])
            allowed = [kinds[o["type"]] for o in options if "type" in o]
            if key in document and allowed and len(allowed) == len(options):
                value = document[key]
                assert any(isinstance(value, k) for k in allowed), (key, value, spec)
                assert not (isinstance(value, bool) and bool not in allowed), (key, value)
    else:  # nbformat (the test extra) depends on jsonschema, so CI takes this branch
        errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(document)]
        assert errors == [], errors


def test_a_real_fleet_release_validates_against_its_published_schema(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.parquet"
    generate_fleet(120, 2, 5, start=START, records_per_vehicle_day=80).write_parquet(fleet)
    rel = ud.fleet.release(
        fleet, start=START, end=START + dt.timedelta(days=1), epsilon_per_day=4, max_hats_per_vehicle_day=8,
        domain_bbox=(21.09, 72.75, 21.25, 72.91),
    )  # fmt: skip
    assert rel.privacy.hats_released > 0
    rel.write(tmp_path / "rel")
    document = json.loads((tmp_path / "rel" / "privacy.json").read_text(encoding="utf-8"))
    schema = _published()["urbandp.fleet._report.FleetPrivacyReport"]
    _check_against(schema, document)
    # epsilon 4 a day by the zCDP bound the noise is calibrated to: 3.74 by the exact Gaussian curve
    assert FleetPrivacyReport.model_validate(document).cumulative_epsilon_per_day == pytest.approx(
        3.7375567528, rel=1e-9
    )
    broken = {k: v for k, v in document.items() if k != "hats_released"}
    with pytest.raises(AssertionError):
        _check_against(schema, broken)  # the check has teeth: a required figure missing fails it


def test_the_architecture_page_names_only_modules_that_exist() -> None:
    """docs/architecture.md stays true to the tree: every `package/module.py` it names is a file of src/urbandp
    (or of the repository, for tests/ and docs/)."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"(?<![\w./<*])((?:[a-z_]+/)+[a-z_]+\.py)\b", text)) - {
        "shared/tools/structure.py"
    }
    root = DOCS.parent
    missing = {
        n
        for n in named
        if not any((base / n).is_file() for base in (root, root / "src", root / "src" / "urbandp"))
    }
    assert len(named) > 20 and missing == set(), missing
