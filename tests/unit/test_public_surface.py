"""The public surface says what is API: each public package's ``__all__``, the API reference pages, the doctests.

The public modules are those ``tools/make_private.py`` keeps (one list, read from there): ``urbandp``, each wing
package, ``urbandp.errors``, ``urbandp.results`` and the command line's entry point. Every name a public package
lists in ``__all__`` is documented on an API reference page; the pages document nothing else (no internal module);
no public package hands out a name from an internal module without listing it; the examples in the public
docstrings run as written (doctest), on tiny in-memory data.
"""

from __future__ import annotations

import doctest
import functools
import importlib
import importlib.util
import re
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
API_PAGES = ROOT / "docs" / "api"


def _tool() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("make_private", ROOT / "tools" / "make_private.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


TOOL = _tool()
PACKAGES = ("urbandp", *(f"urbandp.{wing}" for wing in TOOL.WINGS))
"""The public packages: each lists its API in ``__all__``."""
PUBLIC_MODULES = frozenset(
    {*PACKAGES, *(f"urbandp.{name}" for name in TOOL.PUBLIC if not name.startswith("__"))}
)
"""Every module a user may import: the packages, ``urbandp.errors``, ``urbandp.results``, ``urbandp.cli``."""


def _blocks() -> list[tuple[str, str, list[str] | None]]:
    """``(page, identifier, members)`` of every mkdocstrings ``:::`` block (members: None when not restricted)."""
    found = []
    for page in sorted(API_PAGES.glob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if not line.startswith("::: "):
                continue
            options: list[str] = []
            for follow in lines[i + 1 :]:
                if follow and not follow.startswith(" "):
                    break
                options.append(follow)
            text = "\n".join(options)
            if re.search(r"^\s*members:\s*false\s*$", text, re.M):
                members: list[str] | None = []
            else:
                listed = re.findall(r"^\s*-\s+(\w+)\s*$", text, re.M)
                members = listed or None
            found.append((page.name, line[4:].strip(), members))
    return found


def _resolve(identifier: str) -> Any:
    """The object a ``:::`` identifier names (a module, or an attribute of one)."""
    module, _, attr = identifier.rpartition(".")
    try:
        return importlib.import_module(identifier)
    except ModuleNotFoundError:
        return getattr(importlib.import_module(module), attr)


def _public_members(module: types.ModuleType) -> dict[str, Any]:
    names = getattr(module, "__all__", None) or [
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__
    ]
    return {n: getattr(module, n) for n in names}


@functools.cache
def _documented() -> list[Any]:
    """Every object the API pages document (importing every wing once: the first caller pays it)."""
    objects = []
    for _, identifier, members in _blocks():
        obj = _resolve(identifier)
        objects.append(obj)
        if isinstance(obj, types.ModuleType) and members != []:
            everything = _public_members(obj)
            objects.extend(everything[m] for m in members) if members else objects.extend(everything.values())
    return objects


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_in_all_is_documented_on_an_api_page(package: str) -> None:
    module = importlib.import_module(package)
    documented = _documented()
    missing = [
        name
        for name in module.__all__
        if name != "__version__" and not any(getattr(module, name) is obj for obj in documented)
    ]
    assert missing == [], f"{package}: in __all__ but on no page of docs/api"


def test_the_api_pages_document_public_names_only() -> None:
    """No page documents an internal module or a name no public package lists."""
    exported = [
        getattr(importlib.import_module(p), n) for p in PACKAGES for n in importlib.import_module(p).__all__
    ]
    blocks = _blocks()
    assert len(blocks) > 40
    for page, identifier, _ in blocks:
        assert not any(part.startswith("_") for part in identifier.split(".")), (page, identifier)
        obj = _resolve(identifier)
        if isinstance(obj, types.ModuleType):
            assert identifier in PUBLIC_MODULES, (page, identifier)
        else:
            assert any(obj is e for e in exported), (page, identifier)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_public_package_exports_only_what_it_lists(package: str) -> None:
    """Each name in ``__all__`` resolves; every other public attribute of the package (after its lazy names are
    loaded) is a module, or comes from outside urbandp: nothing from an internal module is handed out unlisted."""
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    unlisted = {
        name: getattr(value, "__module__", None)
        for name, value in vars(module).items()
        if not name.startswith("_")
        and name not in module.__all__
        and not isinstance(value, types.ModuleType)
        and str(getattr(value, "__module__", "")).startswith("urbandp")
    }
    assert unlisted == {}


def test_the_check_finds_an_unlisted_name() -> None:
    """The check above fails on a package that hands out an internal name without listing it."""
    fake = types.ModuleType("urbandp.fake")
    fake.__all__ = ["release"]  # type: ignore[attr-defined]
    fake.release = lambda: None  # type: ignore[attr-defined]
    fake.helper = types.SimpleNamespace(__module__="urbandp.fake._internal")  # type: ignore[attr-defined]
    unlisted = [
        n
        for n, v in vars(fake).items()
        if not n.startswith("_")
        and n not in fake.__all__
        and str(getattr(v, "__module__", "")).startswith("urbandp")
    ]
    assert unlisted == ["helper"]


@pytest.mark.parametrize("package", PACKAGES)
def test_the_examples_in_the_public_docstrings_run(package: str) -> None:
    """``doctest`` over each public package: its example is tiny and runs as written (the same as
    ``pytest --doctest-modules`` on the public modules)."""
    module = importlib.import_module(package)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the releases' own warnings (tiny data releases little, and says so)
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted >= 3, f"{package} has no runnable example"


@pytest.mark.parametrize("module", ["urbandp.errors", "urbandp.results"])
def test_every_error_and_result_type_is_exported_by_urbandp(module: str) -> None:
    """A new error or result class is part of the API: ``urbandp.__all__`` lists it (and so its page documents
    it)."""
    import urbandp

    classes = {
        name
        for name, value in vars(importlib.import_module(module)).items()
        if isinstance(value, type) and value.__module__ == module and not name.startswith("_")
    }
    assert len(classes) >= 3
    assert classes - set(urbandp.__all__) == set()


def test_the_api_pages_list_what_all_lists() -> None:
    """The wings' pages are generated from ``__all__`` (docs/gen_api_pages.py): a name added to or dropped from
    ``__all__`` without regenerating them fails here."""
    spec = importlib.util.spec_from_file_location("gen_api_pages", ROOT / "docs" / "gen_api_pages.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert len(gen.pages()) == len(TOOL.WINGS)
    for page in gen.pages():
        text = page.read_text(encoding="utf-8")
        assert gen.render(text) == text, f"{page.name} is out of date: run python docs/gen_api_pages.py"
    stale = gen.render("<!-- gen:api urbandp.budget -->\n::: urbandp.budget.gone\n<!-- /gen -->")
    assert "gone" not in stale and "::: urbandp.budget.declare" in stale


def test_the_tool_and_the_package_name_the_same_wings() -> None:
    """One list of wings: what ``urbandp`` exports as wings is what tools/make_private.py keeps public."""
    import urbandp

    assert set(urbandp._WINGS) == set(TOOL.WINGS)
    assert set(TOOL.WINGS) <= set(urbandp.__all__)
