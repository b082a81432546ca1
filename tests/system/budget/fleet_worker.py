"""``urbandp`` run as its own process, with one more test pause: ``during-writing`` (after privacy.json is written
into the temporary release directory, before the rename). Used by the fleet kill -9 tests.

usage: python fleet_worker.py <urbandp arguments...>
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import urbandp._outputs as outputs
from urbandp._privacy.budget_store import checkpoint

_write_json = outputs.write_json


def _write_json_then_pause(path: Path, value: Any) -> None:
    _write_json(path, value)
    if Path(path).name == "privacy.json":
        checkpoint("during-writing")


outputs.write_json = _write_json_then_pause

if __name__ == "__main__":
    from urbandp.cli import app

    sys.exit(app(args=sys.argv[1:], prog_name="urbandp"))
