"""Who changed what (issue 32): every cap set or changed by ``budget init`` is recorded with its operator, time,
old and new value; every release records its operator; a version 4 store migrates and keeps working.

Measured before: raising a cap from 10 to 1000 left no trace (the store had no cap_changes table and releases no
operator column).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import pytest

import urbandp as ud
from urbandp._privacy.budget_migrations import LATEST_VERSION, MIGRATED_OPERATOR, MIGRATIONS
from urbandp._privacy.budget_store import ENV_OPERATOR, BudgetStore, DatasetCaps, resolve_operator
from urbandp._privacy.loss import Loss
from urbandp._privacy.session import ReleaseCharge
from urbandp.errors import InputError

D0 = dt.date(2024, 3, 4)


def _changes(url: str) -> list[tuple[str, str, float | None, float | None]]:
    s = BudgetStore(url)
    try:
        return [(c["operator"], c["field"], c["old"], c["new"]) for c in s.cap_changes("bus")]
    finally:
        s.close()


def test_every_cap_change_is_recorded_with_operator_old_and_new(tmp_path: Path) -> None:
    url = str(tmp_path / "b.sqlite")
    BudgetStore(url, operator="alice").init_dataset(DatasetCaps("bus", "vehicle-day", 10.0))
    assert _changes(url) == [("alice", "epsilon_per_day", None, 10.0), ("alice", "delta_total", None, 1e-5)]
    bob = BudgetStore(url, operator="bob")
    bob.init_dataset(
        DatasetCaps("bus", "vehicle-day", 1000.0, epsilon_total=5000.0)
    )  # raised: allowed, recorded
    bob.init_dataset(DatasetCaps("bus", "vehicle-day", 1000.0))  # the same caps again: nothing changes
    assert _changes(url)[2:] == [
        ("bob", "epsilon_per_day", 10.0, 1000.0),
        ("bob", "epsilon_total", None, 5000.0),
    ]
    with ReleaseCharge("bus", url, unit="vehicle-day", command_line="cmd") as s:
        s.reserve(Loss.pure(3.0), [D0], "laplace")
    with pytest.raises(InputError, match="cannot lower epsilon per day of 'bus' to 2: 3 already spent"):
        bob.init_dataset(DatasetCaps("bus", "vehicle-day", 2.0))
    assert len(_changes(url)) == 4  # a refused change records nothing
    times = [c["changed_at"] for c in bob.cap_changes("bus")]
    assert times == sorted(times) and times[0] < times[2]


def test_a_release_records_its_operator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = str(tmp_path / "b.sqlite")
    BudgetStore(url).init_dataset(DatasetCaps("bus", "vehicle-day", 10.0))
    monkeypatch.delenv(ENV_OPERATOR, raising=False)
    with ReleaseCharge("bus", url, unit="vehicle-day", command_line="cmd") as s:
        s.reserve(Loss.pure(1.0), [D0], "laplace")
    monkeypatch.setenv(ENV_OPERATOR, "scheduler@etl-1")
    with ReleaseCharge("bus", url, unit="vehicle-day", command_line="cmd") as s:
        s.reserve(Loss.pure(1.0), [D0], "laplace")
    with ud.Session(store=url, dataset="bus", operator="carol").charge(
        "vehicle-day", command_line="cmd"
    ) as s:
        s.reserve(Loss.pure(1.0), [D0], "laplace")
    import getpass

    who = [h["operator"] for h in BudgetStore(url).history("bus")]
    assert who == [getpass.getuser(), "scheduler@etl-1", "carol"]


def test_a_blank_operator_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_OPERATOR, "  ")
    with pytest.raises(InputError, match="operator must be a non-empty one-line name"):
        resolve_operator()
    assert resolve_operator(" dave ") == "dave"


def test_a_version_4_store_is_migrated_and_keeps_working(tmp_path: Path) -> None:
    url = str(tmp_path / "v4.sqlite")
    conn = sqlite3.connect(url, isolation_level=None)
    for stmts in MIGRATIONS[:4]:
        for stmt in stmts:
            conn.execute(stmt)
    conn.execute("INSERT INTO schema_version (version) VALUES (4)")
    conn.execute(
        "INSERT INTO datasets (name, unit, epsilon_per_day, epsilon_total, rho_per_day, rho_total, delta_total, "
        "created_at) VALUES ('bus', 'vehicle-day', 10, 400, NULL, NULL, 1e-5, '2024-01-01T00:00:00+00:00')"
    )
    conn.execute(
        "INSERT INTO releases (id, dataset, status, mechanism, params, command_line, host, pid, reserved_at, "
        "window_delta) VALUES ('r1', 'bus', 'committed', 'm', '{}', 'c', 'h', 1, '2024-02-01T00:00:00+00:00', 0)"
    )
    conn.execute("INSERT INTO charges (release_id, day, epsilon) VALUES ('r1', '2024-03-04', 4)")
    conn.close()
    s = BudgetStore(url, operator="erin")
    assert s._exec("SELECT version FROM schema_version") == [(LATEST_VERSION,)] == [(6,)]
    assert [(c["operator"], c["field"], c["old"], c["new"], c["migrated"]) for c in s.cap_changes("bus")] == [
        (MIGRATED_OPERATOR, "epsilon_per_day", None, 10.0, True),
        (MIGRATED_OPERATOR, "epsilon_total", None, 400.0, True),
        (MIGRATED_OPERATOR, "delta_total", None, 1e-5, True),
    ]
    with ReleaseCharge("bus", url, unit="vehicle-day", command_line="cmd", operator="erin") as r:
        r.reserve(Loss.pure(6.0), [D0], "laplace")  # 4 + 6 = the cap of 10
    assert [(h["operator"], h["epsilon_sum"]) for h in s.history("bus")] == [(None, 4.0), ("erin", 6.0)]
    s.init_dataset(DatasetCaps("bus", "vehicle-day", 12.0))
    assert s.cap_changes("bus")[-1] | {"changed_at": None} == {
        "changed_at": None, "operator": "erin", "field": "epsilon_per_day", "old": 10.0, "new": 12.0,
        "migrated": False,
    }  # fmt: skip
