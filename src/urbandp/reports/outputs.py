"""Output directories written atomically, and strict JSON (DESIGN.md, "Outputs").

Every command that writes a directory writes it into a temporary sibling first and renames it into place at the
end, so that a failing run never leaves a partial directory and a successful one never leaves stale files from an
older run beside the new ones. Data-owner material (quarantine rows, true-value plots, leakage
measures) goes to ``owner_only/<name>/`` beside the release directory ``<name>/``, never inside it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urbandp.errors import InputError

if TYPE_CHECKING:
    import polars as pl

OWNER_ONLY = "owner_only"


def _check_parents(out: Path, option: str) -> None:
    """The nearest existing ancestor of ``out`` must be a writable directory."""
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(f"{option} {out}: {parent} is a file, not a directory")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise InputError(f"{option} {out}: directory {parent} is not writable")
            return


def check_output_path(out: Path) -> Path:
    """Refuse an output path that cannot become a directory, with one clear line (exit code 2 at the CLI)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is an existing file; give a directory path")
    _check_parents(out, "--out")
    return out


def check_output_file(out: Path, option: str = "--out") -> Path:
    """Refuse a file path that cannot be written (a directory, or under a file, or in a read-only directory)."""
    out = Path(out)
    if out.is_dir():
        raise InputError(f"{option} {out} is a directory; give a file path")
    _check_parents(out, option)
    return out


@dataclass(frozen=True)
class OutputDirs:
    """Where a command writes: ``release`` (publishable only) and ``owner`` (data-owner material, not DP).

    Both are temporary while the command runs; :func:`atomic_output_dir` renames them into place at the end.
    ``owner`` is created lazily by :meth:`owner_path` so that a release with no owner material leaves none.
    """

    release: Path
    owner: Path

    def owner_path(self, name: str) -> Path:
        """A file path inside the owner-only directory (created with a README on first use)."""
        if not self.owner.exists():
            self.owner.mkdir(parents=True)
            (self.owner / "README.txt").write_text(OWNER_README)
        return self.owner / name


OWNER_README = (
    "Data-owner material computed from the true data without privacy protection.\n"
    "NOT differentially private: do not publish anything in this folder.\n"
)


def owner_dir_for(out: Path) -> Path:
    """The final owner-only directory of release directory ``out``: ``<parent>/owner_only/<name>/``.

    It sits *beside* the release (DESIGN.md, "Outputs"), so publishing the release folder as it is publishes
    nothing that is not DP.
    """
    out = Path(out)
    return out.parent / OWNER_ONLY / out.name


@contextlib.contextmanager
def atomic_output_dir(out: Path) -> Iterator[OutputDirs]:
    """Yield temporary release and owner directories; on success they replace the final ones whole.

    On failure both temporaries are removed and any older output is left untouched. The temporaries are
    siblings of their targets (same file system, so each final rename is atomic for its directory entry). An
    older output is moved aside first and deleted only after the new one is in place, so stale files from an
    older run never survive beside new ones (the old owner directory is replaced too, even if this run has none).
    """
    out = check_output_path(Path(out))
    owner = owner_dir_for(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:8]
    tmp = out.parent / f".{out.name}.tmp-{tag}"
    tmp_owner = out.parent / f".{out.name}.owner-tmp-{tag}"
    tmp.mkdir()
    try:
        yield OutputDirs(release=tmp, owner=tmp_owner)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(tmp_owner, ignore_errors=True)
        raise
    olds: list[Path] = []
    for final, new in ((owner, tmp_owner), (out, tmp)):
        if final.exists():
            old = final.parent / f".{final.name}.old-{tag}"
            final.rename(old)
            olds.append(old)
        if new.exists():
            final.parent.mkdir(parents=True, exist_ok=True)
            new.rename(final)
    for old in olds:
        shutil.rmtree(old, ignore_errors=True)


def write_owner_table(out: Path, name: str, frame: pl.DataFrame) -> Path:
    """Write ``frame`` as the CSV ``name``, alone, into ``owner_only/<out name>/`` beside ``out``.

    For runs whose only owner material is one table (every row quarantined, or a command whose output is a single
    file): the folder is built under a temporary name and swapped in whole, so no stale file from an older run
    survives beside it and a failure leaves the old folder as it was. Returns the path of the table.
    """
    final = owner_dir_for(out)
    final.parent.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:8]
    tmp = final.parent / f".{final.name}.tmp-{tag}"
    tmp.mkdir()
    try:
        (tmp / "README.txt").write_text(OWNER_README)
        frame.write_csv(tmp / name)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = final.parent / f".{final.name}.old-{tag}"
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final / name


def to_strict_json(value: Any) -> Any:
    """Replace every non-finite float by ``None`` (recursively) so the result is strict JSON (RFC 8259).

    Callers that need to say *why* a value is missing add a ``<key>_reason`` entry next to it; this function
    only guarantees that no ``Infinity``/``NaN`` token is ever written.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): to_strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_strict_json(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return to_strict_json(value.item())
    if isinstance(value, Path):
        return str(value)
    return value


def dumps_strict(value: Any, *, indent: int | None = 2) -> str:
    """Strict JSON text: non-finite floats become null, dates and other objects their ``str``."""
    return json.dumps(to_strict_json(value), indent=indent, allow_nan=False, default=str)


def write_json(path: Path, value: Any) -> None:
    """Write strict JSON (see :func:`dumps_strict`) with a trailing newline."""
    Path(path).write_text(dumps_strict(value) + "\n")
