"""Readable audit reports: one Markdown file plus PNG plots per attack (``--report DIR``), written atomically.

A report directory may hold the reports of several attacks (``noise-scale.md`` beside ``differencing.md``), so
it is not replaced whole: each attack's files are written into a temporary sibling directory and then moved
into place one by one with ``os.replace`` (atomic per file). A failing run leaves no partial file, and the
files an attack writes always replace its own older ones.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from urbandp._outputs import add_to_report_manifest, check_report_dir, check_report_file, dumps_strict


@contextlib.contextmanager
def staged_files(directory: Path) -> Iterator[Path]:
    """Yield a temporary directory; on success move every file in it into ``directory`` (atomic per file)."""
    directory = check_report_dir(Path(directory))
    directory.parent.mkdir(parents=True, exist_ok=True)
    stage = directory.parent / f".{directory.name}.stage-{uuid.uuid4().hex[:8]}"
    stage.mkdir()
    try:
        yield stage
        names = sorted(f.name for f in stage.iterdir())
        for name in names:  # all checked before any is moved: a refusal changes nothing
            check_report_file(directory / name)
        directory.mkdir(exist_ok=True)
        add_to_report_manifest(directory, names)
        for name in names:
            os.replace(stage / name, directory / name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def write_report(
    directory: Path, name: str, title: str, result: dict[str, object], intro: str, plots: dict[str, object]
) -> None:
    """Write ``DIR/<name>.md`` with the result and call each ``plots[file](path)`` to draw PNGs."""
    lines = [f"# {title}", "", intro, ""]
    if "finding" in result:
        lines += [f"**Finding:** {result['finding']}", ""]
    if "warning" in result:
        lines += [f"**Warning:** {result['warning']}", ""]
    for fname, draw in plots.items():
        draw(directory / fname)  # type: ignore[operator]
        lines += [f"![{fname}]({fname})", ""]
    summary = {k: v for k, v in result.items() if k != "cells"}
    lines += ["## Result", "", "```json", dumps_strict(summary), "```", ""]
    cells = result.get("cells")
    if isinstance(cells, list) and cells:
        keys = list(cells[0].keys())
        lines += ["## Cells", "", "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        for c in cells[:200]:
            lines.append(
                "| "
                + " | ".join(f"{c[k]:.3f}" if isinstance(c[k], float) else str(c[k]) for k in keys)
                + " |"
            )
        lines.append("")
    (directory / f"{name}.md").write_text("\n".join(lines))
