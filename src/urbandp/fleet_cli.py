"""Top-level fleet commands: ``urbandp release`` and ``urbandp explore`` (ITMS report sections II-IV)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the fleet commands to the main app."""
