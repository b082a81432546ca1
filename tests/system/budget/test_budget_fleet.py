"""Fleet releases and the budget store: the charge is reserved BEFORE any noise is drawn (issue 14).

The ordering is proven on the real CLI: the OpenDP samplers are patched to look at the store at the moment of
their first call (a reservation must already exist) and to count calls (a refused reservation draws none). The
kill -9 tests run the real ``urbandp release`` in its own process and kill it before noise, after noise, while
writing and after the rename.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from urbandp._privacy.budget_store import (
    ENV_TEST_PAUSE,
    STATUS_COMMITTED,
    STATUS_CRASHED,
    STATUS_RESERVED,
    BudgetStore,
    DatasetCaps,
)
from urbandp._privacy.noise import OpenDPNoise, rho_for_epsilon, zcdp_epsilon
from urbandp._privacy.session import days_between
from urbandp.cli import app
from urbandp.errors import BudgetExceededError
from urbandp.fleet import _measure_selection as selection

runner = CliRunner()
WORKER = Path(__file__).with_name("fleet_worker.py")
SAMPLERS = ("laplace", "discrete_laplace", "gaussian", "discrete_gaussian")
WINDOW = ["--start", "2024-03-04", "--end", "2024-03-05"]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fleet") / "fleet.parquet"
    r = runner.invoke(
        app,
        [
            "synth",
            "fleet",
            "--vehicles",
            "20",
            "--days",
            "2",
            "--start",
            "2024-03-04",
            "--records-per-vehicle-day",
            "150",
            "--out",
            str(path),
        ],
    )
    assert r.exit_code == 0, r.output
    return path


def _store(tmp_path: Path, per_day: float | None, rho: float | None = None) -> str:
    url = str(tmp_path / "budget.sqlite")
    s = BudgetStore(url)
    s.init_dataset(DatasetCaps("surat", "vehicle-day", per_day, None, rho))
    s.close()
    return url


def _statuses(url: str) -> list[str]:
    s = BudgetStore(url)
    try:
        return [h["status"] for h in s.history("surat")]
    finally:
        s.close()


def _spy_samplers(monkeypatch: pytest.MonkeyPatch, url: str, fail: bool) -> list[list[str]]:
    """Patch every OpenDP sampler: record the store's statuses at each call (and raise when ``fail``)."""
    seen: list[list[str]] = []
    for name in SAMPLERS:
        original = getattr(OpenDPNoise, name)

        def spy(self: OpenDPNoise, values: np.ndarray, scale: Any, _orig: Any = original) -> np.ndarray:
            seen.append(_statuses(url))
            if fail:
                raise RuntimeError("noise drawn")
            return _orig(self, values, scale)  # type: ignore[no-any-return]

        monkeypatch.setattr(OpenDPNoise, name, spy)
    threshold = (
        selection._threshold_measurement
    )  # the unknown-domain selection calls OpenDP's measurement directly

    class SpyMeasurement:  # OpenDP's measurement: calling it draws the noise; its map (used to calibrate) does not
        def __init__(self, meas: Any) -> None:
            self.meas = meas

        def __getattr__(self, name: str) -> Any:
            return getattr(self.meas, name)

        def __call__(self, counts: Any) -> Any:
            seen.append(_statuses(url))
            if fail:
                raise RuntimeError("noise drawn")
            return self.meas(counts)

    def spy_threshold(*args: Any, **kwargs: Any) -> Any:
        return SpyMeasurement(threshold(*args, **kwargs))

    monkeypatch.setattr(selection, "_threshold_measurement", spy_threshold)
    return seen


def _release(fleet: Path, out: Path, url: str, *extra: str) -> Any:
    args = ["release", str(fleet), *WINDOW, "--no-map", "--dataset", "surat", "--budget-store", url]
    return runner.invoke(app, [*args, "--out", str(out), *extra])


