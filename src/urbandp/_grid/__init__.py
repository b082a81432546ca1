"""Spatial keys (H3 cells) and time slots: together the HAT (hexagon and time slot) key."""
