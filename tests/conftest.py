"""Shared fixtures: where ../shared/data is (CI puts shared/ beside the clone), and one SparkSession.

CI is strict about what it provides (issue 30): with ``CI`` set to a true value (``.ci/run`` runs under CI=true), a
test that would skip because an extra is missing (Spark/Java, SecretFlow SPU, PostgreSQL, Chromium, a tmpfs mount)
fails instead, saying which extra; on a developer machine those tests still skip with their reason.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

#: skip reasons that mean "an extra CI installs is missing" (the skips of tests/*/spark, contributions, mpc,
#: budget (PostgreSQL), the map's browser tests and the full-disk tmpfs cases)
EXTRA_SKIP = re.compile(r"spark|java|\bspu\b|mpc extra|postgres|initdb|chromium|tmpfs", re.IGNORECASE)


def ci_strict(env: Mapping[str, str] | None = None) -> bool:
    """True under CI (``CI`` set to anything but empty, 0, false, no)."""
    value = (os.environ if env is None else env).get("CI", "")
    return value.strip().lower() not in ("", "0", "false", "no")


def strict_failure(reason: str, env: Mapping[str, str] | None = None) -> str | None:
    """The failure message for a skip with ``reason`` under CI when it names a missing extra, else None."""
    if not ci_strict(env) or not EXTRA_SKIP.search(reason):
        return None
    return f"CI=true: an extra that .ci/run installs is missing, the test would skip: {reason}"


def _skip_reason(longrepr: Any) -> str:
    """The reason of a skip report (pytest stores ``(path, line, 'Skipped: reason')``)."""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail"):
        message = strict_failure(_skip_reason(report.longrepr))
        if message is not None:
            report.outcome = "failed"
            report.longrepr = message


_COLLECTION_FAILURES: list[str] = []


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module skipped at collection (``importorskip``) for a missing extra: kept skipped (a failed collection
    would stop the whole run) but it fails the session under CI, see :func:`pytest_sessionfinish`. Under
    pytest-xdist this runs in the controller, which receives every skipped collection from the workers."""
    if report.skipped:
        message = strict_failure(_skip_reason(report.longrepr))
        if message is not None:
            _COLLECTION_FAILURES.append(f"{report.nodeid}: {message}")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in _COLLECTION_FAILURES:
        terminalreporter.write_line(f"FAILED (collection) {line}", red=True)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _COLLECTION_FAILURES and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside this checkout")
    return SHARED_DATA


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One SparkSession (local[2]) shared by every Spark test; they skip, saying why, without PySpark or Java
    (and fail under CI, see :func:`strict_failure`)."""
    pytest.importorskip(
        "pyspark", reason="PySpark not installed (pip install 'urbandp[spark]'): Spark tests skip"
    )
    from urbandp._contributions.spark_session import get_spark, spark_missing_reason

    reason = spark_missing_reason()
    if reason is not None:
        pytest.skip(f"Spark cannot run here: {reason}")
    session = get_spark("local[2]")
    session.conf.set("spark.sql.shuffle.partitions", "2")  # small test data: few tasks per stage
    return session
