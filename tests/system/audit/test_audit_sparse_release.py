"""The differencing attack on a sparse (suppressed) count release finds nothing beyond the noise (issue 13)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from urbandp.cli import app

runner = CliRunner()


def test_differencing_on_sparse_release_sees_post_processed_marginals(tmp_path: Path) -> None:
    taps = tmp_path / "taps"
    assert runner.invoke(app, ["counts", "synth", "--out", str(taps)]).exit_code == 0
    rel = tmp_path / "rel"
    r = runner.invoke(
        app,
        [
            "counts", "release", str(taps / "events.csv"), "--domain", str(taps / "domain.json"),
            "--unit", "card-day", "--max-events", "4", "--epsilon", "1", "--suppress-below", "5",
            "--out", str(rel),
        ],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads((rel / "privacy.json").read_text())["marginals"] == "derived_from_published_joint"
    r = runner.invoke(
        app, ["audit", "differencing", "--joint", str(rel / "joint.csv"), "--marginal", str(rel / "time.csv")]
    )
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["groups_checked"] > 0
    assert result["gain_beyond_noise"] is False
    assert result["groups_with_recoverable_hidden_count"] == 0
