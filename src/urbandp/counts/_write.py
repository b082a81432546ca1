"""Write a :class:`CountRelease` as long tables (CSV or Parquet) plus ``privacy.json``.

:func:`release_tables` (the tables of a release) is what :func:`urbandp.counts.release` uses; :func:`_write_release`
is internal (it writes whatever release it is given): the public way to write a release is ``CountsRelease.write``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from urbandp._outputs import write_json
from urbandp._privacy.report import write_privacy_json
from urbandp.counts._domain import CountDomain
from urbandp.counts._table_release import CountRelease


def _grid(names: list[str], cats: list[list[str]]) -> pl.DataFrame:
    """Cartesian product of categories in C order (the first name varies slowest)."""
    sizes = [len(c) for c in cats]
    idx = np.indices(sizes).reshape(len(sizes), -1)
    return pl.DataFrame(
        {
            n: pl.Series(n, c, dtype=pl.String).gather(idx[i])
            for i, (n, c) in enumerate(zip(names, cats, strict=False))
        }
    )


def _with_counts(frame: pl.DataFrame, values: np.ndarray, suppressed: np.ndarray | None) -> pl.DataFrame:
    vals = values.ravel()
    series = pl.Series("count", vals)
    if np.all(np.mod(vals, 1) == 0):
        series = series.cast(pl.Int64)
    frame = frame.with_columns(series)
    if suppressed is not None:
        frame = frame.with_columns(
            pl.when(pl.Series(suppressed.ravel())).then(None).otherwise(pl.col("count")).alias("count")
        )
    return frame


def _published_rows(index: np.ndarray, values: np.ndarray, domain: CountDomain) -> pl.DataFrame:
    """Long rows of the published cells only (sparse sampling: every cell not listed is suppressed)."""
    day, tap, bin_, place = np.unravel_index(index, domain.shape)
    frame = pl.DataFrame(
        {
            "mode": pl.Series([m for m, _ in domain.places], dtype=pl.String).gather(place),
            "day": pl.Series(list(domain.days), dtype=pl.String).gather(day),
            "tap": pl.Series(list(domain.taps), dtype=pl.String).gather(tap),
            "bin": pl.Series(list(domain.bins), dtype=pl.String).gather(bin_),
            "location": pl.Series([loc for _, loc in domain.places], dtype=pl.String).gather(place),
        }
    )
    return _with_counts(frame, values, None)


def release_tables(release: CountRelease, domain: CountDomain) -> dict[str, pl.DataFrame]:
    """``joint``, ``time`` and ``location`` tables; the non-DP Data61 method omits suppressed rows (as Opal did)."""
    place_idx = np.arange(len(domain.places)).astype(str).tolist()
    modes = [m for m, _ in domain.places]
    locs = [loc for _, loc in domain.places]

    def places(frame: pl.DataFrame) -> pl.DataFrame:
        i = frame["place"].cast(pl.Int64)
        return frame.with_columns(mode=pl.Series(modes).gather(i), location=pl.Series(locs).gather(i)).drop(
            "place"
        )

    if release.cells is not None:
        joint = _published_rows(release.cells.index, release.cells.values, domain)
    else:
        assert release.joint is not None
        joint = places(
            _grid(
                ["day", "tap", "bin", "place"],
                [list(domain.days), list(domain.taps), list(domain.bins), place_idx],
            )
        )
        joint = _with_counts(
            joint.select("mode", "day", "tap", "bin", "location"), release.joint, release.suppressed
        )
    time = _grid(
        ["day", "tap", "bin", "mode"],
        [list(domain.days), list(domain.taps), list(domain.bins), list(domain.modes)],
    )
    time = _with_counts(time.select("mode", "day", "tap", "bin"), release.time, release.time_suppressed)
    loc = places(_grid(["day", "tap", "place"], [list(domain.days), list(domain.taps), place_idx]))
    loc = _with_counts(
        loc.select("mode", "day", "tap", "location"), release.location, release.location_suppressed
    )
    tables = {"joint": joint, "time": time, "location": loc}
    if release.privacy.get("method") == "data61-2016":
        tables = {k: v.filter(pl.col("count").is_not_null()) for k, v in tables.items()}
    if release.top_k is not None:
        tables["top_k"] = pl.DataFrame(
            {
                "rank": list(range(1, len(release.top_k) + 1)),
                "mode": [modes[i] for i in release.top_k],
                "location": [locs[i] for i in release.top_k],
            }
        )
    return tables


def _write_release(
    release: CountRelease, domain: CountDomain, out: Path, fmt: str = "csv"
) -> dict[str, Path]:
    """Write the tables, ``privacy.json`` and ``domain.json`` (strict JSON) into the directory ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = write_tables(release_tables(release, domain), out, fmt)
    write_privacy_json(out, release.privacy)
    write_json(out / "domain.json", domain.to_json())
    written["privacy"] = out / "privacy.json"
    return written


def write_tables(tables: dict[str, pl.DataFrame], directory: Path, fmt: str) -> dict[str, Path]:
    """Each table as ``<name>.<fmt>`` (``csv`` or ``parquet``) in ``directory``; the files by table name."""
    written: dict[str, Path] = {}
    for name, table in tables.items():
        written[name] = path = directory / f"{name}.{fmt}"
        if fmt == "parquet":
            table.write_parquet(path)
        else:
            table.write_csv(path)
    return written
