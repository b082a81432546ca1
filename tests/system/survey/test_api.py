"""Issue 31, survey wing: the public Python API is the release path the CLI calls.

Frames and paths give the same table; a release the store cannot afford is refused before any draw; the guards fire
from Python; ``rel.write`` refuses an existing folder; and the CLI (in-process) and the API give identical tables
and privacy.json with the noise-free test source (up to the command line and the software versions).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

import urbandp as ud
import urbandp.survey._charge
from urbandp._privacy.noise import ExactNoiseForTesting
from urbandp.cli import app
from urbandp.results import ReleaseWarning

pytestmark = pytest.mark.system

CATS = "Camry,Civic,Leaf"
DAY = "2021-10-05"


def _exact() -> ExactNoiseForTesting:
    return ExactNoiseForTesting(acknowledge_not_private=True)


def _vehicles() -> pl.DataFrame:
    models = ["Camry", "Civic", "Leaf", "Delorean"]  # Delorean: off the list, released as a uniform draw
    return pl.DataFrame(
        {
            "household": [str(i) for i in range(40)],
            "model": [models[i % 4] for i in range(40)],
            "note": ["x"] * 40,
        }
    )


def _homes() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "household": [str(i) for i in range(30)],
            "lat": [44.95 + 0.001 * i for i in range(30)],
            "lon": [-93.25 - 0.001 * i for i in range(30)],
        }
    )


def _init(url: str, name: str, unit: str, total: str) -> None:
    args = ["budget", "init", name, "--unit", unit, "--epsilon-total", total, "--budget-store", url]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output


def test_frames_and_paths_give_the_same_table(tmp_path: Path) -> None:
    """A pandas frame, a Polars LazyFrame and a Parquet path: the same released table (exact test source)."""
    frame = _vehicles()
    path = tmp_path / "vehicles.parquet"
    frame.write_parquet(path)
    options: dict[str, Any] = {
        "column": "model",
        "categories": CATS,
        "epsilon": 1.0,
        "id_column": "household",
    }
    tables = [
        ud.survey.randomize(data, session=ud.Session(noise=_exact()), **options).table
        for data in (frame.to_pandas(), frame.lazy(), path)
    ]
    assert tables[0].equals(tables[1]) and tables[0].equals(tables[2])
    assert tables[0].columns == ["household", "model"]  # "note" is not declared public: dropped
    truth = frame.get_column("model").to_list()
    assert tables[0].get_column("model").to_list() == [m if m != "Delorean" else "Camry" for m in truth]
    homes = _homes()
    points = [
        ud.survey.perturb_points(
            d, lat="lat", lon="lon", epsilon_per_metre=0.01, session=ud.Session(noise=_exact())
        )
        for d in (homes.to_pandas(), homes.lazy())
    ]
    assert points[0].table.equals(points[1].table)
    assert points[0].table.get_column("lat").to_list() == pytest.approx(homes.get_column("lat").to_list())


def test_a_second_release_the_store_cannot_afford_is_refused_before_any_draw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """epsilon-total 1.5 holds one release at epsilon 1, not two: the second raises BudgetExceededError, draws
    nothing and writes nothing; the first is committed and recorded in the session."""
    url = str(tmp_path / "budget.sqlite")
    _init(url, "travel", "respondent", "1.5")
    draws: list[str] = []
    original = urbandp.survey._charge.bit_source

    def spy(name: str) -> Any:
        source = original(name)
        real = source.bernoulli

        def bernoulli(n: int, prob: float) -> Any:
            draws.append("bernoulli")
            return real(n, prob)

        source.bernoulli = bernoulli  # type: ignore[method-assign]
        return source

    monkeypatch.setattr(urbandp.survey._charge, "bit_source", spy)
    options: dict[str, Any] = {"column": "model", "categories": CATS, "epsilon": 1.0, "survey_date": DAY}
    with ud.Session(store=url, dataset="travel") as s:
        first = ud.survey.randomize(_vehicles(), session=s, out=tmp_path / "one", **options)
        assert len(s.releases) == 1 and draws
        draws.clear()
        with pytest.raises(ud.BudgetExceededError):
            ud.survey.randomize(_vehicles(), session=s, out=tmp_path / "two", **options)
    assert draws == [] and not (tmp_path / "two").exists() and len(s.releases) == 1
    assert first.privacy.epsilon == pytest.approx(1.0)  # type: ignore[attr-defined]


def test_the_guards_fire_from_python(tmp_path: Path) -> None:
    """A meaningless epsilon is refused; a NOT DP release (report-replacement, SSD) is refused with a dataset; a
    dataset needs survey_date; budget_epsilon caps the release before any draw."""
    with pytest.raises(ud.InvalidParameterError, match="above 100 per respondent"):
        ud.survey.randomize(_vehicles(), column="model", categories=CATS, epsilon=1000.0)
    url = str(tmp_path / "budget.sqlite")
    _init(url, "travel", "respondent", "10")
    s = ud.Session(store=url, dataset="travel")
    with pytest.raises(ud.InputError, match=r"report-replacement builds its replacements"):
        ud.survey.randomize(
            _vehicles(),
            column="model",
            categories=CATS,
            method="report-replacement",
            p=0.5,
            survey_date=DAY,
            session=s,
        )
    with pytest.raises(ud.InvalidParameterError, match=r"^dataset needs survey_date YYYY-MM-DD") as caught:
        ud.survey.randomize(_vehicles(), column="model", categories=CATS, epsilon=1.0, session=s)
    assert caught.value.parameters == ("dataset", "survey_date")  # the CLI: --dataset needs --survey-date
    with pytest.raises(ud.BudgetExceededError, match=r"cap is epsilon 0\.5"):
        ud.survey.od_randomize(
            pl.DataFrame({"from": ["1", "2"], "to": ["2", "1"]}), origin="from", dest="to", blocks=3, epsilon=1.0,
            budget_epsilon=0.5,
        )  # fmt: skip
    assert s.releases == []


def test_write_refuses_an_existing_folder_without_overwrite(tmp_path: Path) -> None:
    rel = ud.survey.randomize(
        _vehicles(), column="model", categories=CATS, epsilon=1.0, id_column="household"
    )
    written = rel.write(tmp_path / "rel")
    assert set(written) >= {"randomized.csv", "privacy.json", "quarantine.csv", "input_report.json"}
    assert pl.read_csv(tmp_path / "rel" / "randomized.csv", infer_schema=False).equals(rel.table)
    doc = json.loads((tmp_path / "rel" / "privacy.json").read_text())
    assert doc["not_dp_outputs"] == [
        f"owner_only/rel/{n}" for n in ("quarantine.csv", "alias_report.csv", "input_report.json")
    ]
    with pytest.raises(ud.InputError, match="add overwrite"):
        rel.write(tmp_path / "rel")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "mine.txt").write_text("not urbandp's")
    with pytest.raises(ud.InputError):
        rel.write(tmp_path / "other", overwrite=True)
    rel.write(tmp_path / "rel", overwrite=True)


def test_the_k_rr_float_limit_is_a_release_warning() -> None:
    """--epsilon 40 over 3 categories: k-RR spends less in double precision; a ReleaseWarning says so."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rel = ud.survey.randomize(_vehicles(), column="model", categories=CATS, epsilon=40.0)
    assert [w.category for w in caught] == [ReleaseWarning] and rel.warnings
    # the parameter as Python passes it (the command line says --epsilon 40)
    assert rel.warnings[0].startswith("epsilon=40: k-RR spends at most")
    assert rel.warnings[0].parameters == ("epsilon",)  # type: ignore[attr-defined]
    assert rel.privacy.epsilon < 40  # type: ignore[attr-defined]


