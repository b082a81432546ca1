"""Delta in the budget store, as a user meets it (issue 30 item 3): `budget init --delta-total`, a release refused
at the cap with exit 4 before any noise, `budget show` and `budget history` stating delta; a version 3 store on
PostgreSQL migrates.

Measured before: `budget init --delta-total` did not exist (exit 2, no such option), `budget show` printed "group
rho over all days" and no delta, and a second release past any delta was accepted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from urbandp_process import assert_refused, run_urbandp

from urbandp._privacy.budget_store import BudgetStore

pytestmark = pytest.mark.system

WINDOW_EPSILON = "4.0103"
"""privacy.json's epsilon_per_window of the release below (epsilon 2 a day, Gaussian, 2 days, a public extent):
4 rho converted once by the exact Gaussian curve (4.29 by the zCDP bound, which the store under-booked as 2 x 2)."""
BBOX = "21.09,72.75,21.25,72.91"  # the synthetic fleet's city: a public domain, so no selection delta


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fleet") / "fleet.parquet"
    res = run_urbandp(
        "synth", "fleet", "--vehicles", "6", "--days", "2", "--start", "2024-03-04", "--out", str(path)
    )
    assert res.returncode == 0, res.stderr
    return path


def _release(fleet: Path, store: str, out: Path) -> list[str]:
    return [
        "release", str(fleet), "--start", "2024-03-04", "--end", "2024-03-05", "--epsilon-per-day", "2",
        "--domain-bbox", BBOX, "--no-map", "--dataset", "surat", "--budget-store", store, "--out", str(out),
    ]  # fmt: skip


def test_delta_is_composed_capped_and_shown(fleet: Path, tmp_path: Path) -> None:
    """Each Gaussian release over the public domain costs delta 1e-6 (its conversion delta: one zCDP conversion of
    the window's D^2 rho): the first fits a 1.5e-6 cap, the second is refused with what was asked and what is left."""
    store = str(tmp_path / "b.sqlite")
    init = run_urbandp(
        "budget", "init", "surat", "--unit", "vehicle-day", "--epsilon-per-day", "100", "--delta-total", "1.5e-6",
        "--budget-store", store,
    )  # fmt: skip
    assert init.returncode == 0 and "delta total 1.5e-06" in init.stdout, init.stderr
    first = run_urbandp(*_release(fleet, store, tmp_path / "w1"))
    assert first.returncode == 0, first.stderr
    second = run_urbandp(*_release(fleet, store, tmp_path / "w2"))
    assert_refused(
        second,
        "total delta budget of 'surat' exceeded: asked delta=1e-06 over 2 days (what a unit present on all of them "
        "pays), left 5e-07 of 1.5e-06",
        others="none",
        code=4,
    )
    assert not (tmp_path / "w2").exists()  # refused before any noise: nothing written
    assert len(BudgetStore(store).history("surat")) == 1  # and nothing booked
    show = run_urbandp("budget", "show", "surat", "--budget-store", store, "--out", str(tmp_path / "show"))
    assert show.returncode == 0, show.stderr
    assert (
        "delta per day at most 1e-06; delta over all releases 1e-06 (left 5e-07 of 1.5e-06), for a vehicle present "
        "on every day" in show.stdout
    )
    assert (tmp_path / "show" / "spend.csv").read_text().splitlines() == [
        "day,epsilon,epsilon_left,rho,delta",
        *[
            # epsilon 2 a day by the zCDP bound the noise is calibrated to: 1.86 by the exact Gaussian curve
            f"2024-03-0{d},1.86167167151,98.1383,{BudgetStore(store).spend_per_day('surat')['2024-03-04'][1]:.12g},"
            "1e-06"
            for d in (4, 5)
        ],
    ]
    # the window as the release states it: a bus on both days is a group of 2 vehicle-days, 4 rho converted once
    stated = json.loads((tmp_path / "w1" / "privacy.json").read_text())
    window = f"{stated['epsilon_per_window']:.6g}"
    assert window == WINDOW_EPSILON and stated["delta_per_window"] == 1e-6
    assert (
        f"epsilon over all releases {window}, over 2 days, for a vehicle present on every day" in show.stdout
    )
    history = run_urbandp("budget", "history", "surat", "--budget-store", store)
    assert history.returncode == 0, history.stderr
    assert f"(2 days, epsilon {window}, delta 1e-06)" in history.stdout


def test_default_delta_cap_and_raising_it(tmp_path: Path) -> None:
    store = str(tmp_path / "b.sqlite")
    init = run_urbandp(
        "budget", "init", "d", "--unit", "event", "--epsilon-per-day", "1", "--budget-store", store
    )
    assert init.returncode == 0 and "delta total 1e-05" in init.stdout, init.stderr
    again = run_urbandp(
        "budget", "init", "d", "--unit", "event", "--delta-total", "1", "--budget-store", store
    )
    assert again.returncode == 0 and "epsilon per day 1.0" in again.stdout and "delta total 1" in again.stdout
    bad = run_urbandp("budget", "init", "d", "--unit", "event", "--delta-total", "2", "--budget-store", store)
    assert_refused(bad, "--delta-total must be a number in [0, 1], got 2.0", others="none")


def test_a_version_3_postgresql_store_migrates(postgres_url: str) -> None:
    import psycopg

    from urbandp._privacy.budget_migrations import LATEST_VERSION, MIGRATIONS

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS cap_changes, charges, releases, datasets, schema_version")
        for stmts in MIGRATIONS[:3]:
            for stmt in stmts:
                conn.execute(stmt)  # type: ignore[arg-type]
        conn.execute("INSERT INTO schema_version (version) VALUES (3)")
        conn.execute(
            "INSERT INTO datasets (name, unit, epsilon_per_day, created_at) VALUES ('bus', 'vehicle-day', 10, 't')"
        )
        conn.execute(
            "INSERT INTO releases (id, dataset, status, mechanism, params, command_line, host, pid, reserved_at) "
            "VALUES ('r1', 'bus', 'committed', 'm', '{}', 'c', 'h', 1, 't')"
        )
        for day in ("2024-03-04", "2024-03-05"):
            conn.execute(
                "INSERT INTO charges (release_id, day, epsilon, rho, delta) VALUES ('r1', %s, 1, 0.05, 5e-7)",
                (day,),
            )
    show = run_urbandp("budget", "show", "bus", "--budget-store", postgres_url)
    assert show.returncode == 0, show.stderr
    assert (
        "delta per day at most 5e-07; delta over all releases 1e-06 (no cap: declared before" in show.stdout
    )
    s = BudgetStore(postgres_url)
    assert s._exec("SELECT version FROM schema_version") == [(LATEST_VERSION,)]
    assert [h["window_delta"] for h in s.history("bus")] == [pytest.approx(1e-6)]
    s.close()
