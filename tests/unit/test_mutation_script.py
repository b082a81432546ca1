"""The named-mutation script stays runnable: every mutation finds its text exactly once in the source, names tests
that exist, and the docs' table is the script's own (one source). The mutations themselves run in CI."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script():  # type: ignore[no-untyped-def]
    name = "run_mutations"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "mutations" / "run_mutations.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the class is made
        spec.loader.exec_module(module)
    return sys.modules[name]


MUTATIONS = _script().MUTATIONS


def test_mutation_names_are_unique_and_the_set_covers_every_area() -> None:
    names = [m.name for m in MUTATIONS]
    assert len(names) == len(set(names))
    paths = {m.path for m in MUTATIONS}
    for area in ("_privacy/guards.py", "_privacy/session.py", "_privacy/budget_store.py", "fleet/_postprocess_pooling.py",
                 "fleet/_measure.py", "fleet/_measure_selection.py", "counts/_options.py", "sensing/_pm_map_mechanism.py"):  # fmt: skip
        assert area in paths, area


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_applies_exactly_once(mutation) -> None:  # type: ignore[no-untyped-def]
    """A mutation whose text moved is a test of nothing: rewrite it together with the code."""
    assert _script().occurrences(mutation) == 1, f"{mutation.path}: {mutation.old!r}"
    assert mutation.old != mutation.new


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_names_tests_that_exist(mutation) -> None:  # type: ignore[no-untyped-def]
    assert mutation.tests
    for node in mutation.tests:
        path, _, function = node.partition("::")
        text = (ROOT / path).read_text()
        if function:
            assert re.search(rf"^def {re.escape(function)}\(", text, re.M), node


def test_the_docs_table_is_the_script_s() -> None:
    page = (ROOT / "docs" / "privacy-core.md").read_text()
    assert _script().markdown() in page