def _same(cli: dict[str, Any], api: dict[str, Any]) -> None:
    for doc in (cli, api):
        doc.pop("command"), doc.pop("software")
    assert cli == api


@pytest.mark.parametrize(
    ("command", "function", "make", "args", "options", "name"),
    [
        (
            "randomize",
            "randomize",
            _vehicles,
            ["--column", "model", "--categories", CATS, "--epsilon", "1", "--id", "household"],
            {"column": "model", "categories": CATS, "epsilon": 1.0, "id_column": "household"},
            "randomized.csv",
        ),
        (
            "perturb-points",
            "perturb_points",
            _homes,
            [
                "--lat",
                "lat",
                "--lon",
                "lon",
                "--epsilon-per-metre",
                "0.01",
                "--bbox",
                "44.9,-93.4,45.1,-93.1",
            ],
            {"lat": "lat", "lon": "lon", "epsilon_per_metre": 0.01, "bbox": (44.9, -93.4, 45.1, -93.1)},
            "points.csv",
        ),
        (
            "od-randomize",
            "od_randomize",
            lambda: pl.DataFrame({"trip": ["1", "2", "3"], "from": ["1", "2", "9"], "to": ["2", "3", "1"]}),
            ["--from", "from", "--to", "to", "--blocks", "3", "--epsilon", "2", "--id", "trip"],
            {"origin": "from", "dest": "to", "blocks": 3, "epsilon": 2.0, "id_column": "trip"},
            "trips.csv",
        ),
    ],
)
def test_cli_and_api_agree_with_the_exact_test_source(
    command: str, function: str, make: Any, args: list[str], options: dict[str, Any], name: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The same release through ``urbandp survey ...`` (in-process) and through ``ud.survey.*``: identical tables
    and privacy.json (up to the command line and the software versions)."""
    csv = tmp_path / "input.csv"
    make().write_csv(csv)
    api = getattr(ud.survey, function)(
        csv, session=ud.Session(noise=_exact()), out=tmp_path / "api" / "rel", **options
    )
    monkeypatch.setattr("urbandp._privacy.session.OpenDPNoise", _exact)
    res = CliRunner().invoke(
        app, ["survey", command, str(csv), *args, "--out", str(tmp_path / "cli" / "rel")]
    )
    assert res.exit_code == 0, res.output
    cli_table = pl.read_csv(tmp_path / "cli" / "rel" / name, infer_schema=False)
    assert cli_table.equals(pl.read_csv(tmp_path / "api" / "rel" / name, infer_schema=False))
    assert cli_table.equals(api.table.cast(pl.String))
    cli_doc = json.loads((tmp_path / "cli" / "rel" / "privacy.json").read_text())
    api_doc = json.loads((tmp_path / "api" / "rel" / "privacy.json").read_text())
    assert any("ExactNoiseForTesting" in r for r in cli_doc["not_dp_reasons"])
    assert cli_doc["differentially_private"] is False
    _same(cli_doc, api_doc)
    assert api_doc["unit"] == api.privacy.unit and api_doc.get("epsilon") == api.privacy.model_dump().get(
        "epsilon"
    )
