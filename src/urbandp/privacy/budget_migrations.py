"""Versioned schema of the privacy budget store (SQLite and PostgreSQL share the same SQL).

Each entry of :data:`MIGRATIONS` moves the schema from version ``i`` to ``i + 1``; the store applies the
missing ones in one transaction and records the version in ``schema_version``. Never edit a released migration:
append a new one.
"""

from __future__ import annotations

MIGRATIONS: list[list[str]] = [
    # version 1: datasets with their caps, releases (reservations) and their per-day charges
    [
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
        """CREATE TABLE datasets (
            name TEXT PRIMARY KEY,
            unit TEXT NOT NULL,
            epsilon_per_day DOUBLE PRECISION,
            epsilon_total DOUBLE PRECISION,
            rho_per_day DOUBLE PRECISION,
            created_at TEXT NOT NULL
        )""",
        """CREATE TABLE releases (
            id TEXT PRIMARY KEY,
            dataset TEXT NOT NULL REFERENCES datasets(name),
            status TEXT NOT NULL,
            mechanism TEXT NOT NULL,
            params TEXT NOT NULL,
            command_line TEXT NOT NULL,
            content_hash TEXT,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            reserved_at TEXT NOT NULL,
            committed_at TEXT
        )""",
        """CREATE TABLE charges (
            release_id TEXT NOT NULL REFERENCES releases(id),
            day TEXT NOT NULL,
            epsilon DOUBLE PRECISION NOT NULL,
            rho DOUBLE PRECISION
        )""",
        "CREATE INDEX charges_day ON charges(day)",
        "CREATE INDEX releases_dataset ON releases(dataset)",
    ],
    # version 2: a cap on the zCDP group rho of a unit over all days (see budget_store.group_rho)
    [
        "ALTER TABLE datasets ADD COLUMN rho_total DOUBLE PRECISION",
    ],
    # version 3: the delta of each day's charge (approximate DP, and the conversion delta of a zCDP charge)
    [
        "ALTER TABLE charges ADD COLUMN delta DOUBLE PRECISION",
    ],
]

LATEST_VERSION = len(MIGRATIONS)
