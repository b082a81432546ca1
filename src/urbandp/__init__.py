"""urbandp: differentially private release of urban mobility and sensor data.

Wings: fleet GPS -> HAT release (:mod:`urbandp.fleet.release`), user-level mean estimators
(:mod:`urbandp.estimators`), count tables (:mod:`urbandp.counts`), attacks on published tables
(:mod:`urbandp.audit`) and sensor fleets (:mod:`urbandp.sensing`).
"""

__version__ = "0.1.0"
