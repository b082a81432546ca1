"""The sensing wing's Python API (issue 31): ``ud.sensing.dp_map``, ``pm_map`` and ``query`` are the release path
the commands call: same tables from a pandas frame, a Polars LazyFrame and a path; the budget reserved before any
noise; the guards fire from Python; ``rel.write`` refuses an existing folder; the CLI and the API give identical
tables and privacy.json with the noise-free test source."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import urbandp as ud
from urbandp._config_tables import REQUIRED
from urbandp._privacy.guards import NOT_PRIVATE_NOISE
from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp.cli import app
from urbandp.sensing._options import DpMapOptions, PmMapOptions

pytestmark = pytest.mark.system
runner = CliRunner()
BBOX = (22.49, 88.32, 22.60, 88.44)
BOX = ",".join(str(v) for v in BBOX)
START, END = "2024-01-15T08:00", "2024-01-15T10:00"
PM = {"bbox": BBOX, "start": START, "end": END, "epsilon": 2.0, "smoother": "none"}
DP = {"bbox": BBOX, "start": START, "end": END, "epsilon": 0.3, "cell_metres": 1000.0, "utility_epsilons": ()}


def _exact() -> ExactNoiseForTesting:
    return ExactNoiseForTesting(acknowledge_not_private=True)


@pytest.fixture(scope="module")
def readings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "readings.csv"
    args = [
        "sensing",
        "synth",
        str(out),
        "--readings",
        "300",
        "--vehicles",
        "4",
        "--hours",
        "2",
        "--seed",
        "3",
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return out


def _comparable(document: dict[str, Any]) -> dict[str, Any]:
    """privacy.json up to paths and software versions."""
    return {k: v for k, v in document.items() if k not in ("not_dp_outputs", "software")}


def test_pm_map_same_table_from_pandas_lazy_frame_and_path(readings: Path) -> None:
    session = ud.Session(noise=_exact())
    frame = pl.read_csv(readings)
    tables = [
        ud.sensing.pm_map(data, session=session, **PM).tables
        for data in (readings, frame.to_pandas(), frame.lazy())
    ]
    for other in tables[1:]:
        for name in ("pm_cells", "pm_grid"):
            assert other[name].equals(tables[0][name])
    assert tables[0]["pm_cells"]["noisy_count"].sum() > 0  # exact noise: the true clipped counts


def test_dp_map_same_table_from_frame_and_path(readings: Path) -> None:
    session = ud.Session(noise=_exact())
    by_path = ud.sensing.dp_map(readings, session=session, **DP)
    by_frame = ud.sensing.dp_map(pl.read_csv(readings).lazy(), session=session, **DP)
    assert by_path.table.equals(by_frame.table)
    assert by_path.privacy.epsilon_per_vehicle_day > 0
    # drawn from the exact source: NOT DP, whatever the loss it states
    assert not by_path.privacy.differentially_private
    assert by_path.privacy.not_dp_reasons == [NOT_PRIVATE_NOISE]


def _store(tmp_path: Path, per_day: float) -> str:
    store = str(tmp_path / "budget.sqlite")
    args = ["budget", "init", "pm25", "--unit", "vehicle-day", "--epsilon-per-day", str(per_day)]
    res = runner.invoke(app, [*args, "--budget-store", store])
    assert res.exit_code == 0, res.output
    return store


class _CountingNoise(OpenDPNoise):
    """OpenDP's samplers, counting the draws (a refused release must draw none); private, so a budget dataset
    accepts a release drawn from it."""

    def __init__(self) -> None:
        super().__init__()
        self.draws = 0

    def laplace(self, values: np.ndarray, scale: Any) -> np.ndarray:
        self.draws += 1
        return super().laplace(values, scale)

    def laplace_on_lattice(self, values: np.ndarray, scale: float, exponent: int) -> np.ndarray:
        self.draws += 1
        return super().laplace_on_lattice(values, scale, exponent)


@pytest.mark.parametrize("wing", ["pm_map", "dp_map"])
def test_second_release_refused_before_any_noise(readings: Path, tmp_path: Path, wing: str) -> None:
    noise = _CountingNoise()
    options = {**PM, "epsilon": 1.0} if wing == "pm_map" else DP
    release = getattr(ud.sensing, wing)
    first = release(readings, **options)  # no store: measure what a vehicle pays in the day
    per_day = (
        first.privacy.budget_booked.epsilon_per_day
        if wing == "pm_map"
        else first.privacy.epsilon_per_vehicle_day
    )
    store = _store(tmp_path, per_day * 1.5)  # one release fits, not two
    with ud.Session(store=store, dataset="pm25", noise=noise) as s:
        release(readings, session=s, **options)
        drawn = noise.draws
        assert drawn > 0 and len(s.releases) == 1
        with pytest.raises(ud.BudgetExceededError, match="exceeded on 2024-01-15"):
            release(readings, session=s, **options)
    assert noise.draws == drawn  # refused before any noise


def test_guards_fire_from_python(readings: Path, tmp_path: Path) -> None:
    with pytest.raises(ud.InvalidParameterError, match="would protect nobody"):
        ud.sensing.pm_map(readings, **{**PM, "epsilon": 500.0})
    rel = ud.sensing.pm_map(
        readings, session=ud.Session(allow_meaningless_epsilon=True), **{**PM, "epsilon": 500.0}
    )
    assert not rel.privacy.differentially_private and rel.privacy.not_dp_reasons
    with pytest.raises(ud.InvalidParameterError, match=r"^delta 0\.001 is above 1e-05") as caught:
        ud.sensing.dp_map(readings, **{**DP, "delta": 1e-3})
    assert caught.value.parameters == ("delta",)
    store = _store(tmp_path, 100.0)
    with pytest.raises(ud.InputError, match="NOT differentially private"):  # window from the data: NOT DP
        ud.sensing.dp_map(readings, session=ud.Session(store, "pm25"), **{**DP, "start": None, "end": None})
    with pytest.raises(ud.InvalidParameterError, match=r"^epsilon must be a finite number > 0, got -1\.0$"):
        ud.sensing.dp_map(readings, **{**DP, "epsilon": -1.0})


def test_write_refuses_an_existing_folder(readings: Path, tmp_path: Path) -> None:
    rel = ud.sensing.pm_map(readings, session=ud.Session(noise=_exact()), **PM)
    out = tmp_path / "taken"
    out.mkdir()
    (out / "mine.txt").write_text("not urbandp's")
    with pytest.raises(ud.InputError):
        rel.write(out)
    assert (out / "mine.txt").read_text() == "not urbandp's"
    fresh = tmp_path / "fresh"
    rel.write(fresh)
    with pytest.raises(ud.InputError, match="overwrite"):
        rel.write(fresh)
    rel.write(fresh, overwrite=True)
    assert pl.read_csv(fresh / "pm_cells.csv").height == rel.table.height
    assert (tmp_path / "owner_only" / "fresh" / "input_report.json").exists()


@pytest.mark.parametrize(
    ("command", "flags", "release", "options"),
    [
        ("pm-map", ["--epsilon", "2", "--smoother", "none"], "pm_map", PM),
        ("dp-map", ["--epsilon", "0.3", "--cell-metres", "1000", "--utility-epsilons", ""], "dp_map", DP),
    ],
)
def test_cli_and_api_parity(
    readings: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    flags: list[str],
    release: str,
    options: dict[str, Any],
) -> None:
    monkeypatch.setattr("urbandp._privacy.session.OpenDPNoise", _exact)
    cli_out = tmp_path / "cli"
    args = ["sensing", command, str(readings), "--bbox", BOX, "--start", START, "--end", END, *flags]
    res = runner.invoke(app, [*args, "--out", str(cli_out)])
    assert res.exit_code == 0, res.output
    api_out = tmp_path / "api"
    rel = getattr(ud.sensing, release)(readings, session=ud.Session(noise=_exact()), out=api_out, **options)
    for name, table in rel.tables.items():
        assert pl.read_csv(cli_out / f"{name}.csv").equals(pl.read_csv(api_out / f"{name}.csv")), name
        assert (cli_out / f"{name}.csv").read_text() == table.write_csv(), name  # the same bytes
    cli_doc = json.loads((cli_out / "privacy.json").read_text())
    api_doc = json.loads((api_out / "privacy.json").read_text())
    assert _comparable(cli_doc) == _comparable(api_doc) == _comparable(rel.privacy.to_dict())
    assert sorted(p.name for p in (tmp_path / "owner_only" / "cli").iterdir()) == sorted(
        p.name for p in (tmp_path / "owner_only" / "api").iterdir()
    )


def test_query_through_the_api_and_the_cli(
    readings: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grid_dir = tmp_path / "interp"
    ud.sensing.interpolate(readings, out=grid_dir, cell_metres=1000.0, bbox=BBOX)
    grid = grid_dir / "grid.parquet"
    q = {"rect": BBOX, "type": "average", "alpha": 1, "epsilon": 1.0, "sigma2_min": 0.0, "sigma2_max": 800.0}
    rel = ud.sensing.query(grid, session=ud.Session(noise=_exact()), **q)
    assert not rel.privacy.differentially_private and rel.privacy.epsilon is not None
    by_frame = ud.sensing.query(pl.read_parquet(grid), session=ud.Session(noise=_exact()), **q)
    assert by_frame.answer["value"] == rel.answer["value"]
    with pytest.raises(ud.InputError, match="NOT differentially private"):  # the value is not DP
        ud.sensing.query(grid, session=ud.Session(_store(tmp_path, 10.0), "pm25"), **q)
    with pytest.raises(ud.InvalidParameterError):
        ud.sensing.query(grid, **{**q, "epsilon": 1000.0})
    monkeypatch.setattr("urbandp._privacy.session.OpenDPNoise", _exact)
    args = [
        "sensing",
        "query",
        str(grid),
        "--rect",
        BOX,
        "--alpha",
        "1",
        "--sigma2-min",
        "0",
        "--sigma2-max",
        "800",
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout.splitlines()[0])
    assert printed["value"] == rel.answer["value"] and printed["error"] == rel.answer["error"]


def test_api_keywords_are_the_options_declared_once() -> None:
    import inspect

    for function, options in ((ud.sensing.dp_map, DpMapOptions), (ud.sensing.pm_map, PmMapOptions)):
        params = inspect.signature(function).parameters
        declared = options.model_fields
        for name in set(params) - {"data", "session", "out", "overwrite", "config"}:
            assert name in declared, name
            default = declared[name].default
            if params[name].default is not REQUIRED:  # required: a keyword or a config key, no default
                assert params[name].default == default, name
        # dp-map's session dataset (its checks read it): not a keyword
        assert set(declared) - set(params) == ({"dataset"} if options is DpMapOptions else set())
