"""Make urbandp's internal modules visibly internal: ``_``-prefixed, with every reference rewritten.

One table (:data:`RENAMES`, plus the default rule below) says what each module becomes; the tool ``git mv``s the
files and rewrites every reference to them in the repository's text files: ``from urbandp.x.y import``,
``import urbandp.x.y``, ``from urbandp.x import y`` (a module imported as a name keeps its local name:
``from urbandp.x import _y as y``), dotted strings (``"urbandp.x.y.f"``: monkeypatch and ``mock.patch`` targets,
``importlib``, import-linter contracts, mkdocstrings ``:::`` blocks), f-string templates whose literal parts are
renamed alike for every module they can name (``f"urbandp.{wing}.cli"``), and, in docstrings, comments and
documents, paths and short mentions (``src/urbandp/fleet/measure.py``, ``fleet/measure.py``,
``fleet/pipeline.release_fleet``, ``privacy.guards``). It matches patterns against the modules it finds on disk,
so it works on code written after the table.

The public surface that stays: ``urbandp`` itself, each wing package's ``__init__`` (:data:`WINGS`), and the
modules in :data:`PUBLIC` (the errors, the result types, the command line's entry point). Everything else becomes
internal: a package outside the wings is renamed as a whole (``urbandp.privacy`` -> ``urbandp._privacy``, its
modules keep their names inside it); a module at the top or inside a wing gets a ``_`` (``urbandp.session`` ->
``urbandp._session``, ``urbandp.fleet.api`` -> ``urbandp.fleet._api``) unless :data:`RENAMES` gives it a name that
says what it does.

Idempotent: a second run finds nothing to move and no reference to rewrite (``--check`` exits 1 if it would change
anything). Files holding the line ``# make_private: skip`` are left alone.

usage: python tools/make_private.py [--root DIR] [--dry-run | --check | --table]
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import shutil
import subprocess
import sys
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

# make_private: skip  (this file names the old modules on purpose)

PACKAGE = "urbandp"

WINGS = ("fleet", "counts", "survey", "sensing", "mpc", "audit", "estimators", "budget")
"""Packages whose ``__init__`` is public API; their modules become internal one by one."""

PUBLIC = frozenset({"cli", "errors", "results", "__main__", "__init__"})
"""Top-level modules that stay public: the command line's entry point (``urbandp.cli:main``, ``python -m
urbandp``), the errors, and the result types every release returns."""

RENAMES: dict[str, tuple[str, str]] = {
    # fleet: each file named by the stage of a release it serves, in order: options -> plan -> domain -> read (in
    # the pipeline) -> measure (bound, select, draw) -> account -> post-process -> report
    "fleet.config": ("fleet._options", "the release's options, each declared once (HatReleaseConfig)"),
    "fleet.spec": ("fleet._options_input", "Python values and TOML tables read into the options"),
    "fleet.options": ("fleet._options_flags", "the command line's flags for the options"),
    "fleet.plan": ("fleet._plan", "step 1: the plan, from public parameters before any record is read"),
    "fleet.forecast": ("fleet._plan_forecast", "what `urbandp plan` predicts, from the release's own plan"),
    "fleet.prior": ("fleet._plan_prior", "the GTFS schedule as the planner's prior"),
    "fleet.cli_plan": ("fleet._cli_plan", "the `urbandp plan` command"),
    "fleet.public_domain": ("fleet._domain", "the release's public domain of HATs, from its options"),
    "fleet.domain": ("fleet._domain_files", "reads the files of a public domain (cells, GeoJSON, GTFS)"),
    "fleet.pipeline": ("fleet._pipeline", "read, validate, contributions, the release in its charge, write"),
    "fleet.measure": ("fleet._measure", "steps 2-5: bound, select, clip bound, measure: the only draws"),
    "fleet.selection": ("fleet._measure_selection", "which HATs are released: the selection measure draws"),
    "fleet.account": ("fleet._account", "step 6: the loss per HAT, per day, per window (no draws)"),
    "fleet.composition": ("fleet._account_composition", "the composition rules account applies"),
    "fleet.report": ("fleet._report", "step 7: the typed privacy report (privacy.json)"),
    "fleet.pooling": ("fleet._postprocess_pooling", "post-processing: borrowing strength across HATs"),
    "fleet.usefulness": ("fleet._postprocess_usefulness", "post-processing: useful HATs and their intervals"),
    "fleet.cli_summary": ("fleet._cli_summary", "the summary `urbandp release` prints"),
    # the other wings: one word for one thing across wings (options, result, write)
    "counts.spec": (
        "counts._options",
        "the options of a count release, checked together (as fleet._options)",
    ),
    "counts.output": ("counts._write", "writes a count release's tables and privacy.json"),
    "sensing.release": ("sensing._result", "what a sensing release returns and writes (as survey._result)"),
    "survey.release": (
        "survey._published",
        "what a survey release publishes beside its column, and what it keeps",
    ),
    "estimators.hat": ("estimators._hat_means", "one user-level mean per HAT, for the fleet's release"),
}
"""Modules (relative to ``urbandp``) whose internal name says more than the default ``_`` + old name."""

ALWAYS_INTERNAL = frozenset({"_version"})
"""Modules that were ``_``-prefixed before this tool: no old name to rewrite."""

DATA_SUFFIXES = frozenset(
    [
        "csv",
        "json",
        "jsonl",
        "geojson",
        "parquet",
        "html",
        "png",
        "svg",
        "md",
        "txt",
        "toml",
        "yml",
        "yaml",
        "sqlite",
        "zip",
        "gz",
        "pb",
        "ipynb",
        "whl",
        "log",
    ]
)
TEXT_SUFFIXES = frozenset(
    {".py", ".pyi", ".md", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".ipynb", ".sh", ".txt"}
)
TEXT_NAMES = frozenset({"Makefile", ".importlinter", "run"})
ROOTS = ("src", "tests", "benchmarks", "docs", "tools", ".ci")
TOP_FILES = ("pyproject.toml", "Makefile", "mkdocs.yml", ".importlinter", "README.md", "setup.cfg", "tox.ini")
SKIP_DIRS = frozenset({".git", ".venv", "venv", "__pycache__", "node_modules", "out", "fixtures", "site"})
SKIP_MARK = "# make_private: skip"


@dataclass
class Node:
    """A module or package whose name changes: dotted names and paths relative to ``urbandp``."""

    old: str
    new: str
    path: Path  # where it is on disk now (the old place before the move, the new one after)
    is_package: bool
    why: str
    moved: bool  # already at its new place (a second run: only stale references are rewritten)
    names: frozenset[str] = field(
        default_factory=frozenset
    )  # top-level names (modules) or submodules (packages)


def _top_level_names(path: Path) -> frozenset[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def _package_names(path: Path) -> frozenset[str]:
    subs = {p.stem for p in path.glob("*.py")} | {
        p.name for p in path.iterdir() if (p / "__init__.py").exists()
    }
    return frozenset(
        subs | _top_level_names(path / "__init__.py") | {p.name for p in path.iterdir() if p.is_dir()}
    )


def _exports(package_dir: Path) -> frozenset[str]:
    """The names in a package's ``__all__`` (they shadow a module of the same name: ``urbandp.fleet.plan`` may be
    a function once the module is ``_plan``)."""
    init = package_dir / "__init__.py"
    if not init.exists():
        return frozenset()
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            return frozenset(
                e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
            )
    return frozenset()


def _children(directory: Path) -> Iterator[tuple[str, Path, bool]]:
    for p in sorted(directory.iterdir()):
        if p.suffix == ".py" and p.is_file():
            yield p.stem, p, False
        elif p.is_dir() and (p / "__init__.py").exists():
            yield p.name, p, True


def plan_renames(src: Path) -> list[Node]:
    """Every module or package of ``src/urbandp`` whose name changes, from :data:`RENAMES` and the default rule.

    A module already at its new name (a second run, or a branch merged after the first) is listed as moved, so
    that references to its old name are still rewritten."""
    pkg = src / PACKAGE
    present = {rel for rel, _, _ in _walk_nodes(pkg)}
    explicit_new = {new: old for old, (new, _) in RENAMES.items()}
    nodes = []
    for rel, path, is_package in _walk_nodes(pkg):
        leaf = rel.rpartition(".")[2]
        parent = rel.rpartition(".")[0]
        if leaf.startswith("_"):
            old = explicit_new.get(rel) or (f"{parent}.{leaf[1:]}" if parent else leaf[1:])
            ours = rel in explicit_new or (not leaf.startswith("__") and leaf not in ALWAYS_INTERNAL)
            if ours and old not in present and old != rel:
                why = RENAMES[old][1] if old in RENAMES else "internal"
                nodes.append(Node(old, rel, path, is_package, why, True, _names(path, is_package)))
            continue
        if rel in RENAMES:
            new, why = RENAMES[rel]
        elif not parent and (rel in PUBLIC or rel in WINGS):
            continue
        else:
            new, why = (f"{parent}._{leaf}" if parent else f"_{leaf}"), "internal"
        nodes.append(Node(rel, new, path, is_package, why, False, _names(path, is_package)))
    return nodes


def _names(path: Path, is_package: bool) -> frozenset[str]:
    return _package_names(path) if is_package else _top_level_names(path)


def _walk_nodes(pkg: Path) -> Iterator[tuple[str, Path, bool]]:
    """Top-level modules and packages, and the modules and subpackages of each wing (dotted, relative)."""
    for name, path, is_package in _children(pkg):
        if name in ("__init__",):
            continue
        yield name, path, is_package
        if is_package and name in WINGS:
            for sub, sub_path, sub_is_package in _children(path):
                if sub != "__init__":
                    yield f"{name}.{sub}", sub_path, sub_is_package


class Rewriter:
    """Rewrites references to the renamed modules in one text."""

    def __init__(self, nodes: list[Node], src: Path) -> None:
        self.nodes = {n.old: n for n in nodes}
        self.pkg = src / PACKAGE
        self.packages = {name for name, _, is_package in _children(self.pkg) if is_package} | {
            n.old.partition(".")[0] for n in nodes if n.is_package and "." not in n.old
        }
        self.exports = {wing: _exports(self.pkg / wing) for wing in WINGS}
        self.warnings: list[str] = []
        # (package, template) of each module-name template of the file being rewritten
        self.dynamic: list[tuple[str, str]] = []

    # --- resolution ------------------------------------------------------------------------------------------
    def _resolve(self, comps: list[str]) -> tuple[int, Node] | None:
        """The longest prefix of ``comps`` (relative to urbandp) that names a renamed node."""
        for k in range(len(comps), 0, -1):
            node = self.nodes.get(".".join(comps[:k]))
            if node is not None:
                return k, node
        return None

    def dotted(self, name: str, *, import_stmt: bool = False) -> str:
        """``urbandp.a.b.c`` with its module part renamed (anything after it kept)."""
        comps = name.split(".")
        if comps[0] != PACKAGE:
            return name
        found = self._resolve(comps[1:])
        if found is None:
            return name
        k, node = found
        rest = comps[1 + k :]
        parent, _, leaf = node.old.rpartition(".")
        shadowed = parent in self.exports and leaf in self.exports[parent] and not import_stmt
        if shadowed and (not rest or rest[0] not in node.names):
            # ``urbandp.fleet.plan`` with ``plan`` exported: the public function unless a module attribute follows
            return name
        return ".".join([PACKAGE, *node.new.split("."), *rest])

    def short(self, comps: list[str], sep: str, *, anchored: bool, suffix_ok: bool) -> list[str] | None:
        """Renamed components of a path or short dotted mention, or None when it names no renamed module."""
        if not comps or not comps[0]:
            return None
        last_base, dot, last_ext = comps[-1].partition(".")
        bases = [*comps[:-1], last_base]
        found = self._resolve(bases)
        if found is None:
            return None
        k, node = found
        rest = bases[k:]
        if not anchored:
            if node.moved and "." not in node.old:
                return None  # a top-level module found moved: its old short name may be anyone's (``typing``)
            alone = "." not in node.old and not node.is_package and not (k == len(bases) and last_ext == "py")
            if alone and not (sep == "." and rest and rest[0] in node.names):
                # a top-level module mentioned alone: only as ``session.py`` or ``session.Session``
                return None
            if k == len(bases) and not rest and not dot and sep == "/" and not node.is_package:
                return None
        if rest:
            if node.is_package:
                if rest[0] not in node.names:
                    return None
            elif sep == "/" or rest[0] not in node.names:
                return None
        elif dot and k == len(bases):
            # ``measure.py``, ``pipeline.release_fleet``; never ``fleet.parquet`` (a data file beside a module)
            attr = last_ext.split(".")[0]
            if attr in DATA_SUFFIXES or (attr != "py" and not node.is_package and attr not in node.names):
                return None
            if attr == "py" and not suffix_ok:
                return None
        new = node.new.split(".")
        out = [*new, *rest]
        if dot:
            out[-1] = f"{out[-1]}.{last_ext}"
        return out

    # --- the patterns -----------------------------------------------------------------------------------------
    _DOTTED = re.compile(r"(?<![\w.])urbandp(?:\.[A-Za-z_]\w*)+")
    _FROM = re.compile(r"\bfrom\s+(urbandp(?:\.\w+)*)\s+import\s+(\([^)]*\)|(?:[^\n\\]|\\\n)*)")
    _IMPORT = re.compile(r"\bimport\s+(urbandp(?:\.\w+)+)")
    _TEMPLATE = re.compile(r"(?<![\w.])urbandp((?:\.(?:[A-Za-z_]\w*|\{[^{}]*\}))+)")
    _PATH = re.compile(
        r"(?<![\w.\-/$~])(?:src/)?(?:urbandp/)?(?:[A-Za-z_]\w*/)+(?:[A-Za-z_][\w]*(?:\.\w+)*)?"
    )
    _PYFILE = re.compile(r"(?<![\w.\-/$~])[A-Za-z_]\w*\.py\b")
    _SHORT = re.compile(r"(?<![\w.\-/$~])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
    _SPLIT_PATH = re.compile(r"""(["'])([A-Za-z_]\w*)\1(\s*/\s*)(["'])([A-Za-z_]\w*)\.py\4""")

    def imports(self, text: str) -> str:
        """``from urbandp.x import y`` where ``urbandp.x.y`` is a renamed module: ``import _y as y``."""

        def fix_names(m: re.Match[str]) -> str:
            base = m.group(1)
            out = []
            for line in m.group(2).split("\n"):
                code, hash_, comment = line.partition("#")
                code = re.sub(
                    r"(?<![\w.\\])([A-Za-z_]\w*)(\s+as\s+\w+)?", lambda n: self._alias(base, n), code
                )
                out.append(code + hash_ + comment)
            return m.group(0)[: m.start(2) - m.start(0)] + "\n".join(out)

        return self._FROM.sub(fix_names, text)

    def _alias(self, base: str, m: re.Match[str]) -> str:
        name, alias = m.group(1), m.group(2)
        if name in ("as", "import"):
            return m.group(0)
        rel = base[len(PACKAGE) + 1 :] if base != PACKAGE else ""
        node = self.nodes.get(f"{rel}.{name}" if rel else name)
        if node is None or node.moved:
            return m.group(0)
        if rel in self.exports and name in self.exports[rel]:
            return m.group(0)  # the package's public name, not its module
        new_leaf = node.new.rpartition(".")[2]
        return f"{new_leaf}{alias}" if alias else f"{new_leaf} as {name}"

    def code(self, text: str) -> str:
        """Dotted names anywhere (code and strings), imports, f-string templates."""
        for m in self._CONCAT.finditer(text):
            self.warnings.append(f"module name built by concatenation ({m.group(0)!r}): check it by hand")
        text = self.imports(text)
        text = self._IMPORT.sub(lambda m: "import " + self.dotted(m.group(1), import_stmt=True), text)
        text = self._FROM_BASE.sub(lambda m: m.group(1) + self.dotted(m.group(2), import_stmt=True), text)
        text = self._DOTTED.sub(lambda m: self.dotted(m.group(0)), text)
        return self._TEMPLATE.sub(self._template, text)

    _CONCAT = re.compile(r"""["']urbandp(?:\.\w+)*\.["']\s*\+""")
    _FROM_BASE = re.compile(r"(\bfrom\s+)(urbandp(?:\.\w+)+)(?=\s+import\b)")

    def _template(self, m: re.Match[str]) -> str:
        """``f"urbandp.{wing}.cli"``: rewritten when every module it can name is renamed alike. A placeholder is
        taken to range over public names (the wings), never over a renamed one."""
        whole = m.group(0)
        if "{" not in whole:
            return whole
        comps = re.findall(r"\{[^{}]*\}|[A-Za-z_]\w*", m.group(1))
        results, hidden = set(), False
        known = {old for old, _, _, _ in self._all_modules()}
        for old, new, is_package, names in self._all_modules():
            cand = old.split(".")
            if len(cand) > len(comps) or (len(cand) < len(comps) and not is_package):
                continue
            if len(cand) < len(comps):
                following = comps[len(cand)]
                if following.startswith("{"):
                    pass
                elif following not in names or f"{old}.{following}" in known:
                    continue  # not in this package, or a module of it that is a candidate of its own
            if not all(c.startswith("{") or c == o for c, o in zip(comps, cand, strict=False)):
                continue
            renamed = [*new.split("."), *comps[len(cand) :]]
            if any(c.startswith("{") and r != o for c, r, o in zip(comps, renamed, cand, strict=False)):
                hidden = True  # a placeholder would have to take a renamed value
                continue
            results.add(tuple(c if c.startswith("{") else r for c, r in zip(comps, renamed, strict=True)))
        if hidden and not comps[0].startswith("{"):
            literal = [c for c in comps if not c.startswith("{")]
            package = ".".join(literal[: comps.index(next(c for c in comps if c.startswith("{")))])
            self.dynamic.append((package, whole))
            self.warnings.append(
                f"dynamic module name {whole!r}: the module names it takes, written as strings in the same file, "
                "are renamed; check it"
            )
            return whole
        if len(results) == 1:
            return "urbandp." + ".".join(next(iter(results)))
        if len(results) > 1:
            self.warnings.append(f"dynamic module name {whole!r} may name renamed modules: check it by hand")
        return whole

    def _all_modules(self) -> Iterator[tuple[str, str, bool, frozenset[str]]]:
        """(old, new, is_package, names inside) for every module the tool knows: renamed nodes and the public
        ones."""
        for node in self.nodes.values():
            yield node.old, node.new, node.is_package, node.names
        for rel, path, is_package in _walk_nodes(self.pkg):
            if rel not in self.nodes and not rel.rpartition(".")[2].startswith("_"):
                yield rel, rel, is_package, _names(path, is_package)

    def prose(self, text: str) -> str:
        """Paths and short mentions, in docstrings, comments and documents."""
        text = _aligned_sub(self._PATH, self._path, text)
        text = _aligned_sub(self._PYFILE, self._path, text)
        return _aligned_sub(self._SHORT, self._short_dotted, text)

    def _split_path(self, m: re.Match[str]) -> str:
        q, pkg, sep, q2, mod = m.groups()
        out = self.short([pkg, f"{mod}.py"], "/", anchored=False, suffix_ok=True)
        if out is None or len(out) != 2:
            return m.group(0)
        return f"{q}{out[0]}{q}{sep}{q2}{out[1]}{q2}"

    def _path(self, token: str) -> str:
        comps = token.split("/")
        head: list[str] = []
        anchored = False
        if PACKAGE in comps[:-1]:
            i = comps.index(PACKAGE)
            head, comps, anchored = comps[: i + 1], comps[i + 1 :], True
        trailing = comps and comps[-1] == ""
        body = comps[:-1] if trailing else comps
        if not body or (not anchored and body[0] not in self.packages and len(body) > 1):
            return token
        out = self.short(body, "/", anchored=anchored, suffix_ok=True)
        if out is None:
            return token
        return "/".join([*head, *out, *([""] if trailing else [])])

    def _short_dotted(self, token: str) -> str:
        comps = token.split(".")
        if comps[0] == PACKAGE:
            return token  # handled as a dotted name
        if len(comps) < 2:
            return token
        if comps[0] not in self.packages and self.nodes.get(comps[0]) is None:
            return token
        out = self.short(comps, ".", anchored=False, suffix_ok=False)
        return ".".join(out) if out is not None else token

    # --- files ------------------------------------------------------------------------------------------------
    def python(self, text: str) -> str:
        """A Python file: dotted names everywhere; paths and short mentions in strings and comments only."""
        self.dynamic = []
        text = self._SPLIT_PATH.sub(self._split_path, self.code(text))
        for package, template in set(self.dynamic):
            text = self._leaf_strings(text, package, template)
        spans = _string_and_comment_spans(text)
        if spans is None:
            return text
        out, last = [], 0
        for start, end in spans:
            out.append(text[last:start])
            out.append(self.prose(text[start:end]))
            last = end
        out.append(text[last:])
        return "".join(out)

    def _leaf_strings(self, text: str, package: str, template: str) -> str:
        """The module names a template takes (``"rr_release"`` beside ``f"urbandp.survey.{module}"``), renamed
        within the statement that holds the template only."""
        try:
            body = ast.parse(text).body
        except SyntaxError:
            return text
        lines = text.splitlines(keepends=True)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
        for statement in reversed(body):
            a, b = starts[statement.lineno - 1], starts[statement.end_lineno or statement.lineno]
            if template in text[a:b]:
                fixed = re.sub(
                    r"""(["'])([A-Za-z_]\w*)\1""", lambda m: self._leaf_string(package, m), text[a:b]
                )
                text = text[:a] + fixed + text[b:]
        return text

    def _leaf_string(self, package: str, m: re.Match[str]) -> str:
        """``"rr_release"`` beside ``f"urbandp.survey.{module}"``: the module's new leaf."""
        node = self.nodes.get(f"{package}.{m.group(2)}")
        if node is None or node.moved:
            return m.group(0)
        return f"{m.group(1)}{node.new.rpartition('.')[2]}{m.group(1)}"

    def document(self, text: str) -> str:
        return self.prose(self.code(text))


def _aligned_sub(pattern: re.Pattern[str], fix: Callable[[str], str], text: str) -> str:
    """``pattern.sub`` with ``fix``, keeping a column after the name in place: a name that grows by n characters
    and is followed by at least n + 2 spaces (a table in a code block) takes n of them."""
    out, last = [], 0
    for m in pattern.finditer(text):
        new = fix(m.group(0))
        grown = len(new) - len(m.group(0))
        after = m.end()
        if grown > 0 and text.startswith(" " * (grown + 2), after):
            after += grown
        out.append(text[last : m.start()] + new)
        last = after
    out.append(text[last:])
    return "".join(out)


def _string_and_comment_spans(text: str) -> list[tuple[int, int]] | None:
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    spans = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.STRING, tokenize.COMMENT) or tok.type == getattr(
                tokenize, "FSTRING_MIDDLE", -1
            ):
                start = offsets[tok.start[0] - 1] + tok.start[1]
                end = offsets[tok.end[0] - 1] + tok.end[1]
                spans.append((start, end))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return spans


def text_files(root: Path) -> Iterator[Path]:
    for name in TOP_FILES:
        if (root / name).is_file():
            yield root / name
    for top in ROOTS:
        base = root / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if any(part in SKIP_DIRS for part in path.relative_to(root).parts[:-1]) or not path.is_file():
                continue
            if path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES or (top == ".ci" and not path.suffix):
                yield path


@dataclass
class Result:
    moves: list[tuple[str, str]] = field(default_factory=list)
    rewritten: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def run(root: Path, *, dry_run: bool = False, say: Callable[[str], None] = print) -> Result:
    """Move the modules and rewrite the references under ``root`` (a checkout of urbandp)."""
    src = root / "src"
    nodes = plan_renames(src)
    rewriter = Rewriter(nodes, src)
    result = Result()
    clash = _clashes(nodes)
    if clash:
        for line in clash:
            say(f"error: {line}")
        raise SystemExit("make_private: nothing changed (fix the table first)")
    known = {n.old for n in nodes}
    for old, (new, _) in RENAMES.items():
        if old not in known:
            say(
                f"note: urbandp.{old} is not in this tree (nor urbandp.{new}): its row of the table is skipped"
            )
    changed_py: list[Path] = []
    for path in text_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if SKIP_MARK in text:
            continue
        new = rewriter.python(text) if path.suffix in (".py", ".pyi") else rewriter.document(text)
        if new != text:
            rel = path.relative_to(root).as_posix()
            result.rewritten[rel] = sum(
                a != b for a, b in zip(text.splitlines(), new.splitlines(), strict=False)
            )
            say(f"rewrote {rel} ({result.rewritten[rel]} lines)")
            if not dry_run:
                path.write_text(new, encoding="utf-8")
                if path.suffix == ".py":
                    changed_py.append(path)
    for w in sorted(set(rewriter.warnings)):
        result.warnings.append(w)
        say(f"warning: {w}")
    for node in sorted((n for n in nodes if not n.moved), key=lambda n: n.old.count("."), reverse=True):
        target = node.path.with_name(node.new.rpartition(".")[2] + ("" if node.is_package else ".py"))
        result.moves.append((node.path.relative_to(root).as_posix(), target.relative_to(root).as_posix()))
        say(f"git mv {result.moves[-1][0]} {result.moves[-1][1]}")
        if not dry_run:
            _move(root, node.path, target)
    if changed_py and not dry_run:
        _tidy(root, [p if p.exists() else _moved_path(p, nodes, root) for p in changed_py], say)
    if not dry_run:
        say(f"make_private: {len(result.moves)} module(s) moved, {len(result.rewritten)} file(s) rewritten")
    return result


def _clashes(nodes: list[Node]) -> list[str]:
    """Two modules given one new name, or a new name already taken by a module that stays."""
    found = []
    targets: dict[str, str] = {}
    for node in nodes:
        if node.moved:
            continue
        if node.new in targets:
            found.append(
                f"urbandp.{node.old} and urbandp.{targets[node.new]} would both become urbandp.{node.new}"
            )
        targets[node.new] = node.old
        taken = node.path.with_name(node.new.rpartition(".")[2] + ("" if node.is_package else ".py"))
        if taken.exists() or taken.with_suffix("").is_dir() or taken.with_suffix(".py").exists():
            found.append(f"urbandp.{node.new} exists already: urbandp.{node.old} cannot take its name")
    return found


def _moved_path(path: Path, nodes: list[Node], root: Path) -> Path:
    for node in nodes:
        if node.moved:
            continue
        if path == node.path:
            return node.path.with_name(node.new.rpartition(".")[2] + ".py")
        if node.is_package and node.path in path.parents:
            new_dir = node.path.with_name(node.new.rpartition(".")[2])
            return new_dir / path.relative_to(node.path)
    return path


def _move(root: Path, old: Path, new: Path) -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "--error-unmatch", str(old)], cwd=root, capture_output=True, check=False
    )
    if tracked.returncode == 0:
        subprocess.run(["git", "mv", str(old), str(new)], cwd=root, check=True)
    else:
        shutil.move(str(old), str(new))


