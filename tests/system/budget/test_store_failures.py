"""The budget store refuses unusable stores in one line and never loses a cap (issue 19 items 3 and 5).

Measured before: a store path that is a folder or on a read-only filesystem ended in ``sqlite3.OperationalError``
(exit 1); 8 concurrent ``budget init`` runs on a fresh PostgreSQL database raised UniqueViolation on
``schema_version``; a disk that fills at commit said "cannot rollback - no transaction is active" (exit 1);
re-running ``budget init`` without a cap removed the cap; ``budget show`` on a missing store created an empty file.
"""

from __future__ import annotations

import contextlib
import functools
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from urbandp_process import assert_refused, run_urbandp

pytestmark = pytest.mark.system


_one_line_exit_2 = functools.partial(assert_refused, others="none")


def _init(store: str, dataset: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``budget init DATASET`` (vehicle-day, epsilon total 9) in ``store``; checked to succeed unless ``check`` off."""
    res = run_urbandp(
        "budget", "init", dataset, "--unit", "vehicle-day", "--epsilon-total", "9", "--budget-store", store
    )
    assert res.returncode == 0 or not check, res.stderr
    return res


def test_store_path_that_is_a_folder_is_one_line(tmp_path: Path) -> None:
    for args in (
        ["init", "d", "--unit", "vehicle-day", "--epsilon-per-day", "1"],
        ["show", "d"],
        ["history", "d"],
    ):
        _one_line_exit_2(run_urbandp("budget", *args, "--budget-store", str(tmp_path)), "is a folder")


def test_show_and_history_on_a_missing_store_create_nothing(tmp_path: Path) -> None:
    store = tmp_path / "budget.sqlite"
    for verb in ("show", "history"):
        _one_line_exit_2(run_urbandp("budget", verb, "d", "--budget-store", str(store)), "no budget store")
    assert list(tmp_path.iterdir()) == []


def test_reinit_without_a_cap_keeps_the_cap(tmp_path: Path) -> None:
    store = str(tmp_path / "b.sqlite")
    assert run_urbandp(
        "budget", "init", "d", "--unit", "vehicle-day", "--epsilon-total", "40", "--budget-store", store
    )
    res = run_urbandp(
        "budget", "init", "d", "--unit", "vehicle-day", "--epsilon-per-day", "5", "--budget-store", store
    )
    assert res.returncode == 0, res.stderr
    assert "total 40.0" in res.stdout and "per day 5.0" in res.stdout
    from urbandp._privacy.budget_store import BudgetStore

    caps = BudgetStore(store).caps("d")
    assert (caps.epsilon_per_day, caps.epsilon_total) == (5.0, 40.0)


@contextlib.contextmanager
def _tmpfs(path: Path, size: str) -> object:
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=False)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root): the full-disk and read-only cases are not run")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_read_only_store_is_one_line(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "ro", "1m") as ro:
        store = str(Path(ro) / "b.sqlite")  # type: ignore[arg-type]
        _init(store, "d")
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        res = run_urbandp(
            "budget", "init", "d", "--unit", "vehicle-day", "--epsilon-total", "3", "--budget-store", store
        )
        _one_line_exit_2(res, "budget store")


def test_disk_full_at_commit_is_one_line_and_the_store_stays_usable(tmp_path: Path) -> None:
    """The store's disk fills while a transaction writes: one line naming the store, no rollback error."""
    with _tmpfs(tmp_path / "small", "96k") as small:
        store = str(Path(small) / "b.sqlite")  # type: ignore[arg-type]
        _init(store, "d0")
        (Path(small) / "filler").write_bytes(b"")  # type: ignore[operator]
        with contextlib.suppress(OSError), (Path(small) / "filler").open("wb") as fill:  # type: ignore[operator]
            while True:
                fill.write(b"x" * 4096)
                fill.flush()
        res = None
        for i in range(200):  # each new dataset adds a row: the first one that needs a new page fails
            res = _init(store, f"dataset-with-a-long-name-{i:04d}-" + "x" * 200, check=False)
            if res.returncode != 0:
                break
        assert res is not None and res.returncode != 0, "the disk never filled"
        _one_line_exit_2(res, "budget store")
        assert "cannot rollback" not in res.stderr
        (Path(small) / "filler").unlink()  # type: ignore[operator]
        shown = run_urbandp("budget", "show", "d0", "--budget-store", store)
        assert shown.returncode == 0, shown.stderr


def test_eight_concurrent_inits_on_a_fresh_postgresql_database(postgres_url: str) -> None:
    """Concurrent first opens race on CREATE TABLE IF NOT EXISTS (pg_type's unique index): serialised now."""
    import psycopg

    name = "fresh_concurrent_init"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    url = postgres_url.replace("/postgres?", f"/{name}?")

    def init(i: int) -> subprocess.CompletedProcess[str]:
        return run_urbandp(
            "budget",
            "init",
            f"d{i}",
            "--unit",
            "vehicle-day",
            "--epsilon-per-day",
            "1",
            "--budget-store",
            url,
        )

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(init, range(8)))
    assert [r.returncode for r in results] == [0] * 8, [r.stderr[-500:] for r in results]
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM schema_version").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM datasets").fetchone() == (8,)


