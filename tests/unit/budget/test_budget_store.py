"""Budget store: caps per day and in total, reservation life cycle, bad input (one clear line, nothing lost)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from urbandp._privacy.budget_store import (
    STATUS_ABORTED,
    STATUS_COMMITTED,
    BudgetStore,
    DatasetCaps,
)
from urbandp._privacy.loss import Loss
from urbandp._privacy.session import ReleaseCharge, days_between
from urbandp.errors import BudgetExceededError, InputError

D0 = dt.date(2024, 3, 4)


def _store(tmp_path: Path, per_day: float = 1.0, total: float | None = None) -> str:
    url = str(tmp_path / "b.sqlite")
    s = BudgetStore(url)
    s.init_dataset(DatasetCaps("bus", "vehicle-day", per_day, total))
    s.close()
    return url


def _charge(url: str, eps: float, days: list[dt.date]) -> None:
    with ReleaseCharge("bus", url, unit="vehicle-day", command_line="cmd") as s:
        s.reserve(Loss.pure(eps), days, "laplace", {"b": 1})


def test_per_day_cap_refuses_with_asked_and_left(tmp_path: Path) -> None:
    url = _store(tmp_path, per_day=1.0)
    _charge(url, 0.6, days_between(D0, D0 + dt.timedelta(days=6)))
    with pytest.raises(
        BudgetExceededError, match=r"2024-03-04: asked epsilon=0.5 per vehicle-day, left 0.4 of 1"
    ):
        _charge(url, 0.5, [D0])
    _charge(url, 0.4, [D0])  # exactly fits
    _charge(url, 1.0, [D0 + dt.timedelta(days=7)])  # another day is untouched
    s = BudgetStore(url)
    spend = s.spend_per_day("bus")
    assert spend["2024-03-04"][0] == pytest.approx(1.0)
    assert spend["2024-03-05"][0] == pytest.approx(0.6)
    assert len(s.history("bus")) == 3  # the refused release left nothing


def test_total_cap(tmp_path: Path) -> None:
    url = _store(tmp_path, per_day=1.0, total=2.0)
    _charge(url, 0.5, days_between(D0, D0 + dt.timedelta(days=3)))  # 2.0 in total
    with pytest.raises(BudgetExceededError, match=r"total privacy budget .* left 0 of 2"):
        _charge(url, 0.1, [D0 + dt.timedelta(days=10)])


def test_failed_run_stays_charged_and_success_records_hash(tmp_path: Path) -> None:
    """A failure after the reservation (right before the first sampler) is never refunded (issue 20)."""
    url = _store(tmp_path)
    with pytest.raises(RuntimeError), ReleaseCharge("bus", url, unit="vehicle-day") as s:
        s.reserve(Loss.pure(0.5), [D0], "laplace")
        raise RuntimeError("boom")
    out = tmp_path / "rel"
    out.mkdir()
    (out / "a.csv").write_text("x\n1\n")
    with ReleaseCharge("bus", url, unit="vehicle-day", command_line="urbandp release") as s:
        s.reserve(Loss.pure(0.5), [D0], "laplace", {"b": 2.0})
        s.set_output(out)
    aborted, h = BudgetStore(url).history("bus")
    assert aborted["status"] == STATUS_ABORTED
    assert BudgetStore(url).spend_per_day("bus")[D0.isoformat()][0] == 1.0
    assert h["status"] == STATUS_COMMITTED
    assert h["params"]["b"] == 2.0
    assert h["params"]["loss_per_day"]["kind"] == "pure"
    assert h["content_hash"] is not None and len(h["content_hash"]) == 64


def test_bad_input(tmp_path: Path) -> None:
    url = _store(tmp_path, per_day=1.0)
    with pytest.raises(InputError, match="unknown dataset 'tram'"):
        _charge_ds(url, "tram", "vehicle-day")
    with pytest.raises(InputError, match="declared in unit vehicle-day; this release charges card-day"):
        _charge_ds(url, "bus", "card-day")
    _charge(url, 0.8, [D0])
    s = BudgetStore(url)
    with pytest.raises(InputError, match=r"cannot lower epsilon per day .* 0\.8 already spent on 2024-03-04"):
        s.init_dataset(DatasetCaps("bus", "vehicle-day", 0.5))
    assert s.caps("bus").epsilon_per_day == 1.0
    s.init_dataset(DatasetCaps("bus", "vehicle-day", 2.0))  # raising is fine
    assert s.spend_per_day("bus")["2024-03-04"][0] == pytest.approx(0.8)
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(InputError, match="not a usable database"):
        BudgetStore(str(bad))
    assert bad.read_bytes() == b"this is not a database" * 100


def _charge_ds(url: str, ds: str, unit: str) -> None:
    with ReleaseCharge(ds, url, unit=unit) as s:
        s.reserve(Loss.pure(0.1), [D0], "laplace")


def test_schema_is_versioned_and_a_newer_store_is_refused(tmp_path: Path) -> None:
    import sqlite3

    from urbandp._privacy.budget_migrations import LATEST_VERSION

    url = _store(tmp_path)
    con = sqlite3.connect(url)
    assert con.execute("SELECT version FROM schema_version").fetchall() == [(LATEST_VERSION,)]
    con.execute("UPDATE schema_version SET version = ?", (LATEST_VERSION + 1,))
    con.commit()
    con.close()
    with pytest.raises(InputError, match=f"schema version {LATEST_VERSION + 1} is newer"):
        BudgetStore(url)


def test_rho_total_caps_the_group_cost_over_all_releases(tmp_path: Path) -> None:
    url = str(tmp_path / "b.sqlite")
    s = BudgetStore(url)
    s.init_dataset(DatasetCaps("bus", "vehicle-day", None, None, None, rho_total=2.0))
    week = days_between(D0, D0 + dt.timedelta(days=6))

    def reserve(days: list[dt.date], rho: float, group: float, command: str) -> None:
        # a release that pools its D days states its group cost D^2 rho (Bun and Steinke 2016, Prop. 1.9)
        s.reserve("bus", "vehicle-day", dict.fromkeys(days, 1.0), "gaussian", {}, command,
                  dict.fromkeys(days, rho), window_delta=0.0, window_epsilon=1.0, window_rho=group)  # fmt: skip

    reserve(week, 0.02, 0.98, "w1")  # 49 x 0.02 = 0.98
    reserve([d + dt.timedelta(days=7) for d in week], 0.02, 0.98, "w2")
    assert s.group_rho_spent("bus") == pytest.approx(1.96)
    third = [d + dt.timedelta(days=14) for d in week]
    with pytest.raises(BudgetExceededError, match=r"asked group rho=0\.98 over 7 days, left 0\.04 of 2"):
        reserve(third, 0.02, 0.98, "w3")
    reserve(third[:1], 0.04, 0.04, "one day")  # 1 x 0.04 fits
    with pytest.raises(InputError, match=r"cannot lower rho total of 'bus' to 1: 2 already spent"):
        s.init_dataset(DatasetCaps("bus", "vehicle-day", None, None, None, rho_total=1.0))


def test_a_version_1_store_is_migrated_in_place(tmp_path: Path) -> None:
    import sqlite3

    from urbandp._privacy.budget_migrations import LATEST_VERSION, MIGRATIONS

    url = str(tmp_path / "v1.sqlite")
    con = sqlite3.connect(url)
    for stmt in MIGRATIONS[0]:
        con.execute(stmt)
    con.execute("INSERT INTO schema_version (version) VALUES (1)")
    con.execute("INSERT INTO datasets VALUES ('bus', 'vehicle-day', 1.0, NULL, NULL, 'then')")
    con.commit()
    con.close()
    s = BudgetStore(url)
    assert s.caps("bus") == DatasetCaps("bus", "vehicle-day", 1.0, None, None, None)
    _charge(url, 0.25, [D0])
    assert s.spend_per_day("bus") == {"2024-03-04": (0.25, 0.0)}
    con = sqlite3.connect(url)
    assert con.execute("SELECT version FROM schema_version").fetchall() == [(LATEST_VERSION,)]


def test_a_failure_after_the_outputs_are_written_still_commits(tmp_path: Path) -> None:
    """Once set_output names a written directory, an error (a broken pipe while printing the summary) commits the
    charge; before that, a failure keeps it as aborted after noise (never refunded)."""
    url = _store(tmp_path)
    out = tmp_path / "rel"
    out.mkdir()
    (out / "a.csv").write_text("x\n1\n")
    for _ in range(2):
        with pytest.raises(BrokenPipeError), ReleaseCharge("bus", url, unit="vehicle-day") as s:
            s.reserve(Loss.pure(0.25), [D0], "laplace")
            s.set_output(out)
            raise BrokenPipeError
    with pytest.raises(RuntimeError), ReleaseCharge("bus", url, unit="vehicle-day") as s:
        s.reserve(Loss.pure(0.25), [D0], "laplace")
        s.set_output(tmp_path / "never-written")
        raise RuntimeError("failed before the rename")
    s = BudgetStore(url)
    assert [h["status"] for h in s.history("bus")] == [STATUS_COMMITTED, STATUS_COMMITTED, STATUS_ABORTED]
    assert all(h["content_hash"] and len(h["content_hash"]) == 64 for h in s.history("bus")[:2])
    assert s.history("bus")[2]["content_hash"] is None  # nothing was published, and the charge stays
    assert s.spend_per_day("bus")["2024-03-04"][0] == pytest.approx(0.75)
