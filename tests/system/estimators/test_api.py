"""``urbandp.estimators.release``: one user-level mean through one charge of the Session (issue 31).

A seeded test source (numpy's Laplace, NOT private: tests only) makes the release reproducible, so it is compared
with the building block given the same noise; the budget and the guards are checked from Python.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import urbandp as ud
from urbandp._privacy.budget_store import STATUS_COMMITTED, BudgetStore, DatasetCaps
from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp.estimators import ArrayAveraging, Baseline, ClippedMean, Levy, Quantile

pytestmark = pytest.mark.system
U = 65.0
COLS = {"unit_column": "vid", "value_column": "speed", "upper": U}
AUSTIN = Path(__file__).resolve().parents[3] / "../shared/data/austin-avl/2015-03-18.csv"


class SeededLaplace:
    """numpy's Laplace with a fixed seed, counting its draws (test only: NOT private, so selections are exact)."""

    is_private = False

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.draws = 0

    def laplace(self, values: np.ndarray, scale: Any) -> np.ndarray:
        self.draws += 1
        v = np.asarray(values, dtype=float)
        return v + self.rng.laplace(0.0, scale, size=v.shape)


class CountedOpenDP(OpenDPNoise):
    """OpenDP's samplers, counting the draws: private, so a budget dataset accepts a release drawn from it (one
    drawn from SeededLaplace is NOT DP and refused with a dataset)."""

    def __init__(self) -> None:
        super().__init__()
        self.draws = 0

    def laplace(self, values: np.ndarray, scale: Any) -> np.ndarray:
        self.draws += 1
        return super().laplace(values, scale)


def _units(n: int = 200, seed: int = 0) -> tuple[pl.DataFrame, list[np.ndarray]]:
    """``n`` units with 5..29 speeds each, uniform on [10, 50] (true mean near 30); zero-padded ids keep order."""
    rng = np.random.default_rng(seed)
    values = [rng.uniform(10.0, 50.0, int(rng.integers(5, 30))) for _ in range(n)]
    frame = pl.DataFrame(
        {
            "vid": [f"u{i:04d}" for i, v in enumerate(values) for _ in v],
            "speed": np.concatenate(values),
        }
    )
    return frame, values


@pytest.fixture(scope="module")
def data() -> tuple[pl.DataFrame, list[np.ndarray]]:
    return _units()


def _store(tmp_path: Path, per_day: float) -> str:
    url = str(tmp_path / "budget.sqlite")
    store = BudgetStore(url)
    store.init_dataset(DatasetCaps("austin", "vehicle-day", per_day))
    store.close()
    return url


def _history(url: str) -> list[str]:
    store = BudgetStore(url)
    try:
        return [h["status"] for h in store.history("austin")]
    finally:
        store.close()


def _quiet(*args: Any, **kw: Any) -> ud.estimators.EstimatorRelease:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ud.estimators.release(*args, **kw)


