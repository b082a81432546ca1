"""The API reference's list of names, generated from each public package's ``__all__`` (one source).

Each wing's page ``docs/api/<wing>.md`` holds, between ``<!-- gen:api urbandp.<wing> -->`` and ``<!-- /gen -->``,
one mkdocstrings block per name the package lists in ``__all__`` (functions first, then the types), so that a
name added to or removed from ``__all__`` is added to or removed from the reference by running this script.

usage: python docs/gen_api_pages.py [--check]   (--check: exit 1 if a page is out of date, change nothing)
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
BLOCK = re.compile(r"(<!-- gen:api (?P<package>[\w.]+) -->\n)(?P<body>.*?)(<!-- /gen -->)", re.S)


def members(package: str) -> str:
    """The ``:::`` blocks of a package's ``__all__``: functions first, then classes and constants, each in the
    order ``__all__`` gives."""
    names = list(importlib.import_module(package).__all__)
    ordered = [n for n in names if n[:1].islower()] + [n for n in names if not n[:1].islower()]
    return "".join(f"\n::: {package}.{name}\n" for name in ordered) + "\n"


def render(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + members(m.group("package")) + m.group(4), text)


def pages() -> list[Path]:
    return [p for p in sorted((DOCS / "api").glob("*.md")) if BLOCK.search(p.read_text(encoding="utf-8"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page is out of date")
    args = parser.parse_args(argv)
    stale = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        new = render(text)
        if new != text:
            stale.append(page.name)
            if not args.check:
                page.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"out of date: {', '.join(stale)} (run python docs/gen_api_pages.py)", file=sys.stderr)
        return 1
    if stale:
        print(f"wrote {', '.join(stale)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
