"""``python -m urbandp ARGS`` as a real process, forked from an interpreter that has already imported urbandp.

A system test that runs the command line pays for a new interpreter and for importing Polars, NumPy, SciPy,
OpenDP, PyArrow and urbandp each time: about a second of CPU before the command does anything, which was most of
the suite's time. Here a *warm server* (one per pytest worker and per concurrent caller) imports those once and
then ``fork()``s a child for every command. The child is a real process: its own pid, its own working folder and
environment, standard input from ``/dev/null``, standard output and error written to files at the file-descriptor
level, and an exit code set exactly as the interpreter sets it (``SystemExit`` codes, 1 and the traceback on an
uncaught exception). It runs ``urbandp/__main__.py`` through :mod:`runpy`, as ``python -m urbandp`` does.

What it does not cover (and the few tests that need it start a fresh interpreter, ``URBANDP_TEST_FRESH=1`` makes
every test do so): errors at import time of a module the server imported first, and the console script itself
(the wheel smoke test in CI runs that).
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

FRESH_ENV = "URBANDP_TEST_FRESH"
"""Set to 1 to start a fresh interpreter for every command (what the warm server stands in for)."""

_SERVER_CODE = r"""
import atexit, json, os, random, select, signal, sys, time, traceback, runpy
import numpy, polars, pyarrow, scipy.stats, scipy.spatial, opendp.prelude  # noqa: F401
import urbandp, urbandp.cli  # noqa: F401
from urbandp.cli import build_app
build_app()  # imports every group's command module, as a command line naming a group does

protocol_in, protocol_out = sys.stdin, sys.stdout

def child(req):
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    time.tzset()
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                            (1, req["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, req["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin = sys.__stdin__ = open(0, closefd=False)
    sys.stdout = sys.__stdout__ = open(1, "w", closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, errors="backslashreplace", closefd=False)
    random.seed()
    numpy.random.seed()
    sys.argv = ["urbandp", *req["argv"]]
    code = 0
    try:
        runpy.run_module("urbandp", run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code & 0xFF)

for line in protocol_in:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        child(req)
    fd = os.pidfd_open(pid)
    ready, _, _ = select.select([fd], [], [], req["timeout"])
    timed_out = not ready
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    os.close(fd)
    code = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    protocol_out.write(json.dumps({"rc": code, "timed_out": timed_out, "cpu": cpu}) + "\n")
    protocol_out.flush()
"""


class _WarmServer:
    """One server process; one command at a time."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER_CODE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(
        self, args: list[str], cwd: Path | None, env: dict[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        with tempfile.TemporaryDirectory(prefix="urbandp-warm-") as scratch:
            out, err = Path(scratch) / "stdout", Path(scratch) / "stderr"
            request = {
                "argv": args,
                "cwd": str(cwd if cwd is not None else Path.cwd()),
                "env": env,
                "timeout": timeout,
                "out": str(out),
                "err": str(err),
            }
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            reply = self.proc.stdout.readline()
            if not reply:
                raise RuntimeError(f"the warm urbandp server died (exit {self.proc.wait()})")
            answer = json.loads(reply)
            global CHILD_CPU_SECONDS
            CHILD_CPU_SECONDS += answer["cpu"]
            stdout = out.read_text(errors="replace") if out.exists() else ""
            stderr = err.read_text(errors="replace") if err.exists() else ""
        command = [sys.executable, "-m", "urbandp", *args]
        if answer["timed_out"]:
            raise subprocess.TimeoutExpired(command, timeout, output=stdout, stderr=stderr)
        return subprocess.CompletedProcess(command, answer["rc"], stdout, stderr)


CHILD_CPU_SECONDS = 0.0
"""CPU seconds of the commands run so far (their own; the servers' imports are not counted)."""

_IDLE: list[_WarmServer] = []
_LOCK = threading.Lock()


@atexit.register
def _stop_all() -> None:
    """Close every idle server's input so that it exits, and reap it."""
    with _LOCK:
        servers, _IDLE[:] = list(_IDLE), []
    for server in servers:
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        try:
            server.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.proc.kill()


def _take() -> _WarmServer:
    with _LOCK:
        while _IDLE:
            server = _IDLE.pop()
            if server.alive():
                return server
    return _WarmServer()


def _give_back(server: _WarmServer) -> None:
    if server.alive():
        with _LOCK:
            _IDLE.append(server)


def run_warm(
    args: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m urbandp *args`` in ``cwd`` with ``env`` (default: this process's environment), output captured
    as text, never raising on a non-zero exit; a fresh interpreter when ``URBANDP_TEST_FRESH=1``."""
    environment = dict(os.environ if env is None else env)
    if os.environ.get(FRESH_ENV) == "1":
        return subprocess.run(
            [sys.executable, "-m", "urbandp", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=cwd,
            env=environment,
        )
    server = _take()
    try:
        return server.run(list(args), cwd, environment, timeout)
    finally:
        _give_back(server)