def test_exact_privacy_numbers(data: tuple[pl.DataFrame, list[np.ndarray]]) -> None:
    frame, values = data
    rel = _quiet(frame, epsilon=1.5, m_ub=20, **COLS)
    p = rel.privacy.to_dict()
    # CLIPPED-MEAN, public m_UB = 20: centred sum (U/2) m_UB = 650 at 2/3 epsilon = 1, count m_UB = 20 at 0.5
    assert (p["epsilon"], p["delta"], p["epsilon_spent"], p["m_ub"]) == (1.5, 0.0, 1.5, 20)
    assert (p["noise_scale"], p["sensitivity"]) == (650.0, 650.0)
    assert [(s["epsilon"], s["d_in"], s["scale"]) for s in p["steps"]] == [
        (1.0, 650.0, 650.0),
        (0.5, 20.0, 40.0),
    ]
    assert p["differentially_private"] is True and p["counts_public"] is False
    assert p["neighbouring"].startswith("add/remove-one-unit")
    assert "n_units" not in p and "n_samples" not in p  # private under add/remove: owner material only
    assert rel.owner["input_report"]["n_units"] == 200
    assert rel.table.columns == [
        "estimator",
        "estimate",
        "noise_scale",
        "interval_low",
        "interval_high",
        "epsilon",
    ]
    assert rel.table.height == 1
    dp = _quiet(frame, epsilon=1, **COLS).privacy.to_dict()  # m_UB by OpenDP's private median: 1/4, 1/2, 1/4
    assert [s["epsilon_budget"] for s in dp["steps"]] == [0.25, 0.5, 0.25]
    assert math.isclose(dp["epsilon_spent"], 1.0, rel_tol=1e-9) and dp["epsilon_spent"] <= 1.0
    base = _quiet(frame, epsilon=1, estimator="baseline", **COLS).privacy.to_dict()
    counts = [v.size for v in values]
    assert base["sensitivity"] == U * max(counts) / sum(counts)  # Delta_f = U m* / sum m (section III-B)
    assert (base["n_units"], base["n_samples"], base["counts_public"]) == (200, sum(counts), True)


BLOCKS = {
    "clipped-mean": ClippedMean(upper=U),
    "baseline": Baseline(upper=U),
    "array-averaging": ArrayAveraging(upper=U),
    "levy": Levy(upper=U),
    "quantile": Quantile(upper=U),
}


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_the_release_is_the_building_block_with_the_same_noise(
    name: str, data: tuple[pl.DataFrame, list[np.ndarray]]
) -> None:
    frame, values = data
    rel = _quiet(frame, epsilon=1, estimator=name, session=ud.Session(noise=SeededLaplace(7)), **COLS)
    block = BLOCKS[name].estimate(values, epsilon=1.0, noise=SeededLaplace(7))
    assert rel.table["estimate"][0] == block.estimate
    assert rel.table["noise_scale"][0] == block.noise_scale
    assert rel.privacy.epsilon_spent == block.epsilon_spent  # type: ignore[attr-defined]
    exact = _quiet(
        frame,
        epsilon=1,
        estimator=name,
        session=ud.Session(noise=ExactNoiseForTesting(acknowledge_not_private=True)),
        **COLS,
    )
    assert exact.privacy.noise_source == "NONE (test source: not private)"  # type: ignore[attr-defined]
    if name == "clipped-mean":  # no truncation at the exact median m_UB? the true mean of the kept samples
        m_ub = exact.privacy.m_ub  # type: ignore[attr-defined]
        kept = np.concatenate([v[:m_ub] for v in values])
        assert math.isclose(exact.table["estimate"][0], float(kept.mean()), rel_tol=1e-12)


def test_the_error_stays_within_the_stated_bound(data: tuple[pl.DataFrame, list[np.ndarray]]) -> None:
    """CLIPPED-MEAN with public m_UB = 30 (no unit truncated): estimate = U/2 + (S + X)/(N + Y) with X ~ Lap(b_s),
    Y ~ Lap(b_c) (the report's two scales). P(|X| > b ln(1/beta)) = beta for a Laplace; with beta = 0.01 for each,
    both hold with probability >= 0.98, and then |error| <= (b_s ln 100 + |S/N| b_c ln 100) / (N - b_c ln 100).
    Over 50 seeded runs at least 90% must be within it (Binomial(50, 0.98) < 45 has probability < 1e-3)."""
    frame, values = data
    all_values = np.concatenate(values)
    n, centred = all_values.size, float(np.sum(all_values - U / 2))
    truth = float(all_values.mean())
    within = 0
    for seed in range(50):
        rel = _quiet(frame, epsilon=1, m_ub=30, session=ud.Session(noise=SeededLaplace(seed)), **COLS)
        b_s, b_c = (s["scale"] for s in rel.privacy.steps)  # type: ignore[attr-defined]
        k = math.log(100)
        bound = (b_s * k + abs(centred / n) * b_c * k) / (n - b_c * k)
        within += abs(rel.table["estimate"][0] - truth) <= bound
    assert math.isclose(b_s, U / 2 * 30 * 1.5) and math.isclose(
        b_c, 30 * 3.0
    )  # (U/2) m_UB / (2/3), m_UB / (1/3)
    assert within >= 45, within


