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
    # version 4: delta composed over a dataset's releases (issue 30): each release's window delta (what a unit
    # present on all of its days pays) and a cap on their sum. A release booked before it gets the bound its
    # per-day deltas give: their sum for a unit that spans days (a vehicle, a card: basic composition), else the
    # largest (an event, a reading, a respondent is in one day's charge). Datasets keep no delta cap (NULL): a
    # migration never adds a cap that could refuse the next release unannounced; `budget show` says so.
    [
        "ALTER TABLE datasets ADD COLUMN delta_total DOUBLE PRECISION",
        "ALTER TABLE releases ADD COLUMN window_delta DOUBLE PRECISION",
        """UPDATE releases SET window_delta = (
            SELECT CASE WHEN d.unit IN ('vehicle-day', 'card-day') THEN COALESCE(SUM(c.delta), 0)
                        ELSE COALESCE(MAX(c.delta), 0) END
            FROM charges c JOIN datasets d ON d.name = releases.dataset
            WHERE c.release_id = releases.id
            GROUP BY d.unit
        )""",
        "UPDATE releases SET window_delta = 0 WHERE window_delta IS NULL",
    ],
]

LATEST_VERSION = len(MIGRATIONS)
