"""The words and limits of a count release's options, shared by its spec (:class:`urbandp.counts._options.CountsReleaseSpec`,
the one declaration of the options) and the code below it."""

from __future__ import annotations

METHODS = ("urbandp", "data61-2016")
SAMPLINGS = ("auto", "sparse", "dense")
MARGINALS = ("auto", "noisy-joint", "published-joint", "charged")


MAX_THRESHOLD = 2**53
"""Largest ``|suppress_below|``: integers above 2^53 are not exact float64 values, so no count or noisy value
compares meaningfully with a larger threshold (it would suppress every cell, or none); beyond it the exact tail
probabilities of the zero-cell sampler also get needlessly costly (the discrete Gaussian's at 1e100 never ends)."""