def test_a_store_that_cannot_afford_it_refuses_before_any_noise(
    data: tuple[pl.DataFrame, list[np.ndarray]], tmp_path: Path
) -> None:
    url = _store(tmp_path, per_day=0.5)
    noise = CountedOpenDP()
    with pytest.raises(
        ud.BudgetExceededError, match=re.escape("asked epsilon=1 per vehicle-day, left 0.5 of 0.5")
    ):
        _quiet(
            data[0],
            epsilon=1,
            day="2015-03-18",
            session=ud.Session(store=url, dataset="austin", noise=noise),
            out=tmp_path / "rel",
            **COLS,
        )
    assert noise.draws == 0 and _history(url) == [] and not (tmp_path / "rel").exists()


def test_a_second_release_is_refused_when_the_cap_is_spent(
    data: tuple[pl.DataFrame, list[np.ndarray]], tmp_path: Path
) -> None:
    url = _store(tmp_path, per_day=1.5)
    noise = CountedOpenDP()
    with ud.Session(store=url, dataset="austin", noise=noise) as s:
        first = _quiet(data[0], epsilon=1, day="2015-03-18", session=s, **COLS)
        drawn = noise.draws
        assert drawn > 0 and first.privacy.differentially_private
        with pytest.raises(ud.BudgetExceededError, match=re.escape("left 0.5 of 1.5")):
            _quiet(data[0], epsilon=1, day="2015-03-18", session=s, **COLS)
    assert noise.draws == drawn and len(s.releases) == 1
    assert _history(url) == [STATUS_COMMITTED]
    another_day = _quiet(data[0], epsilon=1, day="2015-03-19", session=s, **COLS)  # another day's budget
    assert another_day.privacy.day == "2015-03-19"  # type: ignore[attr-defined]
    assert _history(url) == [STATUS_COMMITTED, STATUS_COMMITTED]


@pytest.mark.parametrize("name", ["baseline", "array-averaging", "levy", "quantile"])
def test_the_paper_estimators_follow_the_fleet_s_rule(
    name: str, data: tuple[pl.DataFrame, list[np.ndarray]], tmp_path: Path
) -> None:
    """Def. II.1 (counts public) is not DP under the store's add/remove unit: labelled NOT DP, refused with a
    dataset before any noise (as ``speed_estimator`` in the fleet under ``neighbouring="add-remove"``)."""
    url = _store(tmp_path, per_day=10)
    noise = SeededLaplace(3)
    with pytest.raises(ud.InvalidParameterError, match="NOT differentially private") as caught:
        _quiet(
            data[0],
            epsilon=1,
            estimator=name,
            day="2015-03-18",
            session=ud.Session(url, "austin", noise=noise),
            **COLS,
        )
    assert caught.value.parameters == ("dataset",)
    assert noise.draws == 0 and _history(url) == []
    p = _quiet(data[0], epsilon=1, estimator=name, **COLS).privacy.to_dict()
    assert p["differentially_private"] is False and p["dp_label"] == "NOT differentially private"
    assert p["not_dp_reasons"] == [
        f"estimator {name} assumes unit counts are public (paper Def. II.1, replace-one); not DP under "
        "add/remove-one-unit; use clipped-mean"
    ]
    assert p["dp_under"].startswith("epsilon-DP under replace-one-unit-values (paper Def. II.1")
    assert p["counts_public"] is True and p["n_units"] == 200


