"""The budget store composes delta (issue 30 item 3): per day, over a dataset's releases, capped by --delta-total.

Measured before: ``reserve`` stored each day's delta and nothing read it; a fleet release whose selection gives a
window delta of 0.0708 (K 8, D 7, epsilon 10, unknown domain: OpenDP's threshold map at distance 7) was booked
with no delta at all, and any number of them were accepted.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import pytest

from urbandp._privacy.budget_migrations import LATEST_VERSION, MIGRATIONS
from urbandp._privacy.budget_store import (
    DEFAULT_DELTA_TOTAL,
    STATUS_RESERVED,
    BudgetStore,
    DatasetCaps,
)
from urbandp._privacy.loss import Loss
from urbandp._privacy.session import NoiseBeforeReservation, ReleaseCharge, days_between
from urbandp.errors import BudgetExceededError, InputError

D0 = dt.date(2024, 3, 4)
WEEK = days_between(D0, D0 + dt.timedelta(days=6))
FLEET_WINDOW_DELTA = 0.07075608580251462
"""privacy.json's delta_per_window of `urbandp release --epsilon-per-day 10 --max-hats-per-vehicle-day 8` on a
7-day window without --domain-bbox (selection's window delta from OpenDP's map, plus the conversion delta 5e-7)."""
WEEK_WINDOW = Loss.zcdp(0.05).group(7)
"""A Gaussian release at rho 0.05 a day that pools a week: 49 rho for a vehicle on all 7 days."""
FLEET_WINDOW = WEEK_WINDOW + Loss(delta=FLEET_WINDOW_DELTA - 5e-7)
"""That release's window loss with the selection's window delta (the conversion delta is added once, 5e-7)."""


def _store(tmp_path: Path, unit: str = "vehicle-day", delta_total: float | None = None) -> str:
    url = str(tmp_path / "b.sqlite")
    s = BudgetStore(url)
    s.init_dataset(DatasetCaps("bus", unit, 100.0, delta_total=delta_total))
    s.close()
    return url


def _reserve(
    url: str, loss: Loss, days: list[dt.date], unit: str = "vehicle-day", **kw: object
) -> ReleaseCharge:
    with ReleaseCharge("bus", url, unit=unit, conversion_delta=5e-7, command_line="cmd") as s:
        s.reserve(loss, days, "m", **kw)  # type: ignore[arg-type]
    return s


def test_new_dataset_gets_the_default_delta_cap(tmp_path: Path) -> None:
    s = BudgetStore(_store(tmp_path))
    assert s.caps("bus").delta_total == DEFAULT_DELTA_TOTAL == 1e-5
    assert s.delta_spent("bus") == 0.0 and s.delta_per_day("bus") == {}


def test_delta_composes_per_day_and_over_two_releases(tmp_path: Path) -> None:
    """A Gaussian week (zCDP: its window costs 49 rho, converted once at 5e-7) and an approximate-DP release on 3
    of its days (per-day selection, 1e-6 a day: 3e-6 for a vehicle on all 3 days, basic composition)."""
    url = _store(tmp_path)
    _reserve(url, Loss.zcdp(0.05), WEEK)
    _reserve(url, Loss.approx_dp(0.1, 1e-6), WEEK[:3])
    s = BudgetStore(url)
    per_day = s.delta_per_day("bus")
    assert per_day == {d.isoformat(): pytest.approx(1.5e-6 if i < 3 else 5e-7) for i, d in enumerate(WEEK)}
    assert [h["window_delta"] for h in s.history("bus")] == [pytest.approx(5e-7), pytest.approx(3e-6)]
    assert s.delta_spent("bus") == pytest.approx(3.5e-6)


def test_a_unit_in_one_day_pays_one_days_delta(tmp_path: Path) -> None:
    """An event lies in one day: a release charged on 3 days costs it one day's delta, not three."""
    url = _store(tmp_path, unit="event")
    _reserve(url, Loss.approx_dp(0.1, 1e-6), WEEK[:3], unit="event")
    assert BudgetStore(url).delta_spent("bus") == pytest.approx(1e-6)


def test_the_wings_window_delta_is_refused_at_the_cap_before_noise(tmp_path: Path) -> None:
    url = _store(tmp_path)
    s = ReleaseCharge("bus", url, unit="vehicle-day", conversion_delta=5e-7)
    with (
        pytest.raises(
            BudgetExceededError,
            match=r"total delta budget of 'bus' exceeded: asked delta=0.0708 over 7 days \(what a unit present "
            r"on all of them pays\), left 1e-05 of 1e-05; declare a larger delta_total",
        ),
        s,
    ):
        s.reserve(Loss.zcdp(0.05), WEEK, "fleet-hat-gaussian", window=FLEET_WINDOW)
    with pytest.raises(NoiseBeforeReservation):
        s.noise.gaussian(__import__("numpy").zeros(1), 1.0)
    store = BudgetStore(url)
    assert store.history("bus") == [] and store.spend_per_day("bus") == {}  # nothing booked
    assert store.init_dataset(DatasetCaps("bus", "vehicle-day", None, delta_total=1.0)).delta_total == 1.0
    _reserve(url, Loss.zcdp(0.05), WEEK, window=FLEET_WINDOW)  # the owner accepted it: 1 is no cap
    assert store.delta_spent("bus") == pytest.approx(FLEET_WINDOW_DELTA)
    with pytest.raises(InputError, match=r"cannot lower delta total of 'bus' to 1e-05: 0.0708 already spent"):
        store.init_dataset(DatasetCaps("bus", "vehicle-day", None, delta_total=1e-5))