def _tidy(root: Path, files: list[Path], say: Callable[[str], None]) -> None:
    """Re-sort the imports (a ``_`` changes their order) and re-format the rewritten Python files with ruff."""
    places = [Path(sys.executable).parent / "ruff", root / ".venv" / "bin" / "ruff"]
    ruff = next((str(p) for p in places if p.exists()), None) or shutil.which("ruff")
    if ruff is None:
        say(
            "warning: ruff not found: run `ruff check --select I --fix` and `ruff format` on the rewritten files"
        )
        return
    names = [str(p) for p in files if p.exists()]
    subprocess.run([ruff, "check", "--select", "I", "--fix", "--quiet", *names], cwd=root, check=False)
    subprocess.run([ruff, "format", "--quiet", *names], cwd=root, check=False)
    say(f"ruff: imports sorted and formatted in {len(names)} file(s)")


def table_markdown(root: Path) -> str:
    """The renames as a markdown table (old module -> new module, and why)."""
    rows = ["| old module | new module | why |", "|---|---|---|"]
    for node in sorted(plan_renames(root / "src"), key=lambda n: n.old):
        kind = " (package)" if node.is_package else ""
        rows.append(f"| `urbandp.{node.old}`{kind} | `urbandp.{node.new}` | {node.why} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print what would change; change nothing")
    mode.add_argument("--check", action="store_true", help="exit 1 if anything would change")
    mode.add_argument("--table", action="store_true", help="print the renames as a markdown table")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if not (root / "src" / PACKAGE / "__init__.py").exists():
        print(f"make_private: error: no src/{PACKAGE} under {root}", file=sys.stderr)
        return 2
    if args.table:
        print(table_markdown(root))
        return 0
    result = run(root, dry_run=args.dry_run or args.check, say=(lambda s: None) if args.check else print)
    if args.check:
        changes = len(result.moves) + len(result.rewritten)
        print(f"make_private: {changes} change(s) pending" if changes else "make_private: nothing to change")
        return 1 if changes else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
