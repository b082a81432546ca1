"""The fleet's Python API (issue 31): ``ud.fleet.release`` on frames and paths, the budget before any noise, the
guards from Python, ``write``, and parity with ``urbandp release``."""

from __future__ import annotations

import datetime as dt
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from typer.testing import CliRunner

import urbandp as ud
from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp._synth.fleet import generate_fleet
from urbandp.cli import app

pytestmark = pytest.mark.system
START = dt.date(2024, 3, 4)
WINDOW: dict[str, Any] = {"start": START, "end": START + dt.timedelta(days=1), "max_hats_per_vehicle_day": 8}
BBOX = (21.09, 72.75, 21.25, 72.91)


def exact() -> ExactNoiseForTesting:
    return ExactNoiseForTesting(acknowledge_not_private=True)


class CountedNoise(OpenDPNoise):
    """OpenDP's samplers, counting the draws: a refused release must draw none."""

    def __init__(self) -> None:
        super().__init__()
        self.draws = 0

    def gaussian(self, values: np.ndarray, scale: Any) -> np.ndarray:
        self.draws += 1
        return super().gaussian(values, scale)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fleet") / "fleet.parquet"
    generate_fleet(120, 2, 5, start=START, records_per_vehicle_day=80).write_parquet(path)
    return path


def _same_release(a: pl.DataFrame, b: pl.DataFrame) -> None:
    """The same HATs, and the same values up to the last rounding step: Polars sums the vehicle-days' speeds of a HAT
    on several threads, so a sum can differ in its last bits between runs and round one step apart at precision 2
    (0.01 on the sum; its mean, interval and clamp flag follow from it)."""
    from polars.testing import assert_frame_equal

    keys = ["h3_cell", "slot"]
    assert a.select(keys).equals(b.select(keys))
    assert_frame_equal(a, b, check_exact=False, abs_tol=0.02, rel_tol=0)


def test_dir_lists_the_public_api() -> None:
    assert {"Session", "BudgetExceededError", "fleet", "counts", "survey", "sensing"} <= set(dir(ud))
    assert callable(ud.fleet.release)


def test_frames_and_paths_give_the_same_table(fleet: Path) -> None:
    """A path, a pandas frame, a Polars LazyFrame and an Arrow table: one reader, one table (exact noise)."""
    frame = pl.read_parquet(fleet)
    inputs = [fleet, str(fleet), [fleet], frame.to_pandas(), frame.lazy(), frame.to_arrow()]
    tables = []
    for data in inputs:
        rel = ud.fleet.release(
            data, **WINDOW, epsilon_per_day=4, domain_bbox=BBOX, session=ud.Session(noise=exact())
        )
        tables.append(rel.table)
    assert tables[0].height > 0
    for other in tables[1:]:
        _same_release(other, tables[0])


def test_a_release_the_store_cannot_afford_raises_before_any_noise(fleet: Path, tmp_path: Path) -> None:
    store = tmp_path / "budget.sqlite"
    declared = CliRunner().invoke(
        app,
        [
            "budget",
            "init",
            "surat",
            "--unit",
            "vehicle-day",
            "--epsilon-per-day",
            "5",
            "--budget-store",
            str(store),
        ],
    )
    assert declared.exit_code == 0, declared.output
    noise = CountedNoise()
    with ud.Session(store=store, dataset="surat", noise=noise) as s:
        first = ud.fleet.release(fleet, **WINDOW, epsilon_per_day=4, domain_bbox=BBOX, session=s)
        assert first.privacy.differentially_private and noise.draws > 0
        drawn = noise.draws
        with pytest.raises(ud.BudgetExceededError, match="exceeded"):
            ud.fleet.release(fleet, **WINDOW, epsilon_per_day=4, domain_bbox=BBOX, session=s)
    assert noise.draws == drawn  # the refusal drew nothing
    assert len(s.releases) == 1