def test_the_cap_counts_what_is_left(tmp_path: Path) -> None:
    url = _store(tmp_path, delta_total=2e-6)
    _reserve(url, Loss.zcdp(0.05), WEEK)  # 5e-7
    _reserve(url, Loss.zcdp(0.05), WEEK, window=WEEK_WINDOW + Loss(delta=5e-7))  # 1.5e-6
    with pytest.raises(BudgetExceededError, match=r"asked delta=1e-06 over 7 days .* left 5e-07 of 2e-06"):
        _reserve(url, Loss.zcdp(0.05), WEEK, window=WEEK_WINDOW + Loss(delta=5e-7))
    _reserve(url, Loss.zcdp(0.05), WEEK)  # exactly fits: 2e-6
    _reserve(url, Loss.pure(0.5), WEEK)  # pure DP adds no delta: never refused by the delta cap
    assert BudgetStore(url).delta_spent("bus") == pytest.approx(2e-6)


def test_a_window_delta_below_one_days_is_a_bug(tmp_path: Path) -> None:
    url = _store(tmp_path)
    for bad in (Loss.approx_dp(0.7, 1e-7), Loss.pure(0.7)):
        with pytest.raises(ValueError, match=r"window delta .* is below one day's delta 1e-06"):
            _reserve(url, Loss.approx_dp(0.1, 1e-6), WEEK, window=bad)
    assert BudgetStore(url).history("bus") == []


def _v3_store(path: Path) -> None:
    """A store as urbandp wrote it at schema version 3: a fleet week (zCDP, delta 5e-7 a day) and an event release."""
    conn = sqlite3.connect(path, isolation_level=None)
    for stmts in MIGRATIONS[:3]:
        for stmt in stmts:
            conn.execute(stmt)
    conn.execute("INSERT INTO schema_version (version) VALUES (3)")
    for name, unit in (("bus", "vehicle-day"), ("taps", "event")):
        conn.execute(
            "INSERT INTO datasets (name, unit, epsilon_per_day, epsilon_total, rho_per_day, rho_total, created_at) "
            "VALUES (?, ?, 10, NULL, NULL, NULL, 't')",
            (name, unit),
        )
        conn.execute(
            "INSERT INTO releases (id, dataset, status, mechanism, params, command_line, host, pid, reserved_at) "
            "VALUES (?, ?, 'committed', 'm', '{}', 'c', 'h', 1, 't')",
            (name + "-1", name),
        )
        for day in WEEK[:3]:
            conn.execute(
                "INSERT INTO charges (release_id, day, epsilon, rho, delta) VALUES (?, ?, 1.0, 0.05, 5e-7)",
                (name + "-1", day.isoformat()),
            )
    conn.execute(
        "INSERT INTO releases (id, dataset, status, mechanism, params, command_line, host, pid, reserved_at) "
        "VALUES ('bus-pure', 'bus', 'committed', 'm', '{}', 'c', 'h', 1, 't2')"
    )
    conn.execute("INSERT INTO charges (release_id, day, epsilon, rho, delta) VALUES ('bus-pure', ?, 1, NULL, NULL)",
                 (D0.isoformat(),))  # fmt: skip
    conn.close()


def test_a_version_3_store_migrates(tmp_path: Path) -> None:
    path = tmp_path / "v3.sqlite"
    _v3_store(path)
    s = BudgetStore(str(path))
    assert s._exec("SELECT version FROM schema_version") == [(LATEST_VERSION,)] and LATEST_VERSION >= 4
    # a release booked before: its per-day deltas summed for a vehicle, the largest for an event
    assert [h["window_delta"] for h in s.history("bus")] == [pytest.approx(1.5e-6), 0.0]
    assert s.delta_spent("taps") == pytest.approx(5e-7)
    assert s.caps("bus").delta_total is None  # a migration adds no cap
    _reserve(str(path), Loss.approx_dp(0.1, 1e-6), WEEK[:2])  # and refuses nothing for delta
    assert s.delta_spent("bus") == pytest.approx(3.5e-6)
    s.close()
    assert BudgetStore(str(path)).delta_per_day("bus")[D0.isoformat()] == pytest.approx(1.5e-6)


def test_store_full_at_commit_says_the_release_was_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outputs are in place and the store's disk is full at the commit: one line that says so and where."""
    url = _store(tmp_path)
    out = tmp_path / "rel"
    real = BudgetStore._exec

    def full_at_commit(
        self: BudgetStore, sql: str, params: tuple[object, ...] = ()
    ) -> list[tuple[object, ...]]:
        if sql.startswith("UPDATE releases SET status"):
            raise sqlite3.OperationalError("database or disk is full")
        return real(self, sql, params)

    with pytest.raises(InputError) as err, ReleaseCharge("bus", url, unit="vehicle-day") as s:
        s.reserve(Loss.pure(0.5), [D0], "laplace")
        out.mkdir()
        (out / "a.csv").write_text("x\n1\n")
        s.set_output(out)
        monkeypatch.setattr(BudgetStore, "_exec", full_at_commit)
    monkeypatch.undo()
    assert str(err.value).startswith(f"the release was published at {out}, but the budget store could not")
    assert "database or disk is full" in str(err.value) and "stays booked, unconfirmed" in str(err.value)
    assert err.value.exit_code == 2 and "\n" not in str(err.value)
    (h,) = BudgetStore(url).history("bus")
    assert h["status"] == STATUS_RESERVED  # this process is alive: crashed/unconfirmed once it ends
    assert out.exists() and BudgetStore(url).spend_per_day("bus")[D0.isoformat()][0] == 0.5
