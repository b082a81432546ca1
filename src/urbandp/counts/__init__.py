"""Count tables (smart-card taps) released with differential privacy, and the non-DP Data61 2016 method."""

from urbandp.counts.domain import CountDomain
from urbandp.counts.release import CountRelease, CountReleaseConfig, release_counts
from urbandp.counts.units import PrivacyUnit

__all__ = ["CountDomain", "CountRelease", "CountReleaseConfig", "PrivacyUnit", "release_counts"]
