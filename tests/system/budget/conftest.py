"""A throwaway PostgreSQL cluster for the budget store tests (skipped with a reason when no server is installed).

``initdb`` into a temporary directory and ``pg_ctl start`` on a unix socket there with a random port; as root the
server runs as the ``postgres`` user (PostgreSQL refuses to run as root). ``.ci/run`` installs Debian's
``postgresql`` when it is missing.
"""

from __future__ import annotations

import glob
import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    pytest.importorskip("psycopg", reason="psycopg not installed (pip install 'urbandp[budget-pg]')")
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("no PostgreSQL server binaries (initdb) found; .ci/run installs Debian's postgresql")
    as_root = os.geteuid() == 0
    if as_root and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: cannot start PostgreSQL as a non-root user")
    root = Path(tempfile.mkdtemp(prefix="urbandp-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    prefix: list[str] = []
    if as_root:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    port = random.randint(20000, 60000)
    run = {"check": True, "stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "timeout": 60}
    try:
        subprocess.run(
            [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"], **run
        )  # type: ignore[call-overload]
        opts = f"-k {sock} -p {port} -c listen_addresses='' -c fsync=off"
        subprocess.run(  # type: ignore[call-overload]
            [
                *prefix,
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                opts,
                "-l",
                str(root / "log"),
                "-w",
                "start",
            ],
            **run,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"could not start a throwaway PostgreSQL cluster: {err}")
    try:
        yield f"postgresql://postgres@/postgres?host={sock}&port={port}"
    finally:
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)
