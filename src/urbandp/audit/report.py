"""Readable audit reports: one Markdown file plus PNG plots per attack (``--report DIR``)."""

from __future__ import annotations

import json
from pathlib import Path


def write_report(
    directory: Path, name: str, title: str, result: dict[str, object], intro: str, plots: dict[str, object]
) -> Path:
    """Write ``DIR/<name>.md`` with the result and call each ``plots[file](result, path)`` to draw PNGs."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", "", intro, ""]
    if "finding" in result:
        lines += [f"**Finding:** {result['finding']}", ""]
    if "warning" in result:
        lines += [f"**Warning:** {result['warning']}", ""]
    for fname, draw in plots.items():
        draw(directory / fname)  # type: ignore[operator]
        lines += [f"![{fname}]({fname})", ""]
    summary = {k: v for k, v in result.items() if k != "cells"}
    lines += ["## Result", "", "```json", json.dumps(summary, indent=2, default=str), "```", ""]
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
    path = directory / f"{name}.md"
    path.write_text("\n".join(lines))
    return path
