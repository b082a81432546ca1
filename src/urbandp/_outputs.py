"""Output directories and files written atomically and safely, and strict JSON (docs/outputs.md).

A directory is written into a temporary sibling and renamed into place at the end, so a failing run never leaves a
partial directory and a successful one no stale files. Data-owner material (quarantine rows, true-value plots,
leakage measures) goes to ``owner_only/<name>/`` beside the release directory ``<name>/``, never inside it.
What ``--out`` may replace is docs/outputs.md's table: never a file urbandp did not write (the marker
:data:`MARKER` lists what it wrote), an input of the run, or the working directory. All these checks run before any
work (and so before any privacy budget is reserved); the CLI fills in the run's inputs and ``--overwrite`` through
:func:`output_policy` (set by :func:`urbandp._cli_support.cli_guard`), so no command can forget them.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import json
import math
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urbandp.errors import InputError, disk_full_line, is_disk_full

if TYPE_CHECKING:
    import polars as pl

OWNER_ONLY = "owner_only"
MARKER = ".urbandp-output.json"
"""The file in every directory urbandp writes: who wrote it and the manifest of what it holds."""


@dataclass(frozen=True)
class OutputPolicy:
    """What the running command protects: its input paths, and whether ``--overwrite`` was given."""

    inputs: tuple[Path, ...] = ()
    overwrite: bool = False


_POLICY: contextvars.ContextVar[OutputPolicy] = contextvars.ContextVar("urbandp_output_policy")


@contextlib.contextmanager
def output_policy(inputs: Iterable[Path] = (), *, overwrite: bool = False) -> Iterator[OutputPolicy]:
    """Within the block, every output check protects ``inputs`` and replaces old outputs only if ``overwrite``."""
    policy = OutputPolicy(tuple(Path(p) for p in inputs), overwrite)
    token = _POLICY.set(policy)
    try:
        yield policy
    finally:
        _POLICY.reset(token)


def current_policy() -> OutputPolicy:
    """The policy of the running command (no inputs, no overwrite outside :func:`output_policy`)."""
    return _POLICY.get(OutputPolicy())


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _refusal(option: str, message: str, *more: str) -> InputError:
    """The one-line error of an output ``option``; its ``parameters``: ``option`` when it is a parameter's Python
    name (``out``; the CLI shows its flag), none when a caller passed a flag or a description; then ``more``."""
    return InputError(message, parameters=((option,) if option.isidentifier() else ()) + more)


def _check_not_cwd(out: Path, option: str) -> None:
    """Refuse ``""``, ``.``, ``..``, the working directory and its ancestors (``/`` included)."""
    if out.name in ("", ".."):  # "", "." and "/" all have an empty name
        raise _refusal(
            option, f"{option} {str(out)!r} names the working directory or above it; give a new folder name"
        )
    real, cwd = _real(out), _real(Path.cwd())
    if real == cwd or real in cwd.parents:
        raise _refusal(
            option, f"{option} {out} is the working directory or one of its parents; give a new folder name"
        )


def _check_not_overlapping_inputs(target: Path, option: str, inputs: Iterable[Path]) -> None:
    """Refuse an output that is, contains, or lies inside one of the run's inputs."""
    real = _real(target)
    for given in inputs:
        if str(given) in ("", "-"):
            continue
        source = _real(given)
        if source == real:
            raise _refusal(
                option, f"{option} {target} is also an input of this run; give another output path"
            )
        if real in source.parents:
            raise _refusal(
                option,
                f"{option} {target} contains the input {given}; writing there could destroy it: give a new folder",
            )
        if source in real.parents:
            raise _refusal(
                option,
                f"{option} {target} lies inside the input folder {given}; the next run would read the output as "
                "input: write it elsewhere",
            )


def _check_parents(out: Path, option: str) -> None:
    """The nearest existing ancestor of ``out`` must be a writable directory."""
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise _refusal(option, f"{option} {out}: {parent} is a file, not a directory")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise _refusal(option, f"{option} {out}: directory {parent} is not writable")
            return


