"""Versioned schema of the privacy budget store (SQLite and PostgreSQL share the same SQL).

Each entry of :data:`MIGRATIONS` moves the schema from version ``i`` to ``i + 1``; the store applies the
missing ones in one transaction and records the version in ``schema_version``. Never edit a released migration:
append a new one.
"""

from __future__ import annotations

CAP_FIELDS = ("epsilon_per_day", "epsilon_total", "rho_per_day", "rho_total", "delta_total")
"""The columns of ``datasets`` that hold a cap; each change of one is a row of ``cap_changes`` (version 5)."""
MIGRATED_OPERATOR = "(unrecorded: caps in force at schema version 5)"
"""The operator of the cap rows that the version 5 migration writes for datasets declared before it."""

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
    # version 2: a cap on the zCDP group rho of a unit over all days (each release's window_rho since version 6)
    [
        "ALTER TABLE datasets ADD COLUMN rho_total DOUBLE PRECISION",
    ],
    # version 3: the delta of each day's charge (approximate DP, and the conversion delta of a zCDP charge)
    [
        "ALTER TABLE charges ADD COLUMN delta DOUBLE PRECISION",
    ],
    # version 4: delta composed over a dataset's releases: each release's window delta (what a unit
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
    # version 5: who changed what. Every cap set by `budget init` (the first declaration too) is one row
    # of cap_changes (field, old and new value; old NULL: no cap before, new NULL: never written, a cap is never
    # removed), and each release records its operator. A dataset declared before it gets one row per cap in force,
    # dated at its declaration, by the operator MIGRATED_OPERATOR: what it was declared with and how it changed
    # since was not recorded. Releases booked before it keep a NULL operator (shown as unknown).
    [
        """CREATE TABLE cap_changes (
            dataset TEXT NOT NULL REFERENCES datasets(name),
            changed_at TEXT NOT NULL,
            operator TEXT NOT NULL,
            field TEXT NOT NULL,
            old_value DOUBLE PRECISION,
            new_value DOUBLE PRECISION
        )""",
        "CREATE INDEX cap_changes_dataset ON cap_changes(dataset)",
        "ALTER TABLE releases ADD COLUMN operator TEXT",
        *(
            f"INSERT INTO cap_changes (dataset, changed_at, operator, field, old_value, new_value) "
            f"SELECT name, created_at, '{MIGRATED_OPERATOR}', '{field}', NULL, {field} FROM datasets "
            f"WHERE {field} IS NOT NULL"
            for field in CAP_FIELDS
        ),
    ],
    # version 6: one loss per release, as its privacy.json states it. Each release records its window epsilon (the
    # converted epsilon a unit present on all of its days pays) and its window zCDP cost; epsilon_total and
    # rho_total cap their sums. A release booked before it keeps what the store capped then: the sum of its per-day
    # epsilons, and its group rho D^2 x its largest rho per day ((D x its largest epsilon)^2 / 2 for a pure-DP one).
    [
        "ALTER TABLE releases ADD COLUMN window_epsilon DOUBLE PRECISION",
        "ALTER TABLE releases ADD COLUMN window_rho DOUBLE PRECISION",
        """UPDATE releases SET window_epsilon = (
            SELECT COALESCE(SUM(c.epsilon), 0) FROM charges c WHERE c.release_id = releases.id
        )""",
        """UPDATE releases SET window_rho = (
            SELECT CASE WHEN MAX(c.rho) IS NOT NULL THEN COUNT(*) * COUNT(*) * MAX(c.rho)
                        ELSE (COUNT(*) * MAX(c.epsilon)) * (COUNT(*) * MAX(c.epsilon)) / 2.0 END
            FROM charges c WHERE c.release_id = releases.id
        )""",
        "UPDATE releases SET window_rho = 0 WHERE window_rho IS NULL",
    ],
]

LATEST_VERSION = len(MIGRATIONS)
