"""The scheduled-release script of docs/deploy.md, run as written against a throwaway PostgreSQL store (issue 32):
the week is published with exit 0 and booked by the scheduler's operator; the same week again exits 2 while its
folder is there, and 4 (the per-day cap) once it is gone, with one line each, booking nothing; the owner material lands in owner_only/<monday>/ beside the release.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from urbandp_process import run_urbandp

from urbandp._privacy.budget_store import BudgetStore

pytestmark = pytest.mark.system

DOC = Path(__file__).resolve().parents[3] / "docs" / "deploy.md"


def _script() -> str:
    text = DOC.read_text()
    block = re.search(r"<!-- publish_week\.py[^\n]*-->\n```python\n(.*?)```", text, re.S)
    assert block is not None, "docs/deploy.md lost its publish_week.py block"
    return block.group(1)


def test_the_documented_script_publishes_once_and_refuses_the_rerun(
    postgres_url: str, tmp_path: Path
) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS cap_changes, charges, releases, datasets, schema_version")
    inbox, releases = tmp_path / "inbox", tmp_path / "releases"
    week = inbox / "2024-03-04"
    week.mkdir(parents=True)
    res = run_urbandp(
        "synth",
        "fleet",
        "--vehicles",
        "6",
        "--days",
        "7",
        "--start",
        "2024-03-04",
        "--out",
        str(week / "f.parquet"),
    )
    assert res.returncode == 0, res.stderr
    res = run_urbandp(
        "budget", "init", "surat", "--unit", "vehicle-day", "--epsilon-per-day", "4", "--rho-total", "62",
        "--operator", "alice", "--budget-store", postgres_url,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    script = tmp_path / "publish_week.py"
    script.write_text(_script())
    env = {**os.environ, "URBANDP_BUDGET_STORE": postgres_url, "URBANDP_INBOX": str(inbox)}
    env |= {"URBANDP_RELEASES": str(releases)}
    env.pop("URBANDP_OPERATOR", None)

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script), "2024-03-04"], env=env, capture_output=True, text=True, timeout=300
        )

    first = run()
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == f"published {releases / '2024-03-04'}"
    assert (releases / "2024-03-04" / "privacy.json").is_file()
    assert (releases / "owner_only" / "2024-03-04" / "input_report.json").is_file()
    again = run()  # the week's folder exists: refused before the store is asked
    assert again.returncode == 2 and "holds an earlier urbandp output" in again.stderr, again.stderr
    import shutil

    shutil.rmtree(releases / "2024-03-04")  # as if the first run had died before its folder was in place
    again = run()
    assert again.returncode == 4, again.stderr
    errors = [line for line in again.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith(
        "urbandp: error: privacy budget of 'surat' exceeded on 2024-03-04: asked epsilon=3.73756 per vehicle-day, "
        "left 0.262443 of 4"
    ), again.stderr
    s = BudgetStore(postgres_url)
    try:
        ((status, who, days),) = [(h["status"], h["operator"], h["days"]) for h in s.history("surat")]
        assert (status, who, days) == ("committed", "weekly-timer", 7)
        assert [c["operator"] for c in s.cap_changes("surat")] == ["alice"] * 3
    finally:
        s.close()
