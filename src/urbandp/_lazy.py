"""A package's public names imported on first use (PEP 562 module ``__getattr__`` and ``__dir__``).

Importing a package then costs nothing beyond its own module: the command line registers every wing's commands
without loading Polars, OpenDP or the release code of the wings a command does not touch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_names(
    package: str, home: Mapping[str, str], public: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: each name of ``home`` is read from its module (the
    value, a full module name) when first asked for; ``dir()`` lists the ``public`` names."""
    names = sorted(set(public))

    def __getattr__(name: str) -> Any:
        if name in home:
            return getattr(importlib.import_module(home[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return names

    return __getattr__, __dir__
