"""`urbandp map` on a `sensing pm-map` release: the same map page as the fleet's (:mod:`urbandp._reports.map`, one
template), drawn on the release's square grid, the legend in ug/m3.

Post-processing of the published folder only (``pm_grid.csv``, ``pm_cells.csv``, ``privacy.json``): no true reading
is read and no budget is spent. Each cell of each window is coloured by the map's value (``pm``). Uncertainty is
shown as on the fleet map, by hatching: a cell whose count is clear of its noise carries the 95% interval of the
noise of its own mean (``pm +- 1.96 mean_pm_noise_sd``, wider than the shrunk value's own, so on the safe side) and
is hatched when that interval is wider than one band of India's AQI for PM2.5 (:data:`AQI_BAND`); a cell without
a clear count holds no measurement (its value is the smoother's), so its interval is the whole public range
[0, clip] and it is always hatched.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from urbandp._reports.map import LatLon, MapHeader, TileSource, write_hat_map
from urbandp.errors import InputError

AQI_BAND = 30.0
"""ug/m3: the width of a band of India's National AQI for PM2.5 (0-30 good, 31-60 satisfactory, 61-90 moderate,
91-120 poor). A cell whose 95% interval is wider than a band cannot say which band it is in: it is hatched."""
Z95 = 1.959963984540054
LEGEND = "PM2.5, mean over the window (ug/m3)"
TITLE = "PM2.5 map (differentially private)"
PUBLISHED = ("pm_grid.csv", "pm_cells.csv", "privacy.json")


def _read(release_dir: Path) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """pm_grid.csv, pm_cells.csv and privacy.json of a pm-map folder, or one-line errors."""
    import json

    for name in PUBLISHED:
        if not (release_dir / name).is_file():
            raise InputError(f"{release_dir}: no {name} (is this the folder 'urbandp sensing pm-map' wrote?)")
    try:
        privacy = json.loads((release_dir / "privacy.json").read_text(encoding="utf-8"))
        grid = pl.read_csv(release_dir / "pm_grid.csv", infer_schema_length=None)
        cells = pl.read_csv(release_dir / "pm_cells.csv", infer_schema_length=None)
    except (OSError, UnicodeDecodeError, ValueError, pl.exceptions.PolarsError) as err:
        raise InputError(
            f"{release_dir}: not a readable pm-map release ({str(err).splitlines()[0]})"
        ) from None
    if not isinstance(privacy, dict) or not isinstance(privacy.get("grid"), dict):
        raise InputError(f"{release_dir / 'privacy.json'}: not the privacy.json of a pm-map release")
    return grid, cells, privacy


def pm_frame(grid: pl.DataFrame, cells: pl.DataFrame, clip: float) -> pl.DataFrame:
    """The map page's table: ``h3_cell`` (the grid's cell id), ``slot`` (the window), the value and its interval
    (see the module docstring)."""
    joined = grid.join(
        cells.select("window", "cell_id", "mean_pm_noise_sd", "count_clear_of_noise"),
        on=["window", "cell_id"],
        how="left",
    )
    clear = pl.col("count_clear_of_noise").cast(pl.Boolean, strict=False).fill_null(False)
    half = Z95 * pl.col("mean_pm_noise_sd").cast(pl.Float64)
    measured = clear & half.is_not_null()
    return joined.select(
        pl.col("cell_id").cast(pl.String).alias("h3_cell"),
        pl.col("window").cast(pl.String).alias("slot"),
        pl.col("pm").cast(pl.Float64),
        pl.when(measured).then((pl.col("pm") - half).clip(0.0, clip)).otherwise(0.0).alias("ci95_low"),
        pl.when(measured).then((pl.col("pm") + half).clip(0.0, clip)).otherwise(clip).alias("ci95_high"),
    )


def cell_rings(privacy: Mapping[str, Any], ids: Sequence[int]) -> dict[str, list[LatLon]]:
    """Each cell's outline (its four corners) on the public grid privacy.json states."""
    import numpy as np

    from urbandp.sensing._grid import SquareGrid

    g = privacy["grid"]
    try:
        la0, lo0, la1, lo1 = (float(v) for v in g["bbox"])
        grid = SquareGrid(la0, lo0, la1, lo1, float(g["cell_metres"]))
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(f"privacy.json: grid bbox and cell_metres unusable ({err})") from None
    lat, lon = grid.cell_corners(np.asarray(ids, dtype=np.int64))
    return {
        str(i): [(round(float(a), 6), round(float(b), 6)) for a, b in zip(la, lo, strict=True)]
        for i, la, lo in zip(ids, lat, lon, strict=True)
    }


def pm_header(privacy: Mapping[str, Any]) -> MapHeader:
    """The page's header from privacy.json: the label, the unit and epsilon per unit, or NOT DP with reasons."""
    unit = str(privacy.get("privacy_unit", "one reading"))
    eps = privacy.get("epsilon_per_unit")
    windows = privacy.get("windows", {})
    details = (
        f"Laplace noise (OpenDP) on the count and the clipped sum of every cell of every window; the map is "
        f"post-processing. {windows.get('count', '?')} window(s) of {windows.get('minutes', '?')} minutes from "
        f"{windows.get('start', '?')}. Hatched: the 95% interval is wider than {AQI_BAND:g} ug/m3 (one AQI band), "
        "or the cell has no clear count (its value is the smoother's)."
    )
    reasons = [str(r) for r in privacy.get("not_dp_reasons", []) or []]
    if reasons or not privacy.get("differentially_private", False):
        return MapHeader("notdp", "NOT differentially private: " + "; ".join(reasons), details)
    eps_text = f"{eps:.4g}" if isinstance(eps, (int, float)) else "not stated"
    statement = (
        f"{privacy.get('dp_label', 'DP')}; privacy unit: {unit}. epsilon {eps_text} per unit over the whole "
        "release (the windows hold disjoint readings and compose in parallel)."
    )
    return MapHeader("dp", statement, details)


def write_pm_site(
    release_dir: Path, out: Path, *, tiles: TileSource | None, gtfs: Path | None, context: Sequence[Path]
) -> dict[str, Path]:
    """index.html (the map) and the published files of a pm-map release, in a folder to upload as is; ``tiles``,
    ``gtfs`` and ``context`` as `urbandp map` reads them (:func:`urbandp._reports.map.map_inputs`)."""
    from urbandp._outputs import atomic_output_dir

    release_dir = Path(release_dir)
    grid, cells, privacy = _read(release_dir)
    clip = float(privacy.get("clip", {}).get("high", 250.0))
    frame = pm_frame(grid, cells, clip)
    ids = sorted({int(c) for c in frame["h3_cell"].to_list()})
    with atomic_output_dir(out) as d:
        write_hat_map(
            frame,
            d.release / "index.html",
            value_col="pm",
            title=TITLE,
            legend=LEGEND,
            header=pm_header(privacy),
            interval_threshold=AQI_BAND,
            gtfs_dir=gtfs,
            context=context,
            tiles=tiles,
            cell_rings=cell_rings(privacy, ids),
            cell_word="square",
        )
        for name in PUBLISHED:
            shutil.copyfile(release_dir / name, d.release / name)
    return {n: Path(out) / n for n in ("index.html", *PUBLISHED)}