def test_fleet_write_failing_after_noise_keeps_the_charge_and_shows_no_noise(tmp_path: Path) -> None:
    """Issue 20 defect 1, as measured: three runs whose write failed printed three fresh noisy counts (422.2,
    511.9, 447.4) and charged nothing. Now the failed run stays charged and prints nothing derived from noise."""
    fleet, store = tmp_path / "fleet.parquet", str(tmp_path / "b.sqlite")
    assert (
        run_urbandp("synth", "fleet", "--vehicles", "6", "--days", "2", "--out", str(fleet)).returncode == 0
    )
    init = run_urbandp(
        "budget", "init", "surat", "--unit", "vehicle-day", "--epsilon-per-day", "10", "--budget-store", store
    )
    assert init.returncode == 0, init.stderr
    release = [
        "release",
        str(fleet),
        "--start",
        "2021-11-15",
        "--end",
        "2021-11-16",
        "--epsilon-per-day",
        "10",
    ]
    release += ["--dataset", "surat", "--budget-store", store]
    with _tmpfs(tmp_path / "small", "12k") as small:
        failed = run_urbandp(*release, "--out", str(Path(small) / "rel"))  # type: ignore[arg-type]
    _one_line_exit_2(failed, "no space left on device")
    assert (
        "noisy" not in failed.stderr and "warning" not in failed.stderr
    )  # nothing drawn from noise is shown
    from urbandp._privacy.budget_store import STATUS_ABORTED, BudgetStore

    s = BudgetStore(store)
    assert [h["status"] for h in s.history("surat")] == [STATUS_ABORTED]
    assert {d: v[0] for d, v in s.spend_per_day("surat").items()} == {"2021-11-15": 10.0, "2021-11-16": 10.0}
    s.close()
    again = run_urbandp(*release, "--out", str(tmp_path / "rel"))
    _one_line_exit_2(again, "exceeded", code=4)  # the noise cannot be drawn again for free


def test_store_full_at_commit_says_the_release_was_published(tmp_path: Path) -> None:
    """Issue 30: the store's disk fills after the release is renamed into place, before its commit. Measured
    before: exit 2 with "budget store ...: database or disk is full; this transaction was rolled back", and nothing
    said about the release, which was published. Now the one line says where it is and that its charge stays."""
    import os
    import signal
    import sys
    import time

    from urbandp._privacy.budget_store import ENV_TEST_PAUSE, STATUS_CRASHED, BudgetStore

    fleet, out, flag = tmp_path / "fleet.parquet", tmp_path / "rel", tmp_path / "paused"
    assert (
        run_urbandp("synth", "fleet", "--vehicles", "6", "--days", "2", "--out", str(fleet)).returncode == 0
    )
    with _tmpfs(tmp_path / "small", "256k") as small:
        store = str(Path(small) / "b.sqlite")  # type: ignore[arg-type]
        _init(store, "surat")
        args = [
            str(fleet),
            "--start",
            "2021-11-15",
            "--end",
            "2021-11-16",
            "--epsilon-per-day",
            "1",
            "--no-map",
        ]
        p = subprocess.Popen(
            [sys.executable, "-m", "urbandp", "release", *args, "--dataset", "surat", "--budget-store", store,
             "--out", str(out)],
            env={**os.environ, ENV_TEST_PAUSE: f"before-commit:{flag}"},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while not flag.exists():
                assert p.poll() is None, p.communicate()[1]
                assert time.monotonic() < deadline
                time.sleep(0.05)
            with contextlib.suppress(OSError), (Path(small) / "filler").open("wb") as fill:  # type: ignore[operator]
                while True:
                    fill.write(b"x" * 4096)
                    fill.flush()
            flag.unlink()  # the run goes on to its commit, on a full disk
            stdout, stderr = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
        res = subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr)
        _one_line_exit_2(res, f"the release was published at {out}, but the budget store could not confirm")
        assert "database or disk is full" in stderr and "stays booked, unconfirmed" in stderr
        assert stdout == ""  # the summary (noisy values) is printed only once the charge is committed
        assert (out / "privacy.json").exists()  # published, complete
        (Path(small) / "filler").unlink()  # type: ignore[operator]
        s = BudgetStore(store)
        (h,) = s.history("surat")
        assert h["status"] == STATUS_CRASHED and h["content_hash"] is None
        spent = {
            "2021-11-15": pytest.approx(1.0),
            "2021-11-16": pytest.approx(1.0),
        }  # Gaussian: rho converted
        assert {d: v[0] for d, v in s.spend_per_day("surat").items()} == spent
        s.close()
