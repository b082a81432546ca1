"""Run ``urbandp`` as a real process and check a refusal: shared by the system tests (on ``pythonpath``)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Literal

from warm_process import run_warm


def run_urbandp(
    *args: str, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m urbandp ARGS`` in ``cwd``, output captured as text, never raising on a non-zero exit."""
    return run_warm(list(args), cwd=cwd, timeout=timeout)


def assert_refused(
    res: subprocess.CompletedProcess[str],
    needle: str,
    *,
    others: Literal["any", "warnings", "none"] = "any",
    code: int = 2,
) -> None:
    """Exit ``code`` (2: unusable input; 4: budget exceeded), no traceback, one ``urbandp: error:`` line with
    ``needle``.

    ``others`` says what else stderr may hold: anything (``any``), only one-line ``urbandp:`` warnings
    (``warnings``: no usage block, no Java trace, no wrapped line), or nothing at all (``none``).
    """
    assert res.returncode == code, (res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr, res.stderr[-2000:]
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("urbandp: error:")]
    assert len(errors) == 1 and needle in errors[0], res.stderr
    if others == "warnings":
        assert all(ln.startswith("urbandp: ") for ln in lines), res.stderr
    elif others == "none":
        assert len(lines) == 1, res.stderr


def owner_report(out: Path) -> dict[str, Any]:
    """The exact record counts of a release, owner material in ``owner_only/<name>/input_report.json`` beside it."""
    import json

    return dict(json.loads((out.parent / "owner_only" / out.name / "input_report.json").read_text()))


def synth_inputs(root: Path, households: int) -> dict[str, Path]:
    """Small synthetic inputs of three wings (a 6-bus 2-day fleet, one day of taps, a survey) under ``root``."""
    fleet, taps, survey = root / "fleet.parquet", root / "taps", root / "survey"
    assert (
        run_urbandp("synth", "fleet", "--vehicles", "6", "--days", "2", "--out", str(fleet)).returncode == 0
    )
    made = run_urbandp("counts", "synth", "--days", "1", "--trips-per-day", "50", "--out", str(taps))
    assert made.returncode == 0
    made = run_urbandp("synth", "survey", "--households", str(households), "--out", str(survey))
    assert made.returncode == 0
    return {"fleet": fleet, "taps": taps, "survey": survey}


def unprivileged(cmd: list[str]) -> list[str] | None:
    """``cmd`` as the unprivileged user ``nobody`` (uid/gid 65534, no groups) when this process is root, so that
    the root-only cases (an unreadable file, a read-only folder) run in CI, which runs as root: through util-linux
    ``setpriv``, else ``runuser``; ``cmd`` itself when not root; None when root has neither tool. The paths the
    command needs must be readable (and its output folder's parent writable) by others: see :func:`shared_tmp`."""
    import os
    import shutil

    if os.geteuid() != 0:
        return cmd
    if shutil.which("setpriv"):
        return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", *cmd]
    if shutil.which("runuser"):
        return ["runuser", "-u", "nobody", "--", *cmd]
    return None


def shared_tmp() -> Path:
    """A fresh folder under the system temp dir that ``nobody`` can read and enter (pytest's tmp_path is 0700
    under root); the caller removes it."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="urbandp-unprivileged-"))
    folder.chmod(0o755)
    return folder
