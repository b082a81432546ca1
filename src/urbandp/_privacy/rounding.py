"""Rounding of released values to a declared precision (docs/design.md rule 6; Mironov 2012).

Rounding is post-processing of an already-private value, so it costs no privacy.
"""

from __future__ import annotations

import numpy as np


def round_to_precision(values: np.ndarray, precision: int | None) -> np.ndarray:
    """Round to ``precision`` decimal places (``None`` leaves values as they are)."""
    arr = np.asarray(values, dtype=float)
    if precision is None:
        return arr
    return np.round(arr, int(precision))
