"""The Data61 2016 "Second Algorithm" (Culnane, Rubinstein, Teague 2017, Appendix B) -- NOT differentially private.

For every cell: if the raw count is 0, release 0 (zeros are skipped); otherwise add Laplace(p) noise and release
the value if it exceeds the threshold ``t`` (18 in the Opal release), else 0; round to an integer. Marginal tables
are computed from the *raw* marginal counts by the same algorithm, as in the Opal release (section 4).

Flaw (report section 3, Theorem 1; docs/counts.md, "Where the published method is not DP"): a raw zero is never
perturbed, so a released value ``> t`` rules out a zero in that cell: no epsilon works, and
``delta >= exp(-(t-1)/p)/2``. Kept here for comparison only; ``urbandp counts release`` uses the corrected method.
"""

from __future__ import annotations

import numpy as np

from urbandp._privacy.noise import NoiseSource
from urbandp._privacy.rounding import round_to_precision

NOT_DP_LABEL = (
    "not differentially private (Data61 2016 Second Algorithm: zeros skipped, see Culnane et al. 2017 Thm 1)"
)


def second_algorithm(raw: np.ndarray, p: float, threshold: float, noise: NoiseSource) -> np.ndarray:
    """Apply Appendix B's steps 1-4 to every cell of ``raw`` (any shape); returns integers as float64."""
    raw = np.asarray(raw)
    out = np.zeros(raw.shape, dtype=np.float64)
    nonzero = raw != 0
    if nonzero.any():
        noisy = noise.laplace(raw[nonzero].astype(np.float64), p)  # OpenDP continuous Laplace(p)
        out[nonzero] = np.where(noisy > threshold, noisy, 0.0)
    return round_to_precision(out, 0)
