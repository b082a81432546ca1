"""Reliability of the SQLite budget store: concurrent releases and kill -9 at each stage of a release."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from urbandp._privacy.budget_store import (
    ENV_TEST_PAUSE,
    STATUS_COMMITTED,
    STATUS_CRASHED,
    BudgetStore,
    DatasetCaps,
)

WORKER = Path(__file__).with_name("release_worker.py")


def _init(url: str, per_day: float) -> None:
    s = BudgetStore(url)
    s.init_dataset(DatasetCaps("bus", "vehicle-day", per_day))
    s.close()


def _spawn(url: str, eps: float, out: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), url, str(eps), str(out)],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "b.sqlite")
    url: str = request.getfixturevalue("postgres_url")
    # a fresh schema per test: drop what an earlier test left
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS cap_changes, charges, releases, datasets, schema_version")
    return url


def test_concurrent_releases_never_pass_the_cap(tmp_path: Path, store_url: str) -> None:
    """6 processes each ask 0.3 of a 1.0 cap on the same 3 days: exactly 3 succeed, 3 are refused."""
    url = store_url
    _init(url, per_day=1.0)
    procs = [_spawn(url, 0.3, tmp_path / f"out{i}") for i in range(6)]
    codes = [p.wait(timeout=60) for p in procs]
    errs = [p.stderr.read().decode() for p in procs if p.stderr is not None]
    assert sorted(codes) == [0, 0, 0, 3, 3, 3], errs
    s = BudgetStore(url)
    spend = s.spend_per_day("bus")
    assert set(spend) == {"2024-03-04", "2024-03-05", "2024-03-06"}
    assert all(v[0] == pytest.approx(0.9) for v in spend.values())
    hist = s.history("bus")
    assert [h["status"] for h in hist] == [STATUS_COMMITTED] * 3
    released = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out"))
    assert len(released) == 3


@pytest.mark.parametrize("stage", ["before-noise", "after-noise", "during-writing", "before-commit"])
def test_kill_9_at_each_stage_stays_charged(tmp_path: Path, stage: str) -> None:
    _kill_9_at(str(tmp_path / "b.sqlite"), tmp_path, stage)


def test_kill_9_while_writing_postgresql(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS cap_changes, charges, releases, datasets, schema_version")
    _kill_9_at(postgres_url, tmp_path, "during-writing")


def _kill_9_at(url: str, tmp_path: Path, stage: str) -> None:
    _init(url, per_day=1.0)
    flag = tmp_path / "paused"
    out = tmp_path / "release"
    p = _spawn(url, 0.7, out, {ENV_TEST_PAUSE: f"{stage}:{flag}"})
    deadline = time.monotonic() + 30
    while not flag.exists():
        assert p.poll() is None, p.stderr.read().decode() if p.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    s = BudgetStore(url)
    (h,) = s.history("bus")
    assert h["status"] == STATUS_CRASHED
    assert s.spend_per_day("bus")["2024-03-04"][0] == pytest.approx(0.7)  # never under-charged
    # no half-written output: either no release directory, or (killed before commit) a complete one
    if stage == "before-commit":
        assert sorted(f.name for f in out.iterdir()) == [".urbandp-output.json", "part1.csv", "part2.csv"]
    else:
        assert not out.exists()
    # the crashed reservation still counts: a second 0.7 release is refused
    q = _spawn(url, 0.7, tmp_path / "again")
    assert q.wait(timeout=30) == 3
