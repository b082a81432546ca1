"""The docs speak to readers outside the repository.

No page, README or docstring tells its history by issue number (that is CHANGELOG.md's job) or sends a reader to
a test file; the README's links are absolute (relative ones break in the package's long description on PyPI) and
lead to pages that exist, on the documentation address that pyproject.toml's Project-URLs and mkdocs.yml state;
the API reference shows the docstrings' Sphinx roles (``:func:`x```) as code and their literal-block
markers (``::``) as Sphinx does, never raw.
"""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.system
ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
ISSUE = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
# a path into tests/, except the mutation script: a developer tool the privacy core's page says how to run (as it
# names benchmarks/ scripts), not a test cited as evidence
TEST_PATH = re.compile(r"\btests/(?!mutations/run_mutations\.py)\w")


def _pages() -> list[Path]:
    return [
        ROOT / "README.md",
        *sorted(DOCS.glob("*.md")),
        *sorted(DOCS.glob("*/*.md")),
        DOCS / "tutorial.ipynb",
    ]


def _hits(pattern: re.Pattern[str], files: list[Path]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()[:80]}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]


def test_no_page_cites_an_issue_number_or_a_test_file() -> None:
    assert len(_pages()) > 25
    assert _hits(ISSUE, _pages()) == []
    assert _hits(TEST_PATH, _pages()) == []


def test_no_docstring_or_comment_in_the_package_cites_an_issue_number_or_a_test_file() -> None:
    sources = sorted((ROOT / "src" / "urbandp").rglob("*.py"))
    assert len(sources) > 100
    assert _hits(ISSUE, sources) == []
    assert _hits(TEST_PATH, sources) == []


def _documentation_url() -> str:
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    assert set(urls) == {"Homepage", "Documentation", "Repository", "Changelog"}
    assert all(url.startswith("https://") for url in urls.values())
    return str(urls["Documentation"])


def _slugs(page: Path) -> set[str]:
    """The anchors MkDocs gives the page's headings (the toc extension's slugs)."""
    from markdown.extensions.toc import slugify

    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {slugify(title.strip(), "-") for title in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def test_the_readme_links_are_absolute_and_lead_to_pages_that_exist() -> None:
    pytest.importorskip("markdown")
    base = _documentation_url()
    mkdocs = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert f"site_url: {base}\n" in mkdocs
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert [t for t in targets if not t.startswith("https://")] == []
    into_docs = [t.removeprefix(base) for t in targets if t.startswith(base)]
    assert len(into_docs) >= 20
    for target in into_docs:
        path, _, anchor = target.partition("#")
        if path.startswith("img/"):
            assert (DOCS / path).is_file(), target
            continue
        assert path.endswith("/"), target
        name = path.removesuffix("/")
        page = next((p for p in (DOCS / f"{name}.md", DOCS / name / "README.md") if p.is_file()), None)
        if page is None:
            assert (DOCS / f"{name}.ipynb").is_file(), target
            continue
        assert not anchor or anchor in _slugs(page), target


def test_the_getting_started_page_is_in_the_site_navigation() -> None:
    mkdocs = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = mkdocs.split("\nnav:\n")[1]
    assert "getting-started.md" in nav.split("\n")[1]  # right after Home


def _roles_extension() -> ModuleType:
    spec = importlib.util.spec_from_file_location("griffe_sphinx_roles", DOCS / "griffe_sphinx_roles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_role_rewrite_shows_what_sphinx_shows() -> None:
    pytest.importorskip("griffe")
    plain = _roles_extension().plain_roles
    assert plain("see :func:`release` and :class:`~urbandp.errors.InputError`") == (
        "see `release` and `InputError`"
    )
    assert plain(":mod:`urbandp.fleet`, :meth:`the sha <CountsReleaseSpec.sha256>`, :py:attr:`x`") == (
        "`urbandp.fleet`, `the sha`, `x`"
    )
    assert plain("``:func:`` literal, no role: `x`") == "``:func:`` literal, no role: `x`"
    # a literal block's marker, as Sphinx shows it; a slice or a scoped name is left alone
    assert plain("The API::\n\n    ud.fleet.release(df)\n") == "The API:\n\n    ud.fleet.release(df)\n"
    assert plain("Text.\n\n::\n\n    code\n") == "Text.\n\n\n    code\n"
    assert plain("Example ::\n\n    code\n") == "Example\n\n    code\n"
    assert plain("rows[::2] and a::b::\n") == "rows[::2] and a::b:\n"


def test_the_api_reference_renders_no_raw_sphinx_role() -> None:
    """The docs build loads the package with the extension named in mkdocs.yml; loaded the same way, no docstring
    of the package keeps a role (the docstrings keep Sphinx's roles as written, for ``help()``)."""
    griffe = pytest.importorskip("griffe")
    mkdocs = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "- docs/griffe_sphinx_roles.py:SphinxRolesAsCode\n" in mkdocs
    roles = _roles_extension()
    package = griffe.load(
        "urbandp",
        search_paths=[ROOT / "src"],
        extensions=griffe.load_extensions(roles.SphinxRolesAsCode()),
        docstring_parser="sphinx",
    )
    docstrings: dict[str, str] = {}

    def walk(obj: object) -> None:
        docstring = getattr(obj, "docstring", None)
        if docstring is not None:
            docstrings[obj.path] = docstring.value  # type: ignore[attr-defined]
        for member in obj.members.values():  # type: ignore[attr-defined]
            if not member.is_alias:
                walk(member)

    walk(package)
    assert len(docstrings) > 1000
    assert [path for path, text in docstrings.items() if roles.ROLE.search(text)] == []
    marker = re.compile(r"::[ \t]*$", re.M)
    assert [path for path, text in docstrings.items() if marker.search(text)] == []
