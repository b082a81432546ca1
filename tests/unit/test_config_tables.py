"""The Python API reads the same TOML file as ``--config`` (issue 31): ``ud.counts.release(data, config=FILE)``.

Checked as the command line's side is (tests/unit/test_cli_config.py): every key a command's table may hold is a
keyword its API function takes (or the session's store and dataset); a release from the file equals the release
from the same keywords (the same ``spec_sha256`` and stated loss); a keyword passed wins over the file; an unknown
key, a key the caller sets, a value of the wrong type and a store without its session are refused in one line
naming the file and the key; and a value the library refuses is named by its key in the file.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import typer

import urbandp as ud
from urbandp._cli_config import config_keys
from urbandp._config_tables import CALLER_ONLY, CONFIG_TABLES, SESSION_KEYS
from urbandp.errors import InputDataError, InvalidParameterError

API = {
    "counts.release": "urbandp.counts._api:release",
    "survey.randomize": "urbandp.survey._api:randomize",
    "survey.perturb-points": "urbandp.survey._api:perturb_points",
    "survey.od-randomize": "urbandp.survey._api:od_randomize",
    "survey.perturb-trajectories": "urbandp.survey._api:perturb_trajectories",
    "sensing.dp-map": "urbandp.sensing._api:dp_map",
    "sensing.pm-map": "urbandp.sensing._api:pm_map",
    "sensing.query": "urbandp.sensing._api:query",
}


def _api(table: str) -> Any:
    module, name = API[table].split(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("table", CONFIG_TABLES)
def test_every_key_of_the_command_table_is_a_keyword_of_its_api_function(table: str, tmp_path: Path) -> None:
    group, name = table.split(".", 1)
    command = typer.main.get_command(importlib.import_module(f"urbandp.{group}._cli").app).commands[name]  # type: ignore[attr-defined]
    fn = _api(table)
    keywords = set(inspect.signature(fn).parameters)
    assert "config" in keywords, f"{API[table]} takes no config="
    config = tmp_path / "c.toml"
    for key, option in config_keys(command).items():
        keyword = option.name  # the keyword the key sets (``id`` -> ``id_column``)
        assert keyword in SESSION_KEYS or (keyword in keywords and keyword not in CALLER_ONLY), (table, key)
        if keyword in SESSION_KEYS:
            continue
        # the API reads the key as that keyword: a value no keyword takes (a table) is refused naming both
        config.write_text(f"[{table}]\n{key} = {{}}\n")
        taken = rf"^{key} in {re.escape(str(config))} \[{table}\] = {{}} is not a value {fn.__name__}'s {keyword} takes$"
        with pytest.raises(InvalidParameterError, match=taken):
            fn(tmp_path / "absent.csv", config=config)


@pytest.fixture(scope="module")
def taps(tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, dict[str, Any]]:
    from urbandp._synth.taps import generate_taps

    synth = generate_taps(trips_per_day=120, ferry_trips_per_day=20, days=1, seed=5)
    return synth.events, synth.domain


OPTIONS: dict[str, Any] = {
    "unit": "card-day",
    "max_events": 4,
    "max_per_cell": 2,
    "epsilon": 1.5,
    "threshold": 12.0,
}
TOML = (
    '[counts.release]\nunit = "card-day"\nmax-events = 4\nmax_per_cell = 2\nepsilon = 1.5\nthreshold = 12\n'
)


def test_a_counts_release_from_the_file_equals_the_one_from_keywords(taps: Any, tmp_path: Path) -> None:
    events, domain = taps
    config = tmp_path / "release.toml"
    config.write_text(TOML)
    by_keywords = ud.counts.release(events, domain=domain, **OPTIONS).privacy.to_dict()
    by_file = ud.counts.release(events, domain=domain, config=config).privacy.to_dict()
    assert by_file["spec_sha256"] == by_keywords["spec_sha256"]
    assert by_file["epsilon"] == 1.5


def test_a_keyword_wins_over_the_file(taps: Any, tmp_path: Path) -> None:
    events, domain = taps
    config = tmp_path / "release.toml"
    config.write_text(TOML)
    privacy = ud.counts.release(events, domain=domain, config=config, epsilon=0.5).privacy.to_dict()
    assert privacy["epsilon"] == 0.5
    expected = ud.counts.release(events, domain=domain, **{**OPTIONS, "epsilon": 0.5}).privacy.to_dict()
    assert privacy["spec_sha256"] == expected["spec_sha256"]


def test_a_library_refusal_of_a_file_value_names_the_key(taps: Any, tmp_path: Path) -> None:
    events, domain = taps
    config = tmp_path / "bad.toml"
    config.write_text(TOML + "precision = 20\n")
    with pytest.raises(InvalidParameterError) as caught:
        ud.counts.release(events, domain=domain, config=config)
    assert str(caught.value).startswith(f"precision in {config} [counts.release] must be")
    assert "--" not in str(caught.value) and "precision" not in caught.value.parameters
    with pytest.raises(InvalidParameterError) as passed:  # the same value passed as a keyword: named as such
        ud.counts.release(events, domain=domain, config=config, precision=21)
    assert str(passed.value).startswith("precision must be") and passed.value.parameters == ("precision",)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("epsilom = 1\n", "epsilom in {path} [counts.release] is not an option (did you mean 'epsilon'?)"),
        ('out = "x"\n', "out in {path} [counts.release] is set by the caller, not a config file"),
        (
            'epsilon = "big"\n',
            "epsilon in {path} [counts.release] = 'big' is not a value release's epsilon takes",
        ),
        (
            "max_events = 1.5\n",
            "max_events in {path} [counts.release] = 1.5 is not a value release's max_events takes",
        ),
        ('budget_store = "b.sqlite"\n', "budget_store in {path} [counts.release] = 'b.sqlite': in Python"),
    ],
)
def test_bad_keys_and_values_are_refused_in_one_line(
    taps: Any, tmp_path: Path, toml: str, message: str
) -> None:
    events, domain = taps
    config = tmp_path / "bad.toml"
    config.write_text("[counts.release]\n" + toml)
    with pytest.raises(InvalidParameterError) as caught:
        ud.counts.release(events, domain=domain, config=config)
    assert str(caught.value).startswith(message.format(path=config))
    assert "\n" not in str(caught.value)


def test_a_file_without_the_table_or_not_toml_is_refused(taps: Any, tmp_path: Path) -> None:
    events, domain = taps
    config = tmp_path / "other.toml"
    config.write_text('[survey.randomize]\ncolumn = "model"\n')
    with pytest.raises(InputDataError, match=r"has no \[counts.release\] table"):
        ud.counts.release(events, domain=domain, config=config)
    config.write_text("epsilon = = 1\n")
    with pytest.raises(InputDataError, match="not TOML"):
        ud.counts.release(events, domain=domain, config=config)
    with pytest.raises(InputDataError, match="not found"):
        ud.counts.release(events, domain=domain, config=tmp_path / "missing.toml")


def test_the_store_and_dataset_of_the_file_must_be_the_session_s(taps: Any, tmp_path: Path) -> None:
    events, domain = taps
    from urbandp._privacy.budget_store import BudgetStore, DatasetCaps

    store = tmp_path / "budget.sqlite"
    ledger = BudgetStore(str(store))
    ledger.init_dataset(DatasetCaps("opal", "card-day", 10.0))
    ledger.close()
    config = tmp_path / "release.toml"
    config.write_text(TOML + f'budget_store = "{store}"\ndataset = "opal"\n')
    with ud.Session(store=store, dataset="opal") as session:
        rel = ud.counts.release(events, domain=domain, config=config, session=session)
    assert rel.privacy.to_dict()["epsilon"] == 1.5
    with (
        ud.Session(store=store, dataset="other") as session,
        pytest.raises(InvalidParameterError, match="dataset"),
    ):
        ud.counts.release(events, domain=domain, config=config, session=session)


def test_survey_aliases_read_the_command_line_s_keys(tmp_path: Path) -> None:
    n = 40
    data = pl.DataFrame(
        {
            "household": [str(i) for i in range(n)],
            "model": [["Camry", "Civic", "Leaf"][i % 3] for i in range(n)],
        }
    )
    config = tmp_path / "survey.toml"
    config.write_text(
        '[survey.randomize]\ncolumn = "model"\ncategories = "Camry,Civic,Leaf"\nepsilon = 2\nid = "household"\n'
    )
    by_file = ud.survey.randomize(data, config=config)
    by_keywords = ud.survey.randomize(
        data, column="model", categories="Camry,Civic,Leaf", epsilon=2, id_column="household"
    )
    assert by_file.privacy.to_dict()["spec_sha256"] == by_keywords.privacy.to_dict()["spec_sha256"]
    assert by_file.table["household"].to_list() == data["household"].to_list()


def test_a_sensing_pm_map_from_the_file_reads_the_box_as_the_flag_does(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from urbandp.cli import app

    readings = tmp_path / "readings.csv"
    assert CliRunner().invoke(app, ["sensing", "synth", str(readings), "--readings", "300"]).exit_code == 0
    box = (22.45, 88.30, 22.65, 88.47)
    options: dict[str, Any] = {
        "start": "2024-01-15",
        "end": "2024-01-16",
        "epsilon": 2.0,
        "cell_metres": 1500.0,
    }
    config = tmp_path / "pm.toml"
    config.write_text(
        '[sensing.pm-map]\nbbox = "22.45,88.30,22.65,88.47"\nstart = 2024-01-15\nend = "2024-01-16"\n'
        "epsilon = 2\ncell_metres = 1500\n"
    )
    by_file = ud.sensing.pm_map(readings, config=config).privacy.to_dict()
    by_keywords = ud.sensing.pm_map(readings, bbox=box, **options).privacy.to_dict()
    assert by_file["spec_sha256"] == by_keywords["spec_sha256"]


def test_a_required_keyword_left_out_is_named_in_one_line(tmp_path: Path) -> None:
    data = pl.DataFrame({"model": ["Camry", "Civic"]})
    with pytest.raises(InvalidParameterError) as caught:
        ud.survey.randomize(data, epsilon=2, categories="Camry,Civic")
    assert str(caught.value) == "randomize needs column: give it as a keyword (or in a config file, config=)"
    assert caught.value.parameters == ("column",)
    config = tmp_path / "c.toml"
    config.write_text("[sensing.pm-map]\nepsilon = 2\n")
    with pytest.raises(
        InvalidParameterError,
        match=rf"^pm_map needs bbox, start, end: give them as keywords or in {re.escape(str(config))} \[sensing.pm-map\]$",
    ):
        ud.sensing.pm_map(tmp_path / "r.csv", config=config)


@pytest.mark.parametrize("table", CONFIG_TABLES)
def test_every_keyword_of_the_api_function_is_an_option_with_its_default_and_help(table: str) -> None:
    """The other way round (scikit-learn's common test): each keyword a caller may set has the command's flag, a
    key in the file, help text, and the same default; a keyword the API requires is required by the command."""
    from urbandp._config_tables import REQUIRED

    group, name = table.split(".", 1)
    command = typer.main.get_command(importlib.import_module(f"urbandp.{group}._cli").app).commands[name]  # type: ignore[attr-defined]
    fn = _api(table)
    options = {param.name: param for param in config_keys(command).values()}
    for keyword, parameter in inspect.signature(fn).parameters.items():
        if keyword in CALLER_ONLY:
            continue
        assert keyword in options, f"{API[table]}: {keyword} has no flag in urbandp {group} {name}"
        option = options[keyword]
        assert option.help, (table, keyword)
        if parameter.default in (REQUIRED, inspect.Parameter.empty):
            assert option.required, (table, keyword)
        elif isinstance(parameter.default, tuple):  # a list flag: the comma text of the keyword's tuple
            assert [float(v) for v in str(option.default).split(",")] == list(parameter.default), (
                table,
                keyword,
            )
        else:
            assert option.default == parameter.default, (table, keyword, option.default, parameter.default)
