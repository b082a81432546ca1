"""The repository stands on its own (issue 32): nothing a user gets by cloning or installing refers to the
development folder beside the checkout (``../shared``) or to its design notes (``DESIGN.md``, now
docs/design.md), and the Austin day shipped in docs/data is the documented cut of the real one."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.system]
ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "docs" / "data" / "austin-avl-2016-03-22.csv"
# Only tests and benchmarks read the development data beside the checkout; .ci/run prepares that checkout.
MAY_CITE_SHARED = ("tests/", "benchmarks/", ".ci/")


def _tracked() -> list[str]:
    """The repository's files as git lists them (tracked and untracked, not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot list the repository's files")
    return [name for name in listed.stdout.splitlines() if (ROOT / name).is_file()]


def _citing(needle: str, allowed: tuple[str, ...]) -> list[str]:
    found = []
    for name in _tracked():
        if name.startswith(allowed) or name.endswith(".csv"):
            continue
        text = (ROOT / name).read_text(encoding="utf-8", errors="replace")
        found += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if needle in line]
    return found


def test_no_file_outside_tests_and_benchmarks_refers_to_shared() -> None:
    assert _citing("../shared", MAY_CITE_SHARED) == []
    assert _citing("/work/shared", MAY_CITE_SHARED) == []


def test_the_design_rules_are_cited_from_docs_design() -> None:
    assert (ROOT / "docs" / "design.md").is_file()
    assert _citing("DESIGN.md", ("tests/system/docs/test_self_contained.py",)) == []


def test_the_shipped_day_is_small_and_licensed() -> None:
    assert SAMPLE.stat().st_size < 1_000_000
    readme = (SAMPLE.parent / "README.md").read_text(encoding="utf-8")
    assert "MIT" in readme and "Copyright (c) 2015 Sean Cascketta" in readme


@pytest.mark.real_data
def test_the_shipped_day_is_every_fourth_position_of_each_bus(shared_data: Path) -> None:
    """docs/data/README.md's rule (awk 'NR == 1 || n[$1]++ % 4 == 0'), checked line for line on the real day."""
    lines = (
        (shared_data / "austin-avl" / "2016-03-22.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    )
    seen: dict[str, int] = {}
    expected = [lines[0]]
    for line in lines[1:]:
        vehicle = line.split(",", 1)[0]
        if seen.get(vehicle, 0) % 4 == 0:
            expected.append(line)
        seen[vehicle] = seen.get(vehicle, 0) + 1
    shipped = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    assert shipped == expected
    assert (len(lines) - 1, len(shipped) - 1, len(seen)) == (34_030, 8_589, 195)
