"""``opendp.prelude`` without its heavy optional extras: the same names, imported in about 0.2 s instead of 2 s.

``opendp.prelude`` imports ``opendp.extras.sklearn`` (which imports scikit-learn), ``extras.numpy``,
``extras.polars`` and the context API on every start-up: about 2 s of a command's fixed cost on this machine
(measured with ``python -X importtime``). The release paths use only the core modules below; any other prelude name
(``dp.Context``, ``dp.polars``, ...) is resolved from ``opendp.prelude`` on first use, so behaviour is unchanged.

Use it exactly like the prelude::

    import urbandp._privacy.dp_prelude as dp
    dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), 1.0)
"""

from __future__ import annotations

from typing import Any

import opendp.combinators as c
import opendp.measurements as m
import opendp.transformations as t
from opendp.domains import *  # noqa: F403
from opendp.measures import *  # noqa: F403
from opendp.metrics import *  # noqa: F403
from opendp.mod import *  # noqa: F403
from opendp.typing import *  # noqa: F403

__all__ = ["c", "m", "t"]


def __getattr__(name: str) -> Any:
    """Any other prelude name (context API, extras): import the full prelude once, on first use."""
    import opendp.prelude as full

    try:
        return getattr(full, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
