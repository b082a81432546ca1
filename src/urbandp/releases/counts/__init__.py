"""Count tables (smart-card taps) released with differential privacy, and the non-DP Data61 2016 method."""

from urbandp.releases.counts.domain import CountDomain
from urbandp.releases.counts.release import CountRelease, CountReleaseConfig, release_counts
from urbandp.releases.counts.units import PrivacyUnit

__all__ = ["CountDomain", "CountRelease", "CountReleaseConfig", "PrivacyUnit", "release_counts"]