def _entries(folder: Path) -> list[str]:
    """Every file and folder below ``folder``, as sorted relative POSIX paths (links are not followed)."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def _write_manifest(folder: Path, kind: str, entries: Iterable[str]) -> None:
    (folder / MARKER).write_text(
        json.dumps({"written_by": "urbandp", "kind": kind, "entries": sorted(entries)}, indent=1) + "\n"
    )


def _read_manifest(folder: Path) -> set[str] | None:
    """The entries ``folder``'s marker says urbandp wrote; None when it carries no readable urbandp marker."""
    try:
        manifest = json.loads((folder / MARKER).read_text())
        return set(manifest["entries"]) if manifest.get("written_by") == "urbandp" else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_marker(folder: Path, kind: str) -> None:
    """Write :data:`MARKER` into ``folder``: urbandp wrote it, and these are its entries (the manifest)."""
    _write_manifest(folder, kind, (e for e in _entries(folder) if e != MARKER))


def check_replaceable_dir(
    folder: Path, option: str, *, overwrite: bool, owner_of: Path | None = None
) -> None:
    """Refuse to replace ``folder`` unless it is absent, empty, or an unchanged urbandp output (+ ``overwrite``).

    ``owner_of`` names the release folder when ``folder`` is its ``owner_only/<name>/`` sibling: that one is
    replaced together with its release (so it needs ``--overwrite`` only when the release folder exists too).
    """
    if not folder.exists() and not folder.is_symlink():
        return
    what = (
        f"{option} {folder}"
        if owner_of is None
        else f"the owner-only folder {folder} (beside {option} {owner_of})"
    )
    if folder.is_symlink() or not folder.is_dir():
        raise _refusal(option, f"{what} is an existing file, not a folder urbandp wrote; give a new path")
    if not any(folder.iterdir()):
        return
    listed = _read_manifest(folder)
    if listed is None:
        raise _refusal(
            option,
            f"{what} is an existing folder that urbandp did not write (no {MARKER}); nothing was changed: give a "
            "new folder name (or empty this one yourself)",
        )
    foreign = [e for e in _entries(folder) if e not in listed | {MARKER}]  # entries urbandp did not write
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise _refusal(
            option,
            f"{what} holds files urbandp did not write ({shown}); nothing was changed: move them away or give a new "
            "folder name",
        )
    if not overwrite and (owner_of is None or owner_of.exists()):
        raise _refusal(
            option, f"{what} holds an earlier urbandp output; add overwrite to replace it", "overwrite"
        )


def check_output_target(out: Path, option: str = "out") -> Path:
    """The checks every output shares, file or folder, run by the CLI before any work: not the working directory
    (or above it), not one of the run's inputs nor around or inside one, and under a writable directory."""
    out = Path(out)
    _check_not_cwd(out, option)
    _check_parents(out, option)
    _check_not_overlapping_inputs(out, option, current_policy().inputs)
    return out


def check_output_path(out: Path, option: str = "out") -> Path:
    """Refuse, in one line (exit 2), an output folder that cannot be written or must not be replaced (the rules
    of docs/outputs.md), before any work; also one named ``owner_only`` or inside a folder so named."""
    out = check_output_target(Path(out), option)
    policy = current_policy()
    if OWNER_ONLY in (out.name, out.parent.name):
        # owner_only/<name>/ beside the folder holds the owner's material: a folder named owner_only (or inside
        # one) would be replaced by, or nest, its own owner folder (owner_only/owner_only/), and lose it
        raise _refusal(
            option,
            f"{option} {out}: '{OWNER_ONLY}' is the name of the owner-only folder written beside every output; "
            "give another folder name",
        )
    if out.exists() and not out.is_dir():
        raise _refusal(option, f"{option} {out} is an existing file; give a directory path")
    owner = owner_dir_for(out)
    if owner.parent.exists() and not owner.parent.is_dir():
        raise _refusal(
            option, f"{option} {out}: {owner.parent} is a file; the owner-only folder must go there"
        )
    _check_not_overlapping_inputs(owner, option, policy.inputs)
    check_replaceable_dir(out, option, overwrite=policy.overwrite)
    check_replaceable_dir(owner, option, overwrite=policy.overwrite, owner_of=out)
    return out


