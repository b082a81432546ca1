"""The getting-started page and the README's first screen run as written (docs/run_blocks.py runs them).

Every fenced ``bash`` and ``python`` block of docs/getting-started.md runs in order in an empty folder: ``bash``
blocks as real processes (``.venv`` there is this interpreter's environment, so ``.venv/bin/urbandp`` is the
installed command), ``python`` blocks in this process, in one namespace as a reader's session would be. A block
announced by ``<!-- not run: ... -->`` (the install from the network) is skipped. A ``text`` block is the exact
output of the ``python`` block before it. The README's first screen: ``make demo`` and ``make test`` come first,
then the CLI from the venv and a Python release, which run the same way.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.system
ROOT = Path(__file__).resolve().parents[3]


def _runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_blocks", ROOT / "docs" / "run_blocks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_blocks"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


RUNNER = _runner()
blocks = RUNNER.blocks


def run_blocks(page: list, folder: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Run ``page`` in ``folder`` as the runner's command does, with the caller's ``URBANDP_*`` unset."""
    env = RUNNER.prepare(folder)
    for key in [k for k in os.environ if k.startswith("URBANDP_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(folder)
    return list(RUNNER.run(page, folder, env))


def test_the_getting_started_page_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = blocks((ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8"))
    # the install is the one block not run; every other block is bash, python or its printed text
    assert [b.lang for b in page if not b.run] == ["bash"] and "pip install urbandp" in page[0].code
    assert {b.lang for b in page} == {"bash", "python", "text"}
    assert sum(b.lang == "text" for b in page) == 2
    shell = run_blocks(page, tmp_path, monkeypatch)
    from urbandp import __version__

    assert __version__ in shell[0]
    # the folder the page describes, and the same figures from the command line as from Python
    assert {"hat_speed.csv", "hat_speed.parquet", "hat_speed.geojson", "privacy.json", "map.html"} <= set(
        shell[1].split()
    )
    assert (tmp_path / "out" / "owner_only" / "rel" / "quarantine.csv").is_file()
    cli = json.loads((tmp_path / "out" / "rel" / "privacy.json").read_text(encoding="utf-8"))
    python = json.loads((tmp_path / "out" / "rel-python" / "privacy.json").read_text(encoding="utf-8"))
    for key in ("cumulative_epsilon_per_day", "epsilon_per_window", "delta_per_day", "days"):
        assert cli[key] == python[key], key
    assert round(cli["epsilon_per_window"], 4) == 22.2078
    assert (tmp_path / "budget.sqlite").is_file()
    # every ``ud.<module>.<name>`` the page's prose names exists
    import urbandp as ud

    named = re.findall(
        r"`ud\.(\w+)\.(\w+)", (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    )
    assert len(named) >= 8
    assert [f"{m}.{n}" for m, n in named if not hasattr(getattr(ud, m), n)] == []


def test_the_readme_first_screen_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_screen = blocks(readme[: readme.index("\n## ")])
    commands = [line.split("#")[0].strip() for line in first_screen[0].code.splitlines()]
    assert first_screen[0].lang == "bash" and commands[:2] == ["make demo", "make test"]
    runnable = first_screen[1:]
    assert [b.lang for b in runnable] == ["bash", "python", "text"]
    assert runnable[0].code.startswith(".venv/bin/urbandp ")
    assert "import urbandp as ud" in runnable[1].code
    run_blocks(runnable, tmp_path, monkeypatch)
    assert json.loads((tmp_path / "out" / "first" / "privacy.json").read_text(encoding="utf-8"))[
        "differentially_private"
    ]


def test_the_runner_fails_on_a_wrong_output_or_a_failing_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = RUNNER.blocks('```python\nprint("epsilon 10")\n```\n\nprints\n\n```text\nepsilon 1\n```\n')
    with pytest.raises(RUNNER.BlockFailed, match="it printed\nepsilon 10"):
        run_blocks(wrong, tmp_path / "a", monkeypatch)
    failing = RUNNER.blocks("```bash\n.venv/bin/urbandp fleet release --epsilon-per-day -1\n```\n")
    with pytest.raises(RUNNER.BlockFailed, match="failed \\(2\\)"):
        run_blocks(failing, tmp_path / "b", monkeypatch)
    skipped = RUNNER.blocks("<!-- not run: network -->\n```bash\nfalse\n```\n")
    assert run_blocks(skipped, tmp_path / "c", monkeypatch) == []
