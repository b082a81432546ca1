"""A throwaway Spark standalone cluster on 127.0.0.1 for the tests: one master and N workers, started with
PySpark's own ``sbin/spark-daemon.sh`` (what a Spark distribution's ``start-master.sh`` / ``start-worker.sh``
call; the PySpark wheel ships ``spark-daemon.sh`` and ``bin/spark-class`` but not those two wrappers).

Everything the daemons write (logs, pid files, the workers' application folders, the executors' scratch) goes
under one temporary folder; only 127.0.0.1 is bound (``SPARK_LOCAL_IP``, ``--host``); :meth:`stop` stops the
daemons through the same script and then kills any of *their* pids (read from their pid files) still alive.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def spark_home() -> Path:
    """The PySpark package's folder: it holds ``bin/``, ``sbin/`` and ``jars/`` (SPARK_HOME of a pip install)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass
class StandaloneCluster:
    """A master and ``workers`` workers (``cores`` cores and ``memory`` each) on 127.0.0.1, state under ``root``."""

    root: Path
    workers: int = 2
    cores: int = 1
    memory: str = "1g"
    master_port: int = field(default_factory=free_port)
    webui_port: int = field(default_factory=free_port)
    home: Path = field(default_factory=spark_home)

    @property
    def url(self) -> str:
        """The master URL a driver connects to."""
        return f"spark://{HOST}:{self.master_port}"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    @property
    def pid_dir(self) -> Path:
        return self.root / "pids"

    @property
    def work_dir(self) -> Path:
        """SPARK_WORKER_DIR: one ``app-*/<executor>/`` folder per application that ran an executor here."""
        return self.root / "work"

    @property
    def conf_dir(self) -> Path:
        return self.root / "conf"

    def env(self) -> dict[str, str]:
        """The environment of the daemons and of the drivers: 127.0.0.1 only, every file under ``root``."""
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(self.home),
            SPARK_CONF_DIR=str(self.conf_dir),
            SPARK_LOG_DIR=str(self.log_dir),
            SPARK_PID_DIR=str(self.pid_dir),
            SPARK_WORKER_DIR=str(self.work_dir),
            SPARK_LOCAL_DIRS=str(self.root / "local"),
            SPARK_LOCAL_IP=HOST,
            SPARK_MASTER_HOST=HOST,
            SPARK_PUBLIC_DNS=HOST,
            SPARK_IDENT_STRING=f"urbandp-test-{os.getpid()}",
            SPARK_DAEMON_MEMORY="256m",
            SPARK_NICENESS="0",
        )
        return env

    def _daemon(self, action: str, cls: str, instance: int, *args: str) -> None:
        script = self.home / "sbin" / "spark-daemon.sh"
        subprocess.run(
            ["bash", str(script), action, cls, str(instance), *args],
            env=self.env(),
            check=action == "start",
            capture_output=True,
            text=True,
            timeout=60,
        )

    def start(self, timeout: float = 90.0) -> None:
        """Start the master and the workers; wait (at most ``timeout`` s) until all workers are ALIVE at the master,
        else raise ``RuntimeError`` with the tail of every daemon log."""
        for folder in (self.log_dir, self.pid_dir, self.work_dir, self.conf_dir, self.root / "local"):
            folder.mkdir(parents=True, exist_ok=True)
        # executors of 512 MB fit a 1 GB worker; read by the daemons and by every driver's spark-submit
        (self.conf_dir / "spark-defaults.conf").write_text(
            "spark.executor.memory 512m\nspark.sql.shuffle.partitions 4\n"
            "spark.driver.host 127.0.0.1\nspark.driver.bindAddress 127.0.0.1\n"
        )
        self._daemon(
            "start", MASTER_CLASS, 1, "--host", HOST, "--port", str(self.master_port),
            "--webui-port", str(self.webui_port),
        )  # fmt: skip
        for number in range(1, self.workers + 1):
            self._daemon(
                "start", WORKER_CLASS, number, "--host", HOST, "--webui-port", str(free_port()),
                "--cores", str(self.cores), "--memory", self.memory, self.url,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.alive_workers() == self.workers:
                return
            time.sleep(1.0)
        raise RuntimeError(
            f"the standalone cluster did not register {self.workers} workers in {timeout:.0f} s "
            f"(alive: {self.alive_workers()}):\n{self.log_tail()}"
        )

    def state(self) -> dict[str, object]:
        """The master's state as its web UI serves it (``/json/``); empty while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.webui_port}/json/", timeout=5) as reply:
                return dict(json.load(reply))
        except (OSError, ValueError):
            return {}

    def alive_workers(self) -> int:
        workers = self.state().get("workers", [])
        assert isinstance(workers, list)
        return sum(1 for w in workers if w.get("state") == "ALIVE")

    def applications(self) -> list[dict[str, object]]:
        """Every application the master has seen (running and completed)."""
        state = self.state()
        return [*state.get("activeapps", []), *state.get("completedapps", [])]  # type: ignore[misc]

    def executor_logs(self) -> list[Path]:
        """The stderr of every executor the workers launched (``work/app-*/<id>/stderr``)."""
        return sorted(self.work_dir.glob("app-*/*/stderr"))

    def log_tail(self, lines: int = 40) -> str:
        parts = []
        for log in sorted(self.log_dir.glob("*.out")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(parts) or "(no daemon log)"

    def pids(self) -> list[int]:
        """The daemons' pids, from their pid files."""
        found = []
        for pid_file in self.pid_dir.glob("*.pid"):
            text = pid_file.read_text().strip()
            if text.isdigit():
                found.append(int(text))
        return found

    def stop(self, grace: float = 15.0) -> None:
        """Stop the workers and the master with ``spark-daemon.sh stop`` (SIGTERM), wait up to ``grace`` s, then
        SIGKILL those of their pids still alive (the script removes the pid files, so they are read first)."""
        pids = self.pids()
        for number in range(1, self.workers + 1):
            self._daemon("stop", WORKER_CLASS, number)
        self._daemon("stop", MASTER_CLASS, 1)
        deadline = time.monotonic() + grace
        while pids and time.monotonic() < deadline:
            pids = [pid for pid in pids if _alive(pid)]
            time.sleep(0.2)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie of another parent counts as gone: /proc says ``Z``)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
