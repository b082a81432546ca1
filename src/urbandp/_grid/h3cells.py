"""H3 cells (ITMS report section II C), vectorised through the polars-h3 plugin.

polars-h3 was chosen over h3ronpy on measured evidence (notes/measured-options.md, re-measured here: ~4.3 M
cells/s vs ~3.2 M cells/s) and because it runs inside a lazy Polars plan.
"""

from __future__ import annotations

import polars as pl
import polars_h3 as plh3

from urbandp.errors import InvalidParameterError


def check_resolution(resolution: int) -> int:
    if not 0 <= resolution <= 15:
        raise InvalidParameterError(
            f"resolution must be one of the H3 resolutions 0..15, got {resolution}", parameters="resolution"
        )
    return resolution


def cell_expr(resolution: int, lat: str = "latitude", lon: str = "longitude") -> pl.Expr:
    """UInt64 H3 cell of each (lat, lon)."""
    return plh3.latlng_to_cell(lat, lon, check_resolution(resolution))


def cell_to_string(cell: pl.Expr) -> pl.Expr:
    """Hex string form used in outputs (e.g. ``8742d9d69ffffff``)."""
    return plh3.int_to_str(cell)