def check_report_dir(directory: Path, option: str = "report") -> Path:
    """Refuse a folder that collects named report files (``audit --report``) when it cannot be written.

    Such a folder is shared by several commands and never replaced whole, so other files may sit in it. Like any
    output it is not the working directory and holds no input of the run; each file written into it may replace
    only a file urbandp wrote there (:func:`check_report_file`).
    """
    directory = check_output_target(Path(directory), option)
    if directory.exists() and not directory.is_dir():
        raise _refusal(option, f"{option} {directory} is an existing file; give a directory path")
    return directory


def check_report_file(path: Path, option: str = "report") -> None:
    """A file about to be written into a report folder: it may replace only a file urbandp wrote there."""
    if path.is_dir():
        raise _refusal(option, f"{option}: {path} is a folder; urbandp would write a file of that name there")
    if (path.exists() or path.is_symlink()) and path.name not in (_read_manifest(path.parent) or set()):
        raise _refusal(
            option,
            f"{option} {path.parent} holds {path.name}, which urbandp did not write; nothing was changed: move it "
            "away or give another folder",
        )


def add_to_report_manifest(directory: Path, names: Iterable[str]) -> None:
    """Record in the folder's marker that urbandp wrote ``names`` there (so a later report may replace them)."""
    _write_manifest(directory, "reports", (_read_manifest(directory) or set()) | set(names))


def check_output_file(out: Path, option: str = "out") -> Path:
    """Refuse a file path that cannot or must not be written: a directory, under a file, in a read-only
    directory, one of the run's inputs, or an existing file without ``--overwrite``."""
    out = check_output_target(Path(out), option)
    if out.is_dir():
        raise _refusal(option, f"{option} {out} is a directory; give a file path")
    if (out.exists() or out.is_symlink()) and not current_policy().overwrite:
        raise _refusal(option, f"{option} {out} exists; add overwrite to replace it", "overwrite")
    return out


