"""`sensing dp-map` says exactly what is DP (issue 9 items 1-4, 8, 16) and reserves before noise (issue 14)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from urbandp._privacy.budget_store import BudgetStore, DatasetCaps
from urbandp.cli import app
from urbandp.sensing import _bounded_laplace as bounded_laplace

pytestmark = pytest.mark.system
runner = CliRunner()
BOX = ["--bbox", "22.49,88.32,22.60,88.44", "--cell-metres", "1000"]
WINDOW = ["--start", "2024-01-15T08:00", "--end", "2024-01-15T11:00"]  # 3 windows, the last one empty


def _strict(text: str) -> Any:
    def refuse(token: str) -> None:
        raise AssertionError(f"non-strict JSON token {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "readings.csv"
    res = runner.invoke(
        app,
        ["sensing", "synth", str(out), "--readings", "300", "--vehicles", "4", "--hours", "2", "--seed", "3"],
    )
    assert res.exit_code == 0, res.output
    return out


def _dp_map(synthetic: Path, out: Path, *extra: str) -> Any:
    return runner.invoke(
        app,
        [
            "sensing",
            "dp-map",
            str(synthetic),
            "--out",
            str(out),
            *BOX,
            "--utility-epsilons",
            "1",
            "--epsilon",
            "0.3",
            *extra,
        ],
    )


def test_public_window_is_dp_and_releases_every_window_in_it(synthetic: Path, tmp_path: Path) -> None:
    res = _dp_map(synthetic, tmp_path / "pub", *WINDOW, "--epsilon", "0.01")
    assert res.exit_code == 0, res.output
    priv = _strict((tmp_path / "pub" / "privacy.json").read_text())
    assert priv["differentially_private"] is True and priv["not_dp_reasons"] == []
    assert priv["windows_released"] == 3  # 08:00, 09:00 and the empty 10:00 window: the window is public
    assert priv["windows_source"].startswith("public: start 2024-01-15T08:00")


def test_window_derived_from_data_is_labelled_not_dp(synthetic: Path, tmp_path: Path) -> None:
    res = _dp_map(synthetic, tmp_path / "derived", "--epsilon", "0.01")
    assert res.exit_code == 0, res.output
    priv = _strict((tmp_path / "derived" / "privacy.json").read_text())
    assert priv["differentially_private"] is False
    assert any("derived from the data" in r for r in priv["not_dp_reasons"])
    assert "NOT differentially private" in res.stderr


def test_release_folder_holds_only_dp_material(synthetic: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel"
    res = _dp_map(synthetic, out, *WINDOW)
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == [
        ".urbandp-output.json",
        "dp_grid.csv",
        "dp_grid.geojson",
        "dp_grid.parquet",
        "privacy.json",
    ]
    owner = tmp_path / "owner_only" / "rel"
    names = {p.name for p in owner.iterdir()}
    assert {
        "dp_sigma2.png",
        "leakage.csv",
        "leakage_summary.json",
        "quarantine.csv",
        "rmse_vs_epsilon.csv",
    } <= names
    priv = _strict((out / "privacy.json").read_text())
    assert "leakage_mean" not in priv and "rows" not in priv
    listed = {Path(k).name for k in priv["not_dp_outputs"]}
    assert {"dp_sigma2.png", "leakage.csv", "leakage_summary.json", "quarantine.csv"} <= listed
    # relative to the release folder, as every release states them (a local absolute path is never published)
    assert all((out / k).resolve().parent == owner.resolve() for k in priv["not_dp_outputs"])
    assert all(k.startswith("../owner_only/rel/") for k in priv["not_dp_outputs"])


def test_vehicle_day_loss_above_100_is_refused_or_labelled_not_dp(synthetic: Path, tmp_path: Path) -> None:
    """Issue 30 item 6: one SANE_EPSILON (_privacy/guards.py), applied to what a vehicle pays in a day. 169 cells x
    0.5 per window, 3 windows on one day: 48.67 per reading (a window's map) but 112.14 per vehicle-day."""
    res = _dp_map(synthetic, tmp_path / "big", *WINDOW, "--epsilon", "0.5")
    assert res.exit_code == 2 and "epsilon 112 per vehicle-day is above 100" in res.output
    assert not (tmp_path / "big").exists()
    res = _dp_map(synthetic, tmp_path / "big", *WINDOW, "--epsilon", "0.5", "--allow-meaningless-epsilon")
    assert res.exit_code == 0, res.output
    priv = _strict((tmp_path / "big" / "privacy.json").read_text())
    basic = priv["basic_composition"]["epsilon_vehicle_upper_bound"]
    assert 3 * 169 * 0.5 * (1 - 1e-11) < basic <= 3 * 169 * 0.5  # lattice slack ~1e-12
    # 507 cells of 0.5 composed optimally at delta 1e-6 (Kairouz, Oh, Viswanath): 112.1 instead of 253.5
    assert priv["epsilon_vehicle_upper_bound"] == pytest.approx(112.14, abs=0.01)
    assert priv["epsilon_per_vehicle_day"] == pytest.approx(112.14, abs=0.01)
    assert priv["epsilon_per_reading"] == pytest.approx(48.67, abs=0.01)
    assert priv["differentially_private"] is False and priv["dp_label"] == "NOT differentially private"
    assert priv["not_dp_reasons"] == [
        "epsilon 112 per vehicle-day is above 100 (allow_meaningless_epsilon): no meaningful protection"
    ]
    assert priv["budget_booked"] == {
        "unit": "vehicle-day",
        "epsilon_per_day": priv["epsilon_per_vehicle_day"],
    }
    assert priv["warnings"] == []  # no second limit (the old SANE_EPSILON = 10 of dp_map.py is gone)
    ok = _dp_map(
        synthetic, tmp_path / "ok", *WINDOW, "--epsilon", "0.4"
    )  # 36.1 per reading, 80.4 per vehicle-day
    assert ok.exit_code == 0, ok.output
    priv = _strict((tmp_path / "ok" / "privacy.json").read_text())
    assert priv["differentially_private"] is True and priv["not_dp_reasons"] == []
    assert priv["epsilon_per_vehicle_day"] == pytest.approx(80.42, abs=0.01) and "warning" not in ok.stderr


def test_paper_calibration_reports_no_epsilon(synthetic: Path, tmp_path: Path) -> None:
    res = _dp_map(synthetic, tmp_path / "paper", "--calibration", "paper")
    assert res.exit_code == 0, res.output
    priv = _strict((tmp_path / "paper" / "privacy.json").read_text())
    assert priv["differentially_private"] is False
    assert "epsilon_cell_actual_max" not in priv and "epsilon_per_reading" not in priv
    assert priv["epsilon"] is None and priv["epsilon_reason"].startswith("not DP")
    assert "NOT differentially private" in res.stdout


def _store(tmp_path: Path, cap: float) -> str:
    url = str(tmp_path / "budget.sqlite")
    s = BudgetStore(url)
    s.init_dataset(DatasetCaps("pm", "vehicle-day", cap))
    s.close()
    return url


def test_reservation_exists_before_any_noise(
    synthetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _store(tmp_path, 100.0)
    seen: list[list[str]] = []
    real = bounded_laplace.BoundedLaplace.release

    def spy(self: Any, values: np.ndarray, noise: Any, max_rounds: int | None = None) -> np.ndarray:
        s = BudgetStore(url)
        seen.append([r["status"] for r in s.history("pm")])
        s.close()
        return real(self, values, noise, max_rounds)

    monkeypatch.setattr(bounded_laplace.BoundedLaplace, "release", spy)
    res = _dp_map(
        synthetic, tmp_path / "m", *WINDOW, "--epsilon", "0.05", "--dataset", "pm", "--budget-store", url
    )
    assert res.exit_code == 0, res.output
    assert seen and all(statuses == ["reserved"] for statuses in seen)  # reserved while every draw is made
    s = BudgetStore(url)
    (h,) = s.history("pm")
    s.close()
    assert h["status"] == "committed" and h["content_hash"]
    # booked per vehicle-day: the day's 3 windows x 169 cells of 0.05 composed optimally at delta 1e-6 (issue
    # 20): 5.57, not the basic 25.35 (one reading: its window's 169 cells, 2.98)
    assert h["epsilon_sum"] == pytest.approx(5.569, abs=1e-3) and h["delta_per_day"] == 1e-6


def test_refused_reservation_draws_no_noise(
    synthetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _store(tmp_path, 1.0)  # the map costs 5.57 per vehicle-day (507 cells of 0.05, composed): refused
    calls: list[int] = []
    monkeypatch.setattr(bounded_laplace.BoundedLaplace, "release", lambda *a, **k: calls.append(1))
    res = _dp_map(
        synthetic, tmp_path / "m", *WINDOW, "--epsilon", "0.05", "--dataset", "pm", "--budget-store", url
    )
    assert res.exit_code == 4, res.output  # budget exceeded
    assert calls == []
    assert not (tmp_path / "m").exists() and not (tmp_path / "owner_only").exists()


def test_failing_run_leaves_old_output_and_keeps_the_charge(
    synthetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _store(tmp_path, 100.0)
    out = tmp_path / "m"
    ok = _dp_map(synthetic, out, *WINDOW, "--epsilon", "0.05", "--dataset", "pm", "--budget-store", url)
    assert ok.exit_code == 0, ok.output
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def boom(*a: Any, **k: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("urbandp.sensing._plots.rmse_cdf", boom)
    failed = runner.invoke(
        app,
        [
            "sensing",
            "dp-map",
            str(synthetic),
            "--out",
            str(out),
            *BOX,
            *WINDOW,
            "--epsilon",
            "0.05",
            "--dataset",
            "pm",
            "--budget-store",
            url,
            "--overwrite",
        ],
        catch_exceptions=False,
    )
    assert failed.exit_code == 2  # cli_guard: one line "urbandp: error: disk full", no traceback
    assert "urbandp: error: disk full" in failed.stderr, failed.stderr  # the failure this test is about
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name or ".owner-tmp-" in p.name]
    s = BudgetStore(url)
    statuses = [r["status"] for r in s.history("pm")]
    s.close()
    assert statuses == [
        "committed",
        "aborted after noise",
    ]  # failed after its noise: still charged (issue 20)


def test_rerun_leaves_no_stale_owner_files(synthetic: Path, tmp_path: Path) -> None:
    out = tmp_path / "m"
    assert _dp_map(synthetic, out, *WINDOW).exit_code == 0
    assert (tmp_path / "owner_only" / "m" / "rmse_vs_epsilon.csv").exists()
    res = _dp_map(synthetic, out, *WINDOW, "--utility-epsilons", "", "--overwrite")  # the last value wins
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "owner_only" / "m" / "rmse_vs_epsilon.csv").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "FILE"], "existing file"),
        (["--out", "FILE/sub"], "is a file"),
        (["--out", "RO/sub"], "not writable"),
        (["--epsilon", "1e-300"], "practically uniform"),
        (["--epsilon", "inf"], "finite number"),
        (["--epsilon", "nan"], "finite number"),
        (["--upper", "inf"], "--upper"),
        (["--sensitivity", "inf"], "--sensitivity"),
        (["--utility-epsilons", "a"], "--utility-epsilons"),
        (["--utility-epsilons", "1e-300"], "--utility-epsilons"),
        (["--start", "2024-02-01", "--end", "2024-02-02"], "no usable reading inside"),
        (["--start", "2024-01-15"], "both --start and --end"),
        (["--start", "2024-01-16", "--end", "2024-01-15"], "before --start"),
        (["--precision", "-1"], "--precision"),
        (["--budget", "5", "--epsilon", "0.3", *WINDOW], "privacy budget exceeded"),
        (["--calibration", "paper", "--dataset", "x"], "not DP"),
    ],
)
def test_bad_options_one_line_exit_2(synthetic: Path, tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "FILE").write_text("x")
    ro = tmp_path / "RO"
    ro.mkdir()
    ro.chmod(0o500)
    args = [a.replace("FILE", str(tmp_path / "FILE")).replace("RO", str(ro)) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "o")]
    if os.geteuid() == 0 and "RO/sub" in " ".join(args):  # root writes anywhere: a real process as nobody
        import shutil
        import subprocess
        import sys

        from urbandp_process import assert_refused, shared_tmp, unprivileged

        folder = shared_tmp()  # nobody may read and enter it, not write it
        try:
            data = shutil.copy(synthetic, folder / synthetic.name)
            (folder / "RO").mkdir(mode=0o555)
            cmd = unprivileged([sys.executable, "-m", "urbandp", "sensing", "dp-map", str(data), *BOX,
                                "--out", str(folder / "RO" / "sub")])  # fmt: skip
            if cmd is None:
                pytest.skip("root without setpriv or runuser: cannot run as an unprivileged user")
            res = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=folder, timeout=300)
            assert_refused(res, message, others="none")
            assert not (folder / "RO" / "sub").exists()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    res = runner.invoke(app, ["sensing", "dp-map", str(synthetic), *BOX, *args])
    ro.chmod(0o700)
    assert res.exit_code == (4 if "budget" in message else 2), res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("urbandp: error: ") and message in lines[0], res.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("calibration", ["holohan", "paper"])
def test_single_reading(tmp_path: Path, calibration: str) -> None:
    one = tmp_path / "one.csv"
    one.write_text("lat,lon,time,value\n22.5,88.35,2024-01-15 08:00,3\n")
    res = runner.invoke(
        app,
        [
            "sensing",
            "dp-map",
            str(one),
            "--out",
            str(tmp_path / "o"),
            *BOX,
            *WINDOW,
            "--calibration",
            calibration,
            "--epsilon",
            "0.01",
        ],
    )
    if calibration == "paper":  # it releases only fitted windows: none
        assert res.exit_code == 2 and res.stderr.startswith("urbandp: error: "), res.output
        assert not (tmp_path / "o").exists()
    else:  # the public window is released with the prior variance everywhere
        assert res.exit_code == 0, res.output
        assert _strict((tmp_path / "o" / "privacy.json").read_text())["windows_released"] == 3
