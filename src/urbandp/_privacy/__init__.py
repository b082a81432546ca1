"""Privacy units, noise sources (thin wrappers over OpenDP), calibration and the ledger."""
