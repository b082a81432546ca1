"""docs/tutorial.ipynb, executed as a reader would run it (issue 31): a pandas frame of a real Austin day released
with a budget store, the warnings, the privacy report and the map inline, and the second release refused. The day is
the copy shipped in docs/data (issue 32), so this runs from a clean clone, as the docs build does."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat", reason="the test extra's nbformat is not installed")
nbclient = pytest.importorskip("nbclient", reason="the test extra's nbclient is not installed")
pytest.importorskip("ipykernel", reason="the test extra's ipykernel (the python3 kernel) is not installed")

pytestmark = [pytest.mark.system]
NOTEBOOK = Path(__file__).resolve().parents[3] / "docs" / "tutorial.ipynb"
DAY = NOTEBOOK.parent / "data" / "austin-avl-2016-03-22.csv"


def _text(output: dict[str, Any]) -> str:
    """What a reader sees of one output: the stream, or the plain-text form of a result."""
    if output["output_type"] == "stream":
        return str(output["text"])
    return str(output.get("data", {}).get("text/plain", ""))


@pytest.fixture(scope="module")
def executed() -> list[list[dict[str, Any]]]:
    """The notebook run top to bottom in docs/ (the python3 kernel of this interpreter); each code cell's outputs."""
    assert DAY.is_file()
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()
    return [cell.outputs for cell in notebook.cells if cell.cell_type == "code"]


def test_the_committed_notebook_holds_no_outputs() -> None:
    """The map page alone is ~240 kB: the committed file is cleared, CI executes it."""
    notebook = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code and all(cell["outputs"] == [] and cell["execution_count"] is None for cell in code)


def test_no_cell_raises(executed: list[list[dict[str, Any]]]) -> None:
    errors = [o for outputs in executed for o in outputs if o["output_type"] == "error"]
    assert errors == []


def test_the_day_is_released_dp_from_pandas(executed: list[list[dict[str, Any]]]) -> None:
    everything = "\n".join(_text(o) for outputs in executed for o in outputs)
    assert (
        "8,589 AVL records" in everything
    )  # the shipped day (every 4th position of each bus), read with pandas
    assert "FleetRelease(DP, hat_speed:" in everything
    assert "differentially private: True (vehicle-day, gaussian)" in everything
    # what the store was charged: --epsilon-per-day 10 is 9.398 by the exact Gaussian curve
    assert "epsilon per vehicle-day: 9.398," in everything
    assert '"differentially_private": true' in everything  # privacy.json itself
    assert "release warnings:" in everything and "owner-only warnings:" in everything


def test_the_table_and_the_map_render_inline(executed: list[list[dict[str, Any]]]) -> None:
    html = [
        o["data"]["text/html"] for outputs in executed for o in outputs if "text/html" in o.get("data", {})
    ]
    assert any("mean_speed" in page and "<table" in page for page in html)  # the published table
    maps = [page for page in html if page.startswith("<iframe srcdoc=")]  # the map's self-contained page
    assert len(maps) == 1 and "Mean of vehicle-day mean speeds per hexagon and hour" in maps[0]


def test_the_second_release_is_refused_by_the_store(executed: list[list[dict[str, Any]]]) -> None:
    last = "".join(_text(o) for o in executed[-1])
    assert last.strip() == (
        "refused: privacy budget of 'austin' exceeded on 2016-03-22: asked epsilon=9.39789 per vehicle-day, "
        "left 2.60211 of 12"
    )
    everything = "\n".join(_text(o) for outputs in executed for o in outputs)
    booked = re.search(r"committed releases in this session: \[(.*)\]", everything)
    assert booked is not None and re.fullmatch(
        r"'[0-9a-f]{32}'", booked.group(1)
    )  # one: the refused one is not
