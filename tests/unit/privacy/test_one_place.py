"""Issue 20, "done when": a newcomer can point at the one place where noise is drawn, budget is reserved and
committed, and privacy.json is written. These scan the source so that a second place cannot creep back in."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src" / "urbandp"


def _hits(pattern: str, under: Path = SRC) -> set[str]:
    rx = re.compile(pattern)
    found = set()
    for path in under.rglob("*.py"):
        for line in path.read_text().splitlines():
            code = line.split("#", 1)[0]
            if rx.search(code):
                found.add(str(path.relative_to(SRC)))
    return found


def test_privacy_json_is_written_by_the_one_serializer() -> None:
    assert (
        _hits(r"privacy\.json.*write_(json|text)|write_json\([^)]*privacy\.json|privacy_json\.write") == set()
    )
    writers = _hits(r"write_privacy_json\(")
    assert "_privacy/report.py" in writers
    assert len(writers) >= 5  # fleet, counts (two), survey, sensing: all through it


def test_budget_is_reserved_and_committed_only_by_the_session() -> None:
    assert _hits(r"_store\.reserve\(|store\.reserve\(") <= {"_privacy/session.py"}
    assert _hits(r"_store\.commit\(|store\.commit\(") <= {"_privacy/session.py"}


def test_fleet_noise_is_drawn_only_in_the_measure_step() -> None:
    draws = _hits(r"\.draw\(|noise\.(laplace|gaussian|discrete_laplace|discrete_gaussian)\(", SRC / "fleet")
    # measure.py draws the queries; selection.py the noisy counts it calls for; forecast.py the plan command's
    # own DP histogram (a release of its own, charged by its session)
    assert draws == {"fleet/_measure.py", "fleet/_measure_selection.py", "fleet/_plan_forecast.py"}
    assert _hits(r"def measure_selection\(", SRC / "fleet") == {"fleet/_measure_selection.py"}
    # forecast.py: the planner's pilot runs the release's own selection (charged by the plan's session)
    assert _hits(r"measure_selection\(", SRC / "fleet") == {
        "fleet/_measure_selection.py",
        "fleet/_measure.py",
        "fleet/_plan_forecast.py",
    }
