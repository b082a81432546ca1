"""What an analyst can use from a release: useful HATs against a public interval-width target, and the
vehicle-day count's interval beside each mean.

Read from the DP outputs only (post-processing): ``useful`` marks a released HAT whose mean is shown (not withheld,
not clamped to 0 or U) and whose 95% interval is at most ``target_width`` km/h wide (``--target-width``, public,
default 10). privacy.json's ``usefulness`` counts them; the map draws the others greyed or hatched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from urbandp.fleet._options import HatReleaseConfig

if TYPE_CHECKING:
    from urbandp.fleet._measure import Measured


def useful_expr(target_width: float) -> pl.Expr:
    """Boolean ``useful`` column: a shown, unclamped mean whose 95% interval is at most ``target_width`` wide."""
    shown = pl.col("mean_speed").is_not_null() & ~pl.col("clamped").fill_null(False)
    narrow = (pl.col("ci95_high") - pl.col("ci95_low")) <= target_width
    return (shown & narrow.fill_null(False)).alias("useful")


def with_count_interval(speed: pl.DataFrame, measured: Measured, cfg: HatReleaseConfig) -> pl.DataFrame:
    """Add ``vehicle_days_ci95_low/high`` after ``noisy_vehicle_days`` (add/remove: the count is noisy).

    The interval is the selection-aware one of :func:`urbandp.fleet._measure.selected_count_interval`; where its
    lower end is 0 the HAT may hold no vehicle and its mean is withheld.
    """
    if "noisy_vehicle_days" not in speed.columns or speed.height != measured.count_low.size:
        return speed
    prec = cfg.precision
    low = pl.Series("vehicle_days_ci95_low", np.round(measured.count_low, prec), nan_to_null=True)
    high = pl.Series("vehicle_days_ci95_high", np.round(measured.count_high, prec), nan_to_null=True)
    at = speed.columns.index("noisy_vehicle_days") + 1
    return speed.insert_column(at, low).insert_column(at + 1, high)


def usefulness(speed: pl.DataFrame, target_width: float) -> dict[str, object]:
    """privacy.json's ``usefulness``: released HATs, means shown, count-only HATs and useful HATs (DP outputs)."""
    shown = int(speed["mean_speed"].is_not_null().sum()) if speed.height else 0
    useful = int(speed["useful"].sum()) if "useful" in speed.columns and speed.height else 0
    widths = (speed["ci95_high"] - speed["ci95_low"]).filter(speed["mean_speed"].is_not_null()).drop_nulls()
    return {
        "target_width_kmh": target_width,
        "hats_released": speed.height,
        "means_shown": shown,
        "count_only_hats": speed.height - shown,
        "useful_hats": useful,
        "median_interval_width_kmh": float(widths.median()) if widths.len() else None,  # type: ignore[arg-type]
        "promise": "useful: each such HAT's own 95% interval (Fieller's for S~/N~, the count's noise included, so "
        "a count the noise overstated widens it rather than passing as narrow)",
        "definition": (
            "useful: the mean is shown and not clamped, and its 95% interval is at most target_width_kmh wide; "
            "count-only: the mean is withheld (the count's selection-aware 95% interval reaches 0 or the noisy "
            "count is small next to its noise)"
        ),
    }
