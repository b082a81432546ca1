"""Privacy units, noise sources (thin wrappers over OpenDP), calibration and the ledger."""

from urbandp._privacy.ledger import LedgerEntry, PrivacyLedger
from urbandp._privacy.noise import ExactNoiseForTesting, NoiseSource, OpenDPNoise

__all__ = ["ExactNoiseForTesting", "LedgerEntry", "NoiseSource", "OpenDPNoise", "PrivacyLedger"]