def test_guards_fire_from_python(data: tuple[pl.DataFrame, list[np.ndarray]], tmp_path: Path) -> None:
    with pytest.raises(
        ud.InvalidParameterError, match=r"epsilon 1e\+300 per vehicle-day is above 100"
    ) as caught:
        _quiet(data[0], epsilon=1e300, m_ub=20, **COLS)
    assert caught.value.parameters == ("allow_meaningless_epsilon",)
    exact = ExactNoiseForTesting(acknowledge_not_private=True)
    allowed = _quiet(
        data[0],
        epsilon=1e300,
        m_ub=20,
        session=ud.Session(allow_meaningless_epsilon=True, noise=exact),
        **COLS,
    )
    assert allowed.privacy.differentially_private is False
    assert any("no meaningful protection" in r for r in allowed.privacy.not_dp_reasons)
    url = _store(tmp_path, per_day=1)
    with pytest.raises(ud.InvalidParameterError, match=r"^dataset needs day YYYY-MM-DD") as caught:
        _quiet(data[0], epsilon=1, session=ud.Session(url, "austin"), **COLS)
    assert caught.value.parameters == ("dataset", "day")
    with pytest.raises(ud.InputDataError, match=r"^data: no column speeds"):
        _quiet(data[0], epsilon=1, unit_column="vid", value_column="speeds", upper=U)


def test_the_folder_holds_dp_output_only(data: tuple[pl.DataFrame, list[np.ndarray]], tmp_path: Path) -> None:
    frame = pl.concat([data[0], pl.DataFrame({"vid": ["u0000", None], "speed": [float("nan"), 3.0]})])
    rel = _quiet(frame, epsilon=1, out=tmp_path / "mean", session=ud.Session(noise=SeededLaplace(4)), **COLS)
    published = sorted(p.name for p in (tmp_path / "mean").iterdir())
    assert published == [".urbandp-output.json", "estimate.csv", "privacy.json"]  # the marker, DP output
    owner = tmp_path / "owner_only" / "mean"
    report = json.loads((owner / "input_report.json").read_text())
    assert (report["n_units"], report["quarantined_rows"]) == (200, 2)
    assert report["quarantine_reasons"] == {"missing unit": 1, "non-finite value": 1}
    text = (tmp_path / "mean" / "privacy.json").read_text()
    assert "n_units" not in text and json.loads(text)["not_dp_outputs"]
    assert pl.read_csv(tmp_path / "mean" / "estimate.csv").equals(rel.table)
    with pytest.raises(ud.InputError, match="holds an earlier urbandp output; add overwrite"):
        rel.write(tmp_path / "mean")
    rel.write(tmp_path / "mean", overwrite=True)
    with pytest.warns(ud.OwnerWarning, match="2 input rows quarantined"):
        rel.emit_warnings()


def test_pandas_lazy_polars_and_a_path_give_the_same_table(
    data: tuple[pl.DataFrame, list[np.ndarray]], tmp_path: Path
) -> None:
    frame = data[0]
    frame.write_csv(tmp_path / "speeds.csv")
    exact = ud.Session(noise=ExactNoiseForTesting(acknowledge_not_private=True))
    tables = [
        _quiet(d, epsilon=1, estimator="levy", session=exact, **COLS).table
        for d in (frame, frame.lazy(), frame.to_pandas(), tmp_path / "speeds.csv")
    ]
    assert all(t.equals(tables[0]) for t in tables[1:])


@pytest.mark.skipif(not AUSTIN.exists(), reason="the Austin AVL day is not here")
def test_one_real_austin_day(tmp_path: Path) -> None:
    url = _store(tmp_path, per_day=2)
    with ud.Session(store=url, dataset="austin") as s:
        rel = _quiet(
            AUSTIN,
            unit_column="vehicle_id",
            value_column="speed",
            epsilon=1,
            day="2015-03-18",
            session=s,
            out=tmp_path / "austin",
            **{"upper": U},
        )
    assert 0.0 <= rel.table["estimate"][0] <= U and rel.privacy.noise_source == "OpenDP"  # type: ignore[attr-defined]
    assert _history(url) == [STATUS_COMMITTED]
