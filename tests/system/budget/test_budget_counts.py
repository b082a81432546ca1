"""``counts release --dataset``: the charge is reserved before any noise, on the public domain's days or (partition
selection, no domain) on the days that hold an event; a refused reservation draws no noise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import urbandp.counts._partitions
import urbandp.counts._table_release
from urbandp._privacy.budget_store import STATUS_COMMITTED, STATUS_RESERVED, BudgetStore, DatasetCaps
from urbandp.cli import app

runner = CliRunner()
UNIT = ["--unit", "card-day", "--max-events", "4"]


@pytest.fixture(scope="module")
def taps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("taps") / "taps"
    r = runner.invoke(
        app, ["counts", "synth", "--out", str(out), "--days", "2", "--trips-per-day", "300", "--seed", "3"]
    )
    assert r.exit_code == 0, r.output
    return out


def _store(tmp_path: Path, per_day: float) -> str:
    url = str(tmp_path / "budget.sqlite")
    s = BudgetStore(url)
    s.init_dataset(DatasetCaps("opal", "card-day", per_day))
    s.close()
    return url


def _statuses(url: str) -> list[str]:
    s = BudgetStore(url)
    try:
        return [h["status"] for h in s.history("opal")]
    finally:
        s.close()


def _spy(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, url: str, fail: bool) -> list[list[str]]:
    """Replace ``module.name`` (the function that draws all of the release's noise) by a spy."""
    seen: list[list[str]] = []
    original = getattr(module, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(_statuses(url))
        if fail:
            raise RuntimeError("noise drawn")
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return seen


def _domain_args(taps: Path, url: str, eps: str) -> list[str]:
    args = ["counts", "release", str(taps / "events.csv"), "--domain", str(taps / "domain.json"), *UNIT]
    return [*args, "--epsilon", eps, "--dataset", "opal", "--budget-store", url]


def test_domain_release_reserves_before_noise(
    tmp_path: Path, taps: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _store(tmp_path, per_day=1.5)
    seen = _spy(monkeypatch, urbandp.counts._table_release, "_release_counts", url, fail=True)
    r = runner.invoke(app, [*_domain_args(taps, url, "1"), "--out", str(tmp_path / "rel")])
    assert r.exit_code == 70 and "internal error" in r.output and "RuntimeError: noise drawn" in r.output
    assert seen == [[STATUS_RESERVED]]  # the reservation was in the store when the noise started
    assert _statuses(url) == ["aborted after noise"]  # and kept when the run failed after it (issue 20)
    monkeypatch.undo()
    seen = _spy(monkeypatch, urbandp.counts._table_release, "_release_counts", url, fail=False)
    r = runner.invoke(app, [*_domain_args(taps, url, "2"), "--out", str(tmp_path / "rel")])
    assert r.exit_code == 4
    assert "asked epsilon=2 per card-day, left 0.5 of 1.5" in r.output
    assert seen == []  # refused: no noise drawn
    assert not (tmp_path / "rel").exists()


def test_partition_selection_is_charged_on_the_days_with_events(
    tmp_path: Path, taps: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _store(tmp_path, per_day=1.5)
    seen = _spy(monkeypatch, urbandp.counts._partitions, "select_partitions", url, fail=False)
    args = ["counts", "release", str(taps / "events.csv"), "--select-partitions", "--delta", "1e-6", *UNIT]
    args += ["--epsilon", "1", "--dataset", "opal", "--budget-store", url]
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "sel1")])
    assert r.exit_code == 0, r.output
    assert seen == [[STATUS_RESERVED]]
    priv = json.loads((tmp_path / "sel1" / "privacy.json").read_text())
    s = BudgetStore(url)
    spend = s.spend_per_day("opal")
    assert sorted(spend) == sorted(json.loads((taps / "domain.json").read_text())["days"])
    assert all(v[0] == pytest.approx(priv["epsilon"], rel=1e-12) for v in spend.values())
    (h,) = s.history("opal")
    assert h["status"] == STATUS_COMMITTED and h["mechanism"] == "counts-partition-selection"
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "sel2")])
    assert r.exit_code == 4
    assert f"asked epsilon={priv['epsilon']:.6g} per card-day" in r.output
    assert len(seen) == 1  # the refused run never reached the selection
    assert not (tmp_path / "sel2").exists()
