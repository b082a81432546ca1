"""A Griffe extension for the API reference (``make docs``): Sphinx roles shown as code, ``::`` as Sphinx shows it.

urbandp's docstrings name other objects the Sphinx way (``:func:`release```, ``:class:`~urbandp.errors.InputError```),
which reads well in ``help()`` and in an editor; mkdocstrings renders the docstrings as Markdown, where such a role
would show raw. This extension rewrites each role to a backticked name before rendering, as Sphinx displays it: the
full dotted name, or its last part when the target starts with ``~``. A literal block's ``::`` (its code is
indented, which Markdown also reads as code) is shown as Sphinx shows it: ``Example::`` as ``Example:``, a ``::``
alone or after a space not at all. Loaded by mkdocs.yml
(``plugins.mkdocstrings.handlers.python.options.extensions``); the docstrings themselves are left as written.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

# :func:`name`, :py:class:`~pkg.Name`, :meth:`title <pkg.Class.method>` (Sphinx's explicit-title form)
ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|type):`(?P<target>[^`]+)`")


def as_code(match: re.Match[str]) -> str:
    """The role's target as Sphinx displays it, in backticks: ``~a.b.c`` -> ``c``, ``title <a.b>`` -> ``title``."""
    target = match.group("target").strip()
    explicit = re.fullmatch(r"(?P<title>.+?)\s*<[^<>]+>", target)
    if explicit:
        return f"`{explicit.group('title')}`"
    if target.startswith("~"):
        return f"`{target[1:].rsplit('.', 1)[-1]}`"
    return f"`{target.lstrip('!')}`"


# a literal block's marker: "::" on its own line, " ::" at the end of a line, "text::" at the end of a line
LITERAL_ALONE = re.compile(r"^[ \t]*::[ \t]*\n", re.M)
LITERAL_AFTER_SPACE = re.compile(r"[ \t]+::[ \t]*$", re.M)
LITERAL_AFTER_TEXT = re.compile(r"(?<=[^\s:])::[ \t]*$", re.M)


def plain_roles(text: str) -> str:
    """``text`` with every Sphinx cross-reference role replaced by its backticked name, and the ``::`` that
    announces a literal block shown as Sphinx shows it."""
    text = ROLE.sub(as_code, text)
    text = LITERAL_ALONE.sub("", text)
    text = LITERAL_AFTER_SPACE.sub("", text)
    return LITERAL_AFTER_TEXT.sub(":", text)


class SphinxRolesAsCode(griffe.Extension):
    """Rewrites the Sphinx roles of every loaded docstring (modules, classes, functions, attributes)."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        """Called by Griffe once per object after the package is loaded."""
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        """The top-level package's own docstring (``on_object`` is not called for it)."""
        self.on_object(obj=pkg, loader=loader)
