"""Read tap events (or pre-aggregated counts), quarantine bad rows, bound contributions, build the dense joint.

docs/design.md: the record-level stage is the only one that touches every row (Polars). Rows outside the public domain
are quarantined with a reason, one per row (dropping them is a per-row rule, not a data-dependent choice).
Card-day bounding (truncation to a card's first ``k`` taps of a day and at most ``m`` taps per cell) is a stable
transformation, so the sensitivities in :mod:`urbandp.counts._units` hold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from urbandp.counts._columns import fill_daily_bin, normalise_days
from urbandp.counts._domain import CountDomain
from urbandp.counts._sparse import SparseJoint
from urbandp.counts._units import PrivacyUnit
from urbandp.errors import InputError

EVENT_COLUMNS = ("mode", "timestamp", "tap", "location")
COUNT_COLUMNS = ("mode", "day", "tap", "bin", "location", "count")


#: a count above this is quarantined: (10^12 taps in one row), and int64 sums of many such rows could overflow
MAX_COUNT = 2**40


@dataclass
class JointCounts:
    """Raw joint counts (sparse: non-zero cells only) in the domain's layout, plus what was quarantined."""

    sparse: SparseJoint
    quarantine: pl.DataFrame  # original columns + reason
    n_input_rows: int
    n_truncated: int = 0

    @property
    def counts(self) -> np.ndarray:
        """The dense joint (int64, ``domain.shape``); allocates one int64 per cell of the domain."""
        return self.sparse.to_dense()

    @property
    def total(self) -> int:
        return int(self.sparse.counts.sum())