@contextlib.contextmanager
def atomic_output_file(out: Path, option: str = "out") -> Iterator[Path]:
    """Yield a temporary sibling path of file ``out``; on success it is renamed onto ``out``, on failure removed.

    The suffix is kept (``.x.csv.tmp-1234.csv``) so writers that pick a format by suffix still do.
    """
    out = check_output_file(Path(out), option)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}{out.suffix}"
    try:
        yield tmp
        if not tmp.exists():
            raise _refusal(option, f"{option} {out}: nothing was written")
        os.replace(tmp, out)
    except OSError as err:
        if is_disk_full(err):
            raise InputError(disk_full_line(err, out) + "; nothing was written") from None
        raise
    finally:
        _remove(tmp)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _make_parents(path: Path) -> list[Path]:
    """``mkdir -p`` the parent of ``path``; returns the folders it created, outermost first."""
    missing = [p for p in reversed(path.parents) if not p.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    return missing


def _remove_if_empty(folders: Iterable[Path]) -> None:
    """Remove ``folders`` (innermost first) that are still empty: a failed run leaves its parent as it was."""
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _swap_in(pairs: list[tuple[Path, Path]], tag: str) -> list[Path]:
    """Rename each ``new`` onto its ``final`` (moving an older ``final`` aside); all or nothing.

    Returns the folders it created for the finals' parents. On any failure every rename is undone, the
    temporaries are removed, and the exception propagates: the finals are exactly as they were.
    """
    moved: list[tuple[Path, Path]] = []
    placed: list[Path] = []
    created: list[Path] = []
    try:
        for final, new in pairs:
            if final.exists():
                old = final.parent / f".{final.name}.old-{tag}"
                final.rename(old)
                moved.append((final, old))
            if new.exists():
                created += _make_parents(final)
                new.rename(final)
                placed.append(final)
    except BaseException:
        for final in placed:
            _remove(final)
        for final, old in moved:
            old.rename(final)
        for _, new in pairs:
            _remove(new)
        _remove_if_empty(created)
        raise
    for _, old in moved:
        _remove(old)
    return created


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

    It sits *beside* the release (docs/design.md, "Outputs"), so publishing the release folder as it is publishes
    nothing that is not DP.
    """
    out = Path(out)
    return out.parent / OWNER_ONLY / out.name


def owner_file_seen_from_release(name: str, file: str) -> str:
    """How privacy.json's ``not_dp_outputs`` names an owner file of the release folder ``name``: relative to that
    folder, ``../owner_only/<name>/<file>`` (:func:`owner_dir_for`)."""
    return f"../{OWNER_ONLY}/{name}/{file}"


@contextlib.contextmanager
def atomic_output_dir(out: Path, option: str = "out") -> Iterator[OutputDirs]:
    """Yield temporary release and owner directories; on success they replace the final ones whole.

    :func:`check_output_path` runs first (nothing is replaced that urbandp did not write). On failure both
    temporaries and any parent folder this call created are removed, and any older output is left untouched. The
    temporaries are siblings of their targets (same file system, so each final rename is atomic for its
    directory entry). An older output is moved aside first and deleted only after the new one is in place, so
    stale files from an older run never survive beside new ones (the old owner directory is replaced too, even
    if this run has none). Each folder written gets the marker :data:`MARKER` with its manifest.
    """
    out = check_output_path(Path(out), option)
    owner = owner_dir_for(out)
    created = _make_parents(out)
    tag = uuid.uuid4().hex[:8]
    tmp = out.parent / f".{out.name}.tmp-{tag}"
    tmp_owner = out.parent / f".{out.name}.owner-tmp-{tag}"
    try:
        tmp.mkdir()
        yield OutputDirs(release=tmp, owner=tmp_owner)
        write_marker(tmp, "release")
        if tmp_owner.exists():
            write_marker(tmp_owner, OWNER_ONLY)
        _swap_in([(owner, tmp_owner), (out, tmp)], tag)
    except BaseException as err:
        _remove(tmp)
        _remove(tmp_owner)
        _remove_if_empty(created)
        if is_disk_full(err):
            raise InputError(
                disk_full_line(OSError(errno.ENOSPC, "no space"), out) + "; nothing was written"
            ) from None
        raise


def write_owner_table(out: Path, name: str, frame: pl.DataFrame) -> Path:
    """Write ``frame`` as the CSV ``name``, alone, into ``owner_only/<out name>/`` beside ``out``.

    For runs whose only owner material is one table (every row quarantined, or a command whose output is a single
    file): the folder is built under a temporary name and swapped in whole, so no stale file from an older run
    survives beside it and a failure leaves the old folder as it was. The same rules as for ``--out`` apply to the
    folder it replaces. Returns the path of the table.
    """
    out = Path(out)
    final = owner_dir_for(out)
    check_replaceable_dir(final, "out", overwrite=current_policy().overwrite, owner_of=out)
    created = _make_parents(final)
    tag = uuid.uuid4().hex[:8]
    tmp = final.parent / f".{final.name}.tmp-{tag}"
    try:
        tmp.mkdir()
        (tmp / "README.txt").write_text(OWNER_README)
        frame.write_csv(tmp / name)
        write_marker(tmp, OWNER_ONLY)
        _swap_in([(final, tmp)], tag)
    except BaseException:
        _remove(tmp)
        _remove_if_empty(created)
        raise
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
