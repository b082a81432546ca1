"""Cap changes and operators in `budget history`, as an operator meets them (issue 32): `budget init` raising a
cap from 10 to 1000 is shown (who, when, old -> new) between the releases, on SQLite and PostgreSQL; a version 4
PostgreSQL store migrates and keeps working.

Measured before: `budget init --operator` did not exist (exit 2) and `budget history` showed releases only, so a
cap raised from 10 to 1000 in place left no trace.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from urbandp_process import assert_refused, run_urbandp

from urbandp._privacy.budget_migrations import LATEST_VERSION, MIGRATED_OPERATOR, MIGRATIONS
from urbandp._privacy.budget_store import ENV_OPERATOR, BudgetStore

pytestmark = pytest.mark.system

BBOX = "21.09,72.75,21.25,72.91"  # the synthetic fleet's city: a public domain


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fleet") / "fleet.parquet"
    res = run_urbandp(
        "synth", "fleet", "--vehicles", "6", "--days", "1", "--start", "2024-03-04", "--out", str(path)
    )
    assert res.returncode == 0, res.stderr
    return path


def _init(store: str, *flags: str) -> None:
    res = run_urbandp("budget", "init", "surat", "--unit", "vehicle-day", *flags, "--budget-store", store)
    assert res.returncode == 0, res.stderr


def _history(store: str) -> list[str]:
    res = run_urbandp("budget", "history", "surat", "--budget-store", store)
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_history_shows_who_raised_a_cap_between_the_releases(
    backend: str, fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    store = str(tmp_path / "b.sqlite") if backend == "sqlite" else request.getfixturevalue("fresh_postgres")
    monkeypatch.setenv(ENV_OPERATOR, "alice")
    _init(store, "--epsilon-per-day", "10")
    monkeypatch.setenv(ENV_OPERATOR, "scheduler")
    out = tmp_path / "rel"
    res = run_urbandp(
        "release", str(fleet), "--start", "2024-03-04", "--end", "2024-03-04", "--epsilon-per-day", "4",
        "--domain-bbox", BBOX, "--no-map", "--dataset", "surat", "--budget-store", store, "--out", str(out),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    _init(store, "--epsilon-per-day", "1000", "--operator", "bob")
    lines = _history(store)
    assert len(lines) == 4, lines
    assert lines[0].endswith("cap change           epsilon per day none -> 10  by alice")
    assert lines[1].endswith("cap change           delta total none -> 1e-05  by alice")
    assert (
        " committed " in lines[2]
        and "(1 days, epsilon 3.73756, delta 1e-06)" in lines[2]  # 4 a day: 3.74 by the exact Gaussian curve
        and "by scheduler" in lines[2]
    )
    assert lines[3].endswith("cap change           epsilon per day 10 -> 1000  by bob")
    stamps = [line[:19] for line in lines]
    assert stamps == sorted(stamps)
    # lowering below what is spent stays refused, and leaves no record
    res = run_urbandp(
        "budget", "init", "surat", "--unit", "vehicle-day", "--epsilon-per-day", "3", "--budget-store", store
    )
    assert_refused(res, "cannot lower epsilon per day of 'surat' to 3: 3.73756 already spent", others="none")
    assert _history(store) == lines


def test_a_blank_operator_is_one_line_exit_2(tmp_path: Path) -> None:
    store = str(tmp_path / "b.sqlite")
    res = run_urbandp(
        "budget", "init", "surat", "--unit", "vehicle-day", "--epsilon-per-day", "1", "--operator", " ",
        "--budget-store", store,
    )  # fmt: skip
    assert_refused(res, "operator must be a non-empty one-line name", others="none")


@pytest.fixture
def fresh_postgres(postgres_url: str) -> str:
    """The module's PostgreSQL server with the budget tables dropped: each test starts from an empty store."""
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS cap_changes, charges, releases, datasets, schema_version")
    return postgres_url


def test_a_version_4_postgresql_store_migrates_and_keeps_working(fresh_postgres: str) -> None:
    import psycopg

    with psycopg.connect(fresh_postgres, autocommit=True) as conn:
        for stmts in MIGRATIONS[:4]:
            for stmt in stmts:
                conn.execute(stmt)  # type: ignore[arg-type]
        conn.execute("INSERT INTO schema_version (version) VALUES (4)")
        conn.execute(
            "INSERT INTO datasets (name, unit, epsilon_per_day, delta_total, created_at) "
            "VALUES ('surat', 'vehicle-day', 10, 1e-5, '2024-01-01T00:00:00+00:00')"
        )
    _init(fresh_postgres, "--epsilon-per-day", "20", "--operator", "bob")
    lines = _history(fresh_postgres)
    assert lines[0] == (
        "2024-01-01T00:00:00  cap change           epsilon per day none -> 10  by caps in force when the store was "
        "upgraded (earlier changes not recorded)"
    )
    assert lines[2].endswith("epsilon per day 10 -> 20  by bob") and len(lines) == 4  # + "no releases" line
    s = BudgetStore(fresh_postgres)
    assert s._exec("SELECT version FROM schema_version") == [(LATEST_VERSION,)]
    assert [c["operator"] for c in s.cap_changes("surat")][:2] == [MIGRATED_OPERATOR] * 2
    s.close()