def test_the_guards_fire_from_python(fleet: Path, tmp_path: Path) -> None:
    with pytest.raises(ud.InvalidParameterError, match="above 1e-05"):
        ud.fleet.release(fleet, **WINDOW, epsilon_per_day=4, delta=0.99)
    with pytest.raises(ud.InvalidParameterError, match="protect nobody"):
        ud.fleet.release(fleet, **WINDOW, epsilon_per_day=1e300)
    labelled = ud.fleet.release(
        fleet,
        **WINDOW,
        epsilon_per_day=1000,
        domain_bbox=BBOX,
        session=ud.Session(allow_meaningless_epsilon=True),
    )
    assert not labelled.privacy.differentially_private and labelled.privacy.not_dp_reasons
    with pytest.raises(ud.InvalidParameterError, match="NOT differentially private"):
        ud.fleet.release(
            fleet,
            **WINDOW,
            epsilon_per_day=1000,
            session=ud.Session(tmp_path / "b.sqlite", "surat", allow_meaningless_epsilon=True),
        )
    with pytest.raises(
        ud.InvalidParameterError, match=r"epsilon_per_dya \(did you mean epsilon_per_day"
    ) as err:
        ud.fleet.release(fleet, **WINDOW, epsilon_per_dya=4)
    assert err.value.parameters == ("epsilon_per_dya",)


def test_write_refuses_an_existing_folder_without_overwrite(fleet: Path, tmp_path: Path) -> None:
    rel = ud.fleet.release(fleet, **WINDOW, epsilon_per_day=4, domain_bbox=BBOX)
    paths = rel.write(tmp_path / "rel")
    assert json.loads(paths["privacy"].read_text()) == json.loads(rel.privacy.to_json())
    assert (tmp_path / "owner_only" / "rel" / "input_report.json").exists()
    with pytest.raises(ud.InputError, match="overwrite"):
        rel.write(tmp_path / "rel")
    rel.write(tmp_path / "rel", overwrite=True)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(ud.InputError):
        rel.write(mine, overwrite=True)
    assert (mine / "notes.txt").read_text() == "keep"
    assert "<html" in rel.map().html.lower()


def test_cli_and_api_write_the_same_folder(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parity: the same options through ``urbandp release`` and ``ud.fleet.release``, the exact test noise."""
    monkeypatch.setattr("urbandp._privacy.session.OpenDPNoise", exact)
    res = CliRunner().invoke(
        app,
        ["release", str(fleet), "--out", str(tmp_path / "cli"), "--start", "2024-03-04", "--end", "2024-03-05",
         "--epsilon-per-day", "4", "--max-hats-per-vehicle-day", "8", "--domain-bbox", ",".join(map(str, BBOX)), "--queries", "speed,speeding",
         "--no-map"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rel = ud.fleet.release(
        fleet, **WINDOW, epsilon_per_day=4, domain_bbox=BBOX, queries=("speed", "speeding"),
        session=ud.Session(noise=exact()), out=tmp_path / "api", with_map=False,
    )  # fmt: skip
    for name in ("hat_speed.csv", "hat_speeding.csv"):
        _same_release(pl.read_csv(tmp_path / "cli" / name), pl.read_csv(tmp_path / "api" / name))
    cli_doc, api_doc = (json.loads((tmp_path / d / "privacy.json").read_text()) for d in ("cli", "api"))
    for doc in (cli_doc, api_doc):
        doc.pop("command_line")
        doc["not_dp_outputs"] = sorted(k.split("/")[-1] for k in doc["not_dp_outputs"])
    assert cli_doc == api_doc
    assert rel.tables["hat_speeding"].height == rel.table.height


@pytest.mark.real_data
def test_a_real_austin_day_from_pandas(shared_data: Path) -> None:
    """The notebook's path: a pandas frame of real CapMetro AVL records (m/s), a public day and extent."""
    df = pd.read_csv(shared_data / "austin-avl" / "2016-03-22.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ud.ReleaseWarning)  # a useful release: no "holds no HAT" warning
        rel = ud.fleet.release(
            df, dates="2016-03-22", hours="6-22", speed_unit="m/s", epsilon_per_day=10,
            domain_bbox=(30.15, -97.95, 30.55, -97.6), columns={"vehicle": "vehicle_id"},
        )  # fmt: skip
    assert rel.privacy.differentially_private and rel.privacy.privacy_unit == "vehicle-day"
    assert rel.privacy.days == 1 and rel.privacy.cumulative_epsilon_per_day == pytest.approx(9.3979, rel=1e-4)
    assert {"h3_cell", "mean_speed", "ci95_low", "ci95_high"} <= set(rel.table.columns)
    assert rel.table.height > 0 and rel.privacy.hats_released == rel.table.height
    assert rel.owner["report"]["records_in"] == len(df)  # exact counts: the owner's, never in privacy.json
    assert "records_in" not in rel.privacy.to_json()