def test_reservation_exists_when_the_first_noise_is_drawn(
    tmp_path: Path, fleet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _store(tmp_path, per_day=10.0)
    seen = _spy_samplers(monkeypatch, url, fail=True)
    r = _release(fleet, tmp_path / "rel", url, "--epsilon-per-day", "2")
    assert r.exit_code == 70 and "internal error" in r.output and "RuntimeError: noise drawn" in r.output
    assert seen == [[STATUS_RESERVED]]  # the DP selection's first draw found the reservation in the store
    assert _statuses(url) == ["aborted after noise"]  # failed after its first draw: still charged (issue 20)
    assert not (tmp_path / "rel").exists()


def test_refused_reservation_draws_no_noise(
    tmp_path: Path, fleet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _store(tmp_path, per_day=1.0)
    seen = _spy_samplers(monkeypatch, url, fail=False)
    r = _release(fleet, tmp_path / "rel", url, "--epsilon-per-day", "2")
    assert r.exit_code == 4, r.output
    assert "exceeded on 2024-03-04: asked epsilon=2 per vehicle-day, left 1 of 1" in r.output
    assert seen == []  # not a single sampler call
    assert not (tmp_path / "rel").exists()
    # within the cap the same release draws noise after reserving, and commits the planned charge
    r = _release(fleet, tmp_path / "rel", url, "--epsilon-per-day", "0.5")
    assert r.exit_code == 0, r.output
    assert seen and all(s == [STATUS_RESERVED] for s in seen)
    s = BudgetStore(url)
    assert s.spend_per_day("surat") == {"2024-03-04": (0.5, pytest.approx(rho_for_epsilon(0.5, 5e-7))),
                                        "2024-03-05": (0.5, pytest.approx(rho_for_epsilon(0.5, 5e-7)))}  # fmt: skip
    (h,) = s.history("surat")
    assert h["status"] == STATUS_COMMITTED and h["mechanism"] == "fleet-hat-gaussian"
    priv = json.loads((tmp_path / "rel" / "privacy.json").read_text())
    assert (
        priv["conversion_delta"] == 5e-7
    )  # the rho charged is the one whose conversion at this delta is 0.5
    assert priv["cumulative_epsilon_per_day"] <= 0.5 + 1e-9  # privacy.json never passes the reserved charge


def test_gaussian_release_charges_rho_against_a_rho_cap(tmp_path: Path, fleet: Path) -> None:
    rho_1 = rho_for_epsilon(1.0, 5e-7)
    url = _store(tmp_path, per_day=None, rho=1.5 * rho_1)
    assert _release(fleet, tmp_path / "a", url, "--epsilon-per-day", "1").exit_code == 0
    # over the 2-day window a vehicle present on both days is a group of 2: 2**2 x rho (rho_total's measure)
    assert BudgetStore(url).group_rho_spent("surat") == pytest.approx(4 * rho_1, rel=1e-12)
    r = _release(fleet, tmp_path / "b", url, "--epsilon-per-day", "1")
    assert r.exit_code == 4
    assert f"zCDP budget of 'surat' exceeded on 2024-03-04: asked rho={rho_1:.6g}" in r.output
    # Laplace noise charges no rho: it passes a rho-only cap (the per-day epsilon cap is the one that binds it)
    r = _release(fleet, tmp_path / "c", url, "--epsilon-per-day", "1", "--mechanism", "laplace")
    assert r.exit_code == 0, r.output


def test_noise_scale_release_charges_its_budget_per_day(tmp_path: Path, fleet: Path) -> None:
    url = _store(tmp_path, per_day=10.0)
    r = _release(fleet, tmp_path / "rel", url, "--noise-scale", "50")
    assert r.exit_code == 2
    assert "--dataset with --noise-scale needs --budget-per-day" in r.output
    r = _release(fleet, tmp_path / "rel", url, "--noise-scale", "50", "--budget-per-day", "3")
    assert r.exit_code == 0, r.output
    assert {d: v[0] for d, v in BudgetStore(url).spend_per_day("surat").items()} == {
        "2024-03-04": 3.0,
        "2024-03-05": 3.0,
    }


def test_plan_charges_only_its_dp_histogram(tmp_path: Path, fleet: Path) -> None:
    url = _store(tmp_path, per_day=10.0)
    args = [
        "plan",
        str(fleet),
        *WINDOW,
        "--epsilon-per-day",
        "2",
        "--dataset",
        "surat",
        "--budget-store",
        url,
    ]
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "plan1")])
    assert r.exit_code == 0, r.output
    assert _statuses(url) == []  # public parameters only: nothing charged
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "plan2"), "--histogram-epsilon", "0.25"])
    assert r.exit_code == 0, r.output
    s = BudgetStore(url)
    assert {d: v[0] for d, v in s.spend_per_day("surat").items()} == {"2024-03-04": 0.25, "2024-03-05": 0.25}
    plan = json.loads((tmp_path / "plan2" / "plan.json").read_text())
    assert plan["spends"]["epsilon"] == pytest.approx(0.25)  # what the plan says it spent is what is charged
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "plan3"), "--histogram-epsilon", "9.9"])
    assert r.exit_code == 4 and "asked epsilon=9.9 per vehicle-day, left 9.75 of 10" in r.output


