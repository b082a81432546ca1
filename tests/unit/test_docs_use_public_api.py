"""The examples a user copies (README, the docs' pages, the getting-started page, the tutorial) use the public API
only: every module they import is public, and every name they take from a public package is in its ``__all__``.

An example that reaches into an internal module (``from urbandp.fleet._pipeline import ...``, ``ud.fleet.api``)
teaches a name that may change without notice; this test fails on it.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _public_modules() -> frozenset[str]:
    """The modules ``tools/make_private.py`` keeps public (its WINGS and PUBLIC: one list)."""
    text = (ROOT / "tools" / "make_private.py").read_text(encoding="utf-8")
    namespace: dict[str, object] = {}
    for name in ("WINGS", "PUBLIC"):
        exec(re.search(rf"^{name} = .*$", text, re.M).group(0), namespace)  # type: ignore[union-attr]
    wings, public = namespace["WINGS"], namespace["PUBLIC"]
    assert isinstance(wings, tuple) and isinstance(public, frozenset)
    return frozenset(
        {"urbandp", *(f"urbandp.{w}" for w in wings), *(f"urbandp.{p}" for p in public if p[0] != "_")}
    )


PUBLIC_MODULES = _public_modules()
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
PYTHON_FENCES = {"python", "py", "pycon", "ipython"}
FROM = re.compile(r"^\s*(?:>>> |\.\.\. )?from\s+(urbandp(?:\.\w+)*)\s+import\s+(\([^)]*\)|[\w ,]+)", re.M)
IMPORT = re.compile(r"^\s*(?:>>> |\.\.\. )?import\s+(urbandp(?:\.\w+)*)", re.M)
UD = re.compile(r"(?<![\w.])ud\.(\w+)(?:\.(\w+))?")


def _examples() -> dict[str, str]:
    """``{where: code}`` of every Python example a user reads: fenced blocks and the tutorial's code cells."""
    found: dict[str, str] = {}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        for n, m in enumerate(FENCE.finditer(page.read_text(encoding="utf-8"))):
            if m.group(1) in PYTHON_FENCES:
                found[f"{page.relative_to(ROOT)} block {n}"] = m.group(2)
    notebook = json.loads((ROOT / "docs" / "tutorial.ipynb").read_text(encoding="utf-8"))
    for n, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            found[f"docs/tutorial.ipynb cell {n}"] = "".join(cell["source"])
    return found


def _exported(package: str) -> set[str]:
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    if names is None:  # urbandp.errors, urbandp.results: their public classes and functions
        names = [
            n
            for n, v in vars(module).items()
            if not n.startswith("_") and getattr(v, "__module__", "") == package
        ]
    return set(names)


def internal_uses(code: str) -> list[str]:
    """What an example takes from outside the public API."""
    bad = [f"import {m}" for m in IMPORT.findall(code) if m not in PUBLIC_MODULES]
    for module, names in FROM.findall(code):
        if module not in PUBLIC_MODULES:
            bad.append(f"from {module} import ...")
            continue
        for item in names.strip("()").split(","):
            name = item.split(" as ")[0].strip()
            if not name:
                continue
            if name not in _exported(module) and f"{module}.{name}" not in PUBLIC_MODULES:
                bad.append(f"from {module} import {name}")
    if re.search(r"import\s+urbandp\s+as\s+ud\b", code) or "ud." in code:
        top = _exported("urbandp")
        for first, second in UD.findall(code):
            if first not in top:
                bad.append(f"ud.{first}")
            elif (
                second
                and f"urbandp.{first}" in PUBLIC_MODULES
                and second not in _exported(f"urbandp.{first}")
            ):
                bad.append(f"ud.{first}.{second}")
    return bad


def test_the_examples_are_found() -> None:
    examples = _examples()
    assert len(examples) > 20
    assert any(k.startswith("docs/getting-started.md") for k in examples)
    assert any(k.startswith("README.md") for k in examples)
    assert any(k.startswith("docs/tutorial.ipynb") for k in examples)


def test_no_example_imports_an_internal_module() -> None:
    found = {where: bad for where, code in _examples().items() if (bad := internal_uses(code))}
    assert found == {}


@pytest.mark.parametrize(
    ("code", "bad"),
    [
        ("from urbandp.fleet._pipeline import release_fleet", ["from urbandp.fleet._pipeline import ..."]),
        ("import urbandp._privacy.noise", ["import urbandp._privacy.noise"]),
        ("import urbandp as ud\nud.fleet.api.release(df)", ["ud.fleet.api"]),
        ("from urbandp.counts import _release_counts", ["from urbandp.counts import _release_counts"]),
        ("import urbandp as ud\nrel = ud.fleet.release(df)\nud.Session(store='s')", []),
        ("from urbandp.errors import InputError\nfrom urbandp import fleet", []),
    ],
)
def test_the_check_tells_internal_from_public(code: str, bad: list[str]) -> None:
    assert internal_uses(code) == bad
