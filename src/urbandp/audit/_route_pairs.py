"""Build ``a, b`` pairs for the noise-scale attack from a published table.

A route ``mode:FROM>TO`` pairs the tap-ons at ``FROM`` in one time bin with the tap-offs at ``TO`` ``lag`` bins
later (Culnane et al. 2017, section 2: the Manly ferry, 30 minutes, automatic tap-off). Daily tables pair the
same day and ignore the lag: a table without a bin column (Opal's daily file), or whose every bin is ``00:00``
(urbandp's release over a domain of one 1440-minute bin a day).
"""

from __future__ import annotations

import polars as pl

from urbandp.errors import InputError


def parse_route(route: str) -> tuple[str, str, str]:
    try:
        mode, rest = route.split(":", 1)
        origin, dest = rest.split(">", 1)
    except ValueError:
        raise InputError(
            f"route must look like 'ferry:Manly Wharf>Circular Quay No. 3 Wharf', got {route!r}",
            parameters="route",
        ) from None
    return mode.strip(), origin.strip(), dest.strip()


def _minutes(col: pl.Expr) -> pl.Expr:
    t = col.str.strptime(pl.Time, "%H:%M", strict=False)
    return t.dt.hour().cast(pl.Int64) * 60 + t.dt.minute().cast(pl.Int64)


def _shift_bin(col: pl.Expr, minutes: int) -> pl.Expr:
    total = _minutes(col) + minutes
    return pl.format(
        "{}:{}", (total // 60).cast(pl.String).str.zfill(2), (total % 60).cast(pl.String).str.zfill(2)
    )


def is_daily(table: pl.DataFrame) -> bool:
    """Whether ``table`` counts whole days: no ``bin`` column, or ``00:00`` as its only bin (one bin a day)."""
    if "bin" not in table.columns:
        return True
    bins = table["bin"].drop_nulls().cast(pl.String).str.strip_chars().unique()
    return bins.len() > 0 and bool((bins == "00:00").all())


def route_pairs(table: pl.DataFrame, routes: list[str], lag_minutes: int = 30) -> tuple[pl.DataFrame, int]:
    """Return (``route, day[, bin], a, b`` with ``a`` = tap-on count at origin, ``b`` = tap-off at destination,
    the number of pairs dropped because one side is suppressed/missing)."""
    need = {"mode", "day", "tap", "location", "count"}
    if not need <= set(table.columns):
        raise InputError(f"table needs columns {', '.join(sorted(need))}")
    has_bin = not is_daily(table)
    frames = []
    incomplete = 0
    for r in routes:
        mode, origin, dest = parse_route(r)
        on = table.filter((pl.col("mode") == mode) & (pl.col("tap") == "on") & (pl.col("location") == origin))
        off = table.filter((pl.col("mode") == mode) & (pl.col("tap") == "off") & (pl.col("location") == dest))
        keys = ["day"]
        if has_bin:
            # bins whose partner falls outside the day are not pairs at all (not "missing sides")
            on = on.filter(_minutes(pl.col("bin")) + lag_minutes < 24 * 60)
            off = off.filter(_minutes(pl.col("bin")) >= lag_minutes)
            on = on.with_columns(bin=_shift_bin(pl.col("bin"), lag_minutes))
            keys.append("bin")
        joined = on.select(*keys, a=pl.col("count")).join(
            off.select(*keys, b=pl.col("count")), on=keys, how="full", coalesce=True
        )
        complete = joined.drop_nulls(["a", "b"])
        incomplete += joined.height - complete.height
        frames.append(complete.with_columns(route=pl.lit(r)))
    out = pl.concat(frames) if frames else pl.DataFrame()
    if out.height == 0:
        raise InputError("no pairs found for the given route(s)")
    return out.select(
        "route", *[c for c in out.columns if c not in ("route", "a", "b")], "a", "b"
    ), incomplete
