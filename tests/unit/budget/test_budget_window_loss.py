"""The store books each release's window loss (schema version 6) and caps its sums; older stores migrate.

Measured before: ``epsilon_total`` summed the per-day epsilons, so a Gaussian release that pools 3 days at epsilon
4 a day was booked 12 while one vehicle on all 3 days pays 9 rho (14.33 at delta 1e-6).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import pytest

from urbandp._privacy.budget_migrations import LATEST_VERSION, MIGRATIONS
from urbandp._privacy.budget_store import BudgetStore, DatasetCaps
from urbandp._privacy.loss import Loss, rho_to_epsilon
from urbandp._privacy.noise import rho_for_epsilon
from urbandp._privacy.session import ReleaseCharge, days_between
from urbandp.errors import BudgetExceededError

D0 = dt.date(2024, 3, 4)
THREE = days_between(D0, D0 + dt.timedelta(days=2))
RHO = rho_for_epsilon(4.0, 1e-6)


def _store(tmp_path: Path, **caps: float) -> str:
    url = str(tmp_path / "b.sqlite")
    s = BudgetStore(url)
    s.init_dataset(
        DatasetCaps("bus", "vehicle-day", None, caps.get("total"), rho_total=caps.get("rho_total"))
    )
    s.close()
    return url


def _reserve(url: str, window: Loss | None) -> None:
    with ReleaseCharge("bus", url, unit="vehicle-day", conversion_delta=1e-6, command_line="c") as s:
        s.reserve(Loss.zcdp(RHO), THREE, "fleet-hat-gaussian", window=window)


def test_a_pooled_gaussian_window_is_booked_and_capped_as_stated(tmp_path: Path) -> None:
    url = _store(tmp_path, total=14.0)
    window = Loss.zcdp(RHO).group(3)
    with pytest.raises(BudgetExceededError, match=r"asked epsilon=14\.3282 over 3 days, left 14 of 14"):
        _reserve(url, window)
    (tmp_path / "x").mkdir()
    url = _store(tmp_path / "x", total=15.0)
    _reserve(url, window)
    (h,) = BudgetStore(url).history("bus")
    assert h["window_epsilon"] == rho_to_epsilon(9 * RHO, 1e-6) and h["window_rho"] == 9 * RHO
    assert BudgetStore(url).epsilon_spent("bus") == h["window_epsilon"]
    # the per-day booking is each day's own loss, converted once
    assert {v for v in BudgetStore(url).spend_per_day("bus").values()} == {(rho_to_epsilon(RHO, 1e-6), RHO)}


def test_released_days_apart_cost_d_times_and_rho_total_caps_the_window(tmp_path: Path) -> None:
    """Without a stated window (days released apart) a vehicle-day unit pays 3 rho, converted once; rho_total caps
    the windows' sum."""
    url = _store(tmp_path, rho_total=5 * RHO)
    _reserve(url, None)
    (h,) = BudgetStore(url).history("bus")
    assert h["window_rho"] == pytest.approx(3 * RHO) and h["window_epsilon"] == rho_to_epsilon(3 * RHO, 1e-6)
    with pytest.raises(BudgetExceededError, match=r"asked group rho=.* over 3 days, left .* of"):
        _reserve(url, None)


def test_a_version_5_store_keeps_what_it_booked(tmp_path: Path) -> None:
    """A release booked at version 5 keeps the sum of its per-day epsilons and its group rho D^2 x rho."""
    path = tmp_path / "v5.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    for stmts in MIGRATIONS[:5]:
        for stmt in stmts:
            conn.execute(stmt)
    conn.execute("INSERT INTO schema_version (version) VALUES (5)")
    conn.execute(
        "INSERT INTO datasets (name, unit, epsilon_per_day, epsilon_total, rho_per_day, rho_total, delta_total, "
        "created_at) VALUES ('bus', 'vehicle-day', NULL, 20, NULL, NULL, 1e-5, 't')"
    )
    for rid, rho in (("gauss", 0.3), ("pure", None)):
        conn.execute(
            "INSERT INTO releases (id, dataset, status, mechanism, params, command_line, host, pid, reserved_at, "
            "window_delta) VALUES (?, 'bus', 'committed', 'm', '{}', 'c', 'h', 1, ?, 0)",
            (rid, rid),
        )
        for day in THREE:
            conn.execute(
                "INSERT INTO charges (release_id, day, epsilon, rho) VALUES (?, ?, 2, ?)",
                (rid, day.isoformat(), rho),
            )
    conn.close()
    s = BudgetStore(str(path))
    assert s._exec("SELECT version FROM schema_version") == [(LATEST_VERSION,)] == [(6,)]
    rows = {h["id"]: (h["window_epsilon"], h["window_rho"]) for h in s.history("bus")}
    assert rows == {"gauss": (6.0, pytest.approx(9 * 0.3)), "pure": (6.0, pytest.approx((3 * 2) ** 2 / 2))}
    assert s.epsilon_spent("bus") == 12.0
    s.close()
    with pytest.raises(BudgetExceededError, match=r"left 8 of 20"):
        _reserve(str(path), Loss.zcdp(RHO).group(3))