def test_weekly_fleet_releases_stop_at_the_total_cap(tmp_path: Path) -> None:
    """The README workflow: four weekly Gaussian releases fit under the zCDP total, the fifth is refused."""
    store = str(tmp_path / "budget.sqlite")
    fleet = tmp_path / "fleet.parquet"
    r = runner.invoke(
        app,
        [
            "synth",
            "fleet",
            "--vehicles",
            "10",
            "--days",
            "35",
            "--start",
            "2024-03-04",
            "--records-per-vehicle-day",
            "40",
            "--out",
            str(fleet),
        ],
    )
    assert r.exit_code == 0, r.output
    week_rho = 7**2 * rho_for_epsilon(2.0, 5e-7)  # a bus in service all week: a group of 7 vehicle-days
    cap = 4.1 * week_rho
    init = [
        "budget",
        "init",
        "surat",
        "--unit",
        "vehicle-day",
        "--epsilon-per-day",
        "2",
        "--rho-total",
        str(cap),
        # without a public extent each week's selection costs a delta over the window (~7e-6 here, booked since
        # issue 30): the default cap of 1e-5 would stop the second week; this test is about the rho cap
        "--delta-total",
        "1e-4",
    ]
    assert runner.invoke(app, [*init, "--budget-store", store]).exit_code == 0
    weeks = [days_between(days[0], days[-1]) for days in _weeks("2024-03-04", 5)]
    codes = []
    for i, week in enumerate(weeks):
        r = runner.invoke(
            app,
            [
                "release",
                str(fleet),
                "--start",
                week[0].isoformat(),
                "--end",
                week[-1].isoformat(),
                "--epsilon-per-day",
                "2",
                "--no-map",
                "--dataset",
                "surat",
                "--budget-store",
                store,
                "--out",
                str(tmp_path / f"w{i + 1}"),
            ],
        )
        codes.append(r.exit_code)
    assert codes == [0, 0, 0, 0, 4]
    assert (
        f"total zCDP budget of 'surat' exceeded: asked group rho={week_rho:.6g} over 7 days, "
        f"left {cap - 4 * week_rho:.6g} of {cap:g}" in r.output
    )
    assert not (tmp_path / "w5").exists()
    r = runner.invoke(app, ["budget", "history", "surat", "--budget-store", store])
    assert r.output.count("committed") == 4
    r = runner.invoke(
        app, ["budget", "show", "surat", "--budget-store", store, "--out", str(tmp_path / "show")]
    )
    assert r.exit_code == 0, r.output
    # the store books each week's window epsilon as its privacy.json states it (49 rho converted once), not 7 x 2
    stated = [json.loads((tmp_path / f"w{i}" / "privacy.json").read_text()) for i in (1, 2, 3, 4)]
    booked = [h["window_epsilon"] for h in BudgetStore(store).history("surat")]
    assert booked == [p["epsilon_per_window"] for p in stated]
    assert booked[0] == pytest.approx(zcdp_epsilon(week_rho, 5e-7), rel=1e-6) and booked[0] > 7 * 2
    total = math.fsum(booked)
    assert (
        f"epsilon over all releases {total:.6g}, over 28 days, for a vehicle present on every day" in r.output
    )
    assert (
        f"group rho over all days {4 * week_rho:.6g} (left {cap - 4 * week_rho:.6g} of {cap:g})" in r.output
    )
    assert (tmp_path / "show" / "spend.png").stat().st_size > 1000
    rows = (tmp_path / "show" / "spend.csv").read_text().splitlines()[1:]
    assert len(rows) == 28 and all(row.split(",")[1:3] == ["2", "0"] for row in rows)


def _weeks(first: str, n: int) -> list[list[Any]]:
    import datetime as dt

    d0 = dt.date.fromisoformat(first)
    return [[d0 + dt.timedelta(days=7 * w), d0 + dt.timedelta(days=7 * w + 6)] for w in range(n)]


@pytest.mark.parametrize("stage", ["before-noise", "after-noise", "during-writing", "before-commit"])
def test_kill_9_fleet_release_at_each_stage(tmp_path: Path, fleet: Path, stage: str) -> None:
    url = _store(tmp_path, per_day=1.0)
    flag, out = tmp_path / "paused", tmp_path / "rel"
    args = [str(WORKER), "release", str(fleet), *WINDOW, "--epsilon-per-day", "0.7", "--no-map"]
    args += ["--dataset", "surat", "--budget-store", url, "--out", str(out)]
    p = subprocess.Popen(
        [sys.executable, *args],
        env={**os.environ, ENV_TEST_PAUSE: f"{stage}:{flag}"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not flag.exists():
        assert p.poll() is None, p.stderr.read().decode() if p.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    s = BudgetStore(url)
    (h,) = s.history("surat")
    assert h["status"] == STATUS_CRASHED
    assert {d: v[0] for d, v in s.spend_per_day("surat").items()} == {"2024-03-04": 0.7, "2024-03-05": 0.7}
    if stage == "before-commit":  # killed after the rename: the directory is complete, and stays charged
        assert sorted(f.name for f in out.iterdir()) == [
            ".urbandp-output.json",
            "hat_speed.csv",
            "hat_speed.geojson",
            "hat_speed.parquet",
            "privacy.json",
        ]  # hat_speeding.csv only with --queries speed,speeding
    else:
        assert not out.exists()
    with pytest.raises(BudgetExceededError, match=r"asked epsilon=0\.7 per vehicle-day, left 0\.3 of 1"):
        s.reserve(
            "surat",
            "vehicle-day",
            dict.fromkeys(days_between(*_weeks("2024-03-04", 1)[0]), 0.7),
            "x",
            {},
            "",
            window_delta=0.0,
            window_epsilon=4.9,
            window_rho=0.0,
        )
