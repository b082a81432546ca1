"""``urbandp.counts.release``: the Python API is the library's release path of ``urbandp counts release``.

With the noise-free test source (``ExactNoiseForTesting``) a release is the true table, so paths, pandas and Polars
inputs, and the CLI and the API, are compared cell for cell; the budget and the guards are checked from Python.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import urbandp as ud
import urbandp.counts._cli
from urbandp._privacy.budget_store import STATUS_COMMITTED, BudgetStore, DatasetCaps
from urbandp._privacy.noise import ExactNoiseForTesting, OpenDPNoise
from urbandp._synth.taps import generate_taps
from urbandp.cli import app
from urbandp.counts._aggregate import joint_from_events
from urbandp.counts._domain import CountDomain
from urbandp.counts._units import PrivacyUnit
from urbandp.results import OwnerWarning, ReleaseWarning

pytestmark = pytest.mark.system
CARD = {"unit": "card-day", "max_events": 4}


def exact() -> ExactNoiseForTesting:
    return ExactNoiseForTesting(acknowledge_not_private=True)


class CountingNoise:
    """OpenDP's samplers, counting the draws (to prove that a refused release drew none). Private: a budget
    dataset refuses a release drawn from a source that is not."""

    is_private = True

    def __init__(self) -> None:
        self.draws = 0
        self._source = OpenDPNoise()

    def discrete_laplace(self, values: np.ndarray, scale: Any) -> np.ndarray:
        self.draws += 1
        return self._source.discrete_laplace(values, scale)

    def discrete_gaussian(self, values: np.ndarray, scale: Any) -> np.ndarray:
        self.draws += 1
        return self._source.discrete_gaussian(values, scale)

    def laplace(self, values: np.ndarray, scale: Any) -> np.ndarray:
        self.draws += 1
        return self._source.laplace(values, scale)

    def gaussian(self, values: np.ndarray, scale: Any) -> np.ndarray:
        self.draws += 1
        return self._source.gaussian(values, scale)


@pytest.fixture(scope="module")
def taps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    synth = generate_taps(trips_per_day=300, ferry_trips_per_day=50, days=2, seed=3)
    folder = tmp_path_factory.mktemp("taps")
    synth.events.write_csv(folder / "events.csv")
    (folder / "domain.json").write_text(json.dumps(synth.domain))
    return {"events": synth.events, "domain": synth.domain, "dir": folder}


def _store(tmp_path: Path, per_day: float) -> str:
    url = str(tmp_path / "budget.sqlite")
    store = BudgetStore(url)
    store.init_dataset(DatasetCaps("opal", "card-day", per_day))
    store.close()
    return url


def test_pandas_lazy_polars_and_path_give_the_same_exact_table(taps: dict[str, Any]) -> None:
    events: pl.DataFrame = taps["events"]
    path = taps["dir"] / "events.csv"
    inputs = {
        "path": (str(path), str(taps["dir"] / "domain.json")),
        "pandas": (events.to_pandas(), taps["domain"]),
        "lazy": (events.lazy(), CountDomain.from_json(taps["domain"])),
    }
    tables = {
        name: ud.counts.release(data, domain=dom, epsilon=1, session=ud.Session(noise=exact()), **CARD)
        for name, (data, dom) in inputs.items()
    }
    for name in ("pandas", "lazy"):
        for table in ("joint", "time", "location"):
            assert tables[name].tables[table].equals(tables["path"].tables[table]), (name, table)
    # the exact source adds nothing: the joint is the true bounded count of every cell, zeros included
    truth = joint_from_events(events, CountDomain.from_json(taps["domain"]), PrivacyUnit("card-day", 4, 1))
    table = tables["path"].table
    assert table.height == CountDomain.from_json(taps["domain"]).n_cells
    assert table["count"].sum() == truth.total > 0
    assert tables["path"].privacy.noise_source == "NONE (exact test source: not private)"  # type: ignore[attr-defined]


def test_budget_exceeded_before_any_noise(taps: dict[str, Any], tmp_path: Path) -> None:
    url = _store(tmp_path, per_day=1.5)
    noise = CountingNoise()
    with ud.Session(store=url, dataset="opal", noise=noise) as s:
        first = ud.counts.release(
            taps["dir"] / "events.csv", domain=taps["dir"] / "domain.json", epsilon=1, session=s, **CARD
        )
        drawn = noise.draws
        assert drawn > 0 and first.privacy.total_epsilon == 1.0  # type: ignore[attr-defined]
        with pytest.raises(
            ud.BudgetExceededError, match=re.escape("asked epsilon=1 per card-day, left 0.5 of 1.5")
        ):
            ud.counts.release(
                taps["dir"] / "events.csv",
                domain=taps["dir"] / "domain.json",
                epsilon=1,
                session=s,
                out=tmp_path / "second",
                **CARD,
            )
    assert noise.draws == drawn  # the refused release drew nothing
    assert not (tmp_path / "second").exists()
    assert len(s.releases) == 1
    store = BudgetStore(url)
    try:
        assert [h["status"] for h in store.history("opal")] == [STATUS_COMMITTED]
    finally:
        store.close()


def test_the_run_cap_refuses_before_noise(taps: dict[str, Any]) -> None:
    noise = CountingNoise()
    with pytest.raises(ud.BudgetExceededError, match="costs epsilon 2"):
        ud.counts.release(
            taps["events"],
            domain=taps["domain"],
            epsilon=2,
            budget_epsilon=1,
            session=ud.Session(noise=noise),
            **CARD,
        )
    assert noise.draws == 0


def test_guards_fire_from_python(taps: dict[str, Any], tmp_path: Path) -> None:
    args = (taps["events"],)
    kw: dict[str, Any] = {"domain": taps["domain"], **CARD}
    with pytest.raises(ud.InvalidParameterError, match=r"epsilon 1e\+300 per card-day \(at most 4 events\)"):
        ud.counts.release(*args, epsilon=1e300, **kw)
    with pytest.raises(
        ud.InvalidParameterError, match="^" + re.escape("delta 0.99 is above 1e-05")
    ) as caught:
        ud.counts.release(*args, epsilon=1, mechanism="gaussian", delta=0.99, **kw)
    assert caught.value.parameters == ("delta",)
    allowed = ud.counts.release(
        *args, epsilon=1e300, session=ud.Session(allow_meaningless_epsilon=True, noise=exact()), **kw
    )
    assert allowed.privacy.differentially_private is False
    assert any("no meaningful protection" in r for r in allowed.privacy.not_dp_reasons)
    url = _store(tmp_path, per_day=1.5)
    with pytest.raises(ud.InvalidParameterError, match="NOT differentially private"):
        ud.counts.release(
            *args,
            epsilon=1e300,
            session=ud.Session(store=url, dataset="opal", allow_meaningless_epsilon=True),
            **kw,
        )
    with pytest.raises(ud.InvalidParameterError, match="this method is not DP and cannot be charged"):
        ud.counts.release(
            *args, method="data61-2016", noise_scale=2, session=ud.Session(store=url, dataset="opal"), **kw
        )


def test_write_refuses_an_existing_folder_without_overwrite(taps: dict[str, Any], tmp_path: Path) -> None:
    rel = ud.counts.release(
        taps["events"], domain=taps["domain"], epsilon=1, session=ud.Session(noise=exact()), **CARD
    )
    out = tmp_path / "rel"
    written = rel.write(out)
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "domain.json",
        "joint.csv",
        "location.csv",
        "privacy.json",
        "time.csv",
    ]
    assert written["joint"] == out / "joint.csv"
    assert json.loads((out / "privacy.json").read_text()) == json.loads(rel.privacy.to_json())
    report = json.loads((tmp_path / "owner_only" / "rel" / "input_report.json").read_text())
    assert report["input_rows"] == taps["events"].height
    with pytest.raises(
        ud.InputError, match=r"^out .* holds an earlier urbandp output; add overwrite to replace it$"
    ):
        rel.write(out)
    rel.write(out, overwrite=True)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(ud.InputError):
        rel.write(foreign, overwrite=True)
    assert (foreign / "notes.txt").read_text() == "mine"


def test_warnings_are_python_warnings(taps: dict[str, Any]) -> None:
    broken = taps["events"].with_columns(pl.col("timestamp").cast(pl.String))
    broken = pl.concat([broken, broken.head(1).with_columns(timestamp=pl.lit("not a time"))])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rel = ud.counts.release(broken, domain=taps["domain"], epsilon=1, suppress_below=5, **CARD)
    kinds = {type(w.message) for w in seen}
    assert ReleaseWarning in kinds and OwnerWarning in kinds
    assert rel.warnings and "pure noise on a raw zero" in rel.warnings[0]
    # the parameter as Python passes it; the command line names --suppress-below
    assert re.search(r"; suppress_below=\d+ keeps that below one$", rel.warnings[0])
    assert rel.warnings[0].parameters == ("suppress_below",)  # type: ignore[attr-defined]
    assert rel.owner_warnings == [
        f"1 of {broken.height} input rows quarantined (see owner_only/<out>/quarantine.*)"
    ]
    assert rel.owner["quarantine"].height == 1


def _cli_defaults() -> dict[str, Any]:
    params = inspect.signature(urbandp.counts._cli.release).parameters
    rename = {"fmt": "format"}
    skip = {
        "input",
        "out",
        "config",
        "dry_run",
        "dataset",
        "budget_store",
        "allow_meaningless_epsilon",
        "overwrite",
    }
    return {
        rename.get(k, k): getattr(p.default, "default", p.default) for k, p in params.items() if k not in skip
    }


def test_api_defaults_are_the_cli_defaults() -> None:
    api = inspect.signature(ud.counts.release).parameters
    cli = _cli_defaults()
    assert set(cli) <= set(api)
    assert {k: api[k].default for k in cli} == cli


def test_release_is_the_function_even_after_the_table_module_is_imported() -> None:
    importlib.import_module("urbandp.counts._table_release")
    assert callable(ud.counts.release) and ud.counts.release.__module__ == "urbandp.counts._api"
    assert ud.counts.CountDomain is CountDomain
    # the mechanism over a raw joint array draws without any guard: internal, not exported
    assert not hasattr(ud.counts, "release_counts") and "release_counts" not in ud.counts.__all__


def _comparable(folder: Path) -> dict[str, Any]:
    privacy = json.loads((folder / "privacy.json").read_text())
    tables = {p.name: p.read_bytes() for p in sorted(folder.glob("*.csv"))}
    return {"privacy": privacy, "tables": tables, "domain": (folder / "domain.json").read_text()}


@pytest.mark.parametrize(
    "options",
    [
        {"unit": "card-day", "max_events": 4, "epsilon": 1.0},
        {"unit": "card-day", "max_events": 4, "mechanism": "gaussian", "delta": 1e-6, "epsilon": 1.0},
        {"epsilon": 0.5, "marginal_epsilon": 0.5},
    ],
)
def test_cli_and_api_give_the_same_folder(
    options: dict[str, Any], taps: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("urbandp._privacy.session.OpenDPNoise", exact)
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
    cli_out = tmp_path / "cli" / "rel"
    cli_out.parent.mkdir()
    r = CliRunner().invoke(
        app,
        [
            "counts",
            "release",
            str(taps["dir"] / "events.csv"),
            "--domain",
            str(taps["dir"] / "domain.json"),
            *flags,
            "--out",
            str(cli_out),
        ],
    )
    assert r.exit_code == 0, r.output
    api_out = tmp_path / "api" / "rel"
    rel = ud.counts.release(
        taps["events"].to_pandas(),
        domain=taps["domain"],
        session=ud.Session(noise=exact()),
        out=api_out,
        **options,
    )
    assert _comparable(api_out) == _comparable(cli_out)
    assert json.loads(r.output.splitlines()[-1])["total_epsilon"] == rel.privacy.total_epsilon  # type: ignore[attr-defined]


def test_api_errors_name_the_keyword_not_the_flag(taps: dict[str, Any]) -> None:
    """Issue 31: a Python caller reads its keyword (``top_k_tap``), never a flag it did not type; the command line
    prints the flag (tests/system/counts/test_counts_refusals.py, test_counts_cli.py)."""
    args = (taps["events"],)
    kw: dict[str, Any] = {"domain": taps["domain"], "epsilon": 1, **CARD}
    cases: list[tuple[dict[str, Any], str, tuple[str, ...]]] = [
        ({"domain": None}, "no public domain: give a domain (a JSON file), or select_partitions with delta",
         ("select_partitions", "delta")),
        ({"top_k": 2, "top_k_epsilon": 1, "top_k_tap": "sideways"},
         "top_k_tap 'sideways' is not a tap of the domain (on, off)", ("top_k_tap",)),
        ({"top_k": 10_000, "top_k_epsilon": 1}, "top_k must be between 1 and the number of places", ("top_k",)),
        ({"suppress_below": float("nan")}, "suppress_below must be a finite number, got nan", ("suppress_below",)),
    ]  # fmt: skip
    for changes, message, parameters in cases:
        with pytest.raises(ud.InvalidParameterError) as caught:
            ud.counts.release(*args, **{**kw, **changes}, session=ud.Session(noise=exact()))
        assert str(caught.value).startswith(message) and "--" not in str(caught.value)
        assert caught.value.parameters == parameters
    with pytest.raises(ud.InvalidParameterError) as caught:
        ud.counts.release(
            *args,
            **{**kw, "epsilon": None},
            method="data61-2016",
            noise_scale=2,
            session=ud.Session(dataset="opal"),
        )
    assert str(caught.value) == "dataset: this method is not DP and cannot be charged to a budget"
    assert caught.value.parameters == ("dataset",)
