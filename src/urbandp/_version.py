"""The one place urbandp's version is written (pyproject reads it; privacy.json and ``--version`` print it)."""

__version__ = "0.1.0"