def _sparse_from_cells(cells: np.ndarray, weights: np.ndarray | None, domain: CountDomain) -> SparseJoint:
    """Sum ``weights`` (default 1) per flat cell index into a :class:`SparseJoint` (no dense allocation)."""
    if cells.size == 0:
        return SparseJoint(domain.shape, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    frame = pl.DataFrame(
        {"cell": cells.astype(np.int64), "w": np.ones(cells.size, np.int64) if weights is None else weights}
    )
    grouped = frame.group_by("cell").agg(pl.col("w").sum()).filter(pl.col("w") > 0).sort("cell")
    return SparseJoint(domain.shape, grouped["cell"].to_numpy(), grouped["w"].to_numpy().astype(np.int64))


def _require(df: pl.DataFrame, cols: tuple[str, ...], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise InputError(f"{what} is missing column(s) {', '.join(missing)} (has {', '.join(df.columns)})")


def _lookup(name: str, values: tuple[str, ...]) -> pl.DataFrame:
    return pl.DataFrame({name: list(values), f"{name}_idx": np.arange(len(values), dtype=np.int64)})


def _index_rows(df: pl.DataFrame, domain: CountDomain) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Attach the flat cell index; split rows into (in-domain, quarantined-with-reason)."""
    places = pl.DataFrame(
        {
            "mode": [m for m, _ in domain.places],
            "location": [loc for _, loc in domain.places],
            "place_idx": np.arange(len(domain.places), dtype=np.int64),
        }
    )
    df = (
        df.join(_lookup("day", domain.days), on="day", how="left")
        .join(_lookup("tap", domain.taps), on="tap", how="left")
        .join(places, on=["mode", "location"], how="left")
    )
    reason = (
        pl.when(pl.col("_bad").is_not_null())
        .then(pl.col("_bad"))
        .when(pl.col("day_idx").is_null())
        .then(pl.lit("day not in the public domain"))
        .when(pl.col("tap_idx").is_null())
        .then(pl.lit("tap not in the public domain"))
        .when(pl.col("place_idx").is_null())
        .then(pl.lit("(mode, location) not in the public domain"))
        .when(pl.col("bin_idx").is_null())
        .then(pl.lit("time bin not in the public domain"))
    )
    df = df.with_columns(reason=reason)
    _, t, b, p = domain.shape
    good = df.filter(pl.col("reason").is_null()).with_columns(
        cell=((pl.col("day_idx") * t + pl.col("tap_idx")) * b + pl.col("bin_idx")) * p + pl.col("place_idx")
    )
    bad = df.filter(pl.col("reason").is_not_null())
    return good, bad


def place_events(
    df: pl.DataFrame, domain: CountDomain, unit: PrivacyUnit
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Each event's local wall-clock time ``_ts``, ``day`` and time bin, placed in the public domain: (in-domain,
    quarantined with a reason). The row-wise step of every engine (the Spark one runs it on each batch)."""
    ts = pl.col("timestamp")
    if df.schema["timestamp"] == pl.String:
        # local wall-clock time decides the day and the bin: a trailing UTC offset ("+10:00", "Z") is dropped
        ts = (
            ts.str.strip_chars()
            .str.replace(r"(Z|[+-]\d{2}:?\d{2})$", "")
            .str.to_datetime(strict=False, time_unit="us")
        )
    try:
        df = df.with_columns(_ts=ts)
        if df.schema["_ts"] != pl.Datetime("us"):
            df = df.with_columns(pl.col("_ts").dt.replace_time_zone(None).cast(pl.Datetime("us")))
    except pl.exceptions.PolarsError as err:
        raise InputError(f"timestamp column is not a date-time: {str(err).splitlines()[0]}") from None
    minutes = pl.col("_ts").dt.hour().cast(pl.Int64) * 60 + pl.col("_ts").dt.minute().cast(pl.Int64)
    df = df.with_columns(
        day=pl.col("_ts").dt.date().cast(pl.String),
        bin_idx=minutes // domain.bin_minutes,
        _bad=pl.when(pl.any_horizontal([pl.col(c).is_null() for c in EVENT_COLUMNS]))
        .then(pl.lit("missing value"))
        .when(pl.col("_ts").is_null())
        .then(pl.lit("unparsable timestamp")),
    )
    if unit.kind == "card-day":
        df = df.with_columns(
            _bad=pl.when(pl.col("_bad").is_null() & pl.col("card_id").is_null())
            .then(pl.lit("missing card_id"))
            .otherwise(pl.col("_bad"))
        )
    return _index_rows(df, domain)


def joint_from_events(df: pl.DataFrame, domain: CountDomain, unit: PrivacyUnit) -> JointCounts:
    """Events ``mode, timestamp, tap, location[, card_id]`` -> dense joint counts (bounded per ``unit``)."""
    _require(df, EVENT_COLUMNS + (("card_id",) if unit.kind == "card-day" else ()), "event input")
    n_input = df.height
    original = list(df.columns)
    good, bad = place_events(df.with_row_index("_row"), domain, unit)
    n_truncated = 0
    if unit.kind == "card-day":
        good = good.sort(["card_id", "day", "_ts", "_row"])
        rank_day = pl.int_range(pl.len()).over(["card_id", "day"])
        good = good.filter(rank_day < unit.max_events)
        good = good.filter(pl.int_range(pl.len()).over(["card_id", "day", "cell"]) < unit.max_per_cell)
        n_truncated = n_input - bad.height - good.height
    sparse = _sparse_from_cells(good["cell"].to_numpy(), None, domain)
    quarantine = bad.select([*original, "reason"]).with_columns(pl.all().cast(pl.String))
    return JointCounts(sparse, quarantine, n_input, n_truncated)


def joint_from_counts(df: pl.DataFrame, domain: CountDomain) -> JointCounts:
    """Pre-aggregated ``mode, day, tap, bin, location, count`` -> dense joint (the unit is declared, not checked).

    A day may be written ``20160814`` (Opal's form); a table without a ``bin`` column is a daily table, read over
    a domain of one bin a day (:mod:`urbandp.counts._columns`)."""
    df = fill_daily_bin(df, domain)
    _require(df, COUNT_COLUMNS, "count input")
    original = list(df.columns)
    bins = _lookup("bin", domain.bins)
    df = df.with_columns(pl.col(c).cast(pl.String) for c in COUNT_COLUMNS).with_row_index("_row")
    df = df.with_columns(day=normalise_days(pl.col("day")))
    # counts are read as text: "12" is a count; "-2.8e19", "1e30", "3.5" or an int64 overflow become null -> quarantine
    n = pl.col("count").str.strip_chars().cast(pl.Int64, strict=False)
    df = df.join(bins, on="bin", how="left").with_columns(_n=n)
    df = df.with_columns(
        _bad=pl.when(pl.any_horizontal([pl.col(c).is_null() for c in COUNT_COLUMNS]))
        .then(pl.lit("missing value"))
        .when(pl.col("_n").is_null() | (pl.col("_n") < 0))
        .then(pl.lit("count is not a non-negative integer"))
        .when(pl.col("_n") > MAX_COUNT)
        .then(pl.lit(f"count above {MAX_COUNT} (not a plausible tap count)"))
    )
    good, bad = _index_rows(df, domain)
    sparse = _sparse_from_cells(good["cell"].to_numpy(), good["_n"].to_numpy().astype(np.int64), domain)
    quarantine = bad.select([*original, "reason"]).with_columns(pl.all().cast(pl.String))
    return JointCounts(sparse, quarantine, df.height)
