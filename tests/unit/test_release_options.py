"""Each release's options are declared once, as the fields of one pydantic model, and the rest is held to it.

As scikit-learn's common tests hold every estimator to its ``_parameter_constraints``: for every model listed in
:data:`SPECS`, every option has a help text and is a flag of its command with the field's flag, default, help and
requiredness (the command declares no option of its own besides the run's: ``--out``, ``--dataset`` ...), shown by
``--help``; the Python API's signature has every option as a keyword with the field's default and its type (and no
other option); a ``--config`` file's key for every option is read; every option declares the values it admits
(bounds, choices, a number or a switch by its type) or is listed in :data:`ADMITS_ANY` with the reason; and a value
outside each option's bounds or choices, or of the wrong type, is refused in one line naming the option, from
Python and (for one option of each kind) at the command line, where the flag is named.
"""

from __future__ import annotations

import datetime as dt
import importlib
import inspect
import math
from pathlib import Path
from typing import Any

import pytest
import typer

from urbandp._config_tables import REQUIRED
from urbandp._release_options import DeclaredOption, declared_options
from urbandp.errors import InvalidParameterError

SPECS: dict[str, tuple[str, str, str]] = {
    # release -> (spec class, API function, command "group name")
    "counts release": (
        "urbandp.counts._options:CountsReleaseSpec",
        "urbandp.counts._api:release",
        "counts release",
    ),
    **{
        f"survey {command}": (
            f"urbandp.survey.{module}:{spec}",
            f"urbandp.survey._api:{function}",
            f"survey {command}",
        )
        for command, module, spec, function in (
            ("randomize", "_rr_release", "RandomizeSpec", "randomize"),
            ("perturb-points", "_points_release", "PointsSpec", "perturb_points"),
            ("od-randomize", "_od_release", "OdSpec", "od_randomize"),
            ("perturb-trajectories", "_trajectory_release", "TrajectoriesSpec", "perturb_trajectories"),
        )
    },
    **{
        f"sensing {command}": (
            f"urbandp.sensing._options:{spec}",
            f"urbandp.sensing._api:{function}",
            f"sensing {command}",
        )
        for command, spec, function in (
            ("dp-map", "DpMapOptions", "dp_map"),
            ("pm-map", "PmMapOptions", "pm_map"),
            ("query", "QueryOptions", "query"),
        )
    },
}

RUN_OPTIONS = {
    # command parameters that are not a release's options: where it reads and writes, the budget it charges
    "input",
    "out",
    "config",
    "dataset",
    "budget_store",
    "survey_date",
    "dry_run",
    "allow_meaningless_epsilon",
    "overwrite",
    "input_path",
    "grid_csv",
}
API_RUN_KEYWORDS = {
    "data",
    "session",
    "out",
    "overwrite",
    "progress",
    "config",
    "command_line",
    "survey_date",
    "grid",
}

ADMITS_ANY: dict[tuple[str, str], str] = {
    ("counts release", "domain"): "a file, a CountDomain or its JSON object: read and checked by CountDomain",
    ("counts release", "top_k_tap"): "a tap name of the public domain, checked against it",
    ("counts release", "spark_master"): "a Spark master URL, Spark's to judge",
    (
        "counts release",
        "column",
    ): "ROLE=NAME items, checked by counts._columns.column_map and against the header",
    **{
        (release, name): "a column of the input, checked against its header"
        for release, names in {
            "survey randomize": ("column", "within", "id_column"),
            "survey perturb-points": ("lat", "lon", "id_column"),
            "survey od-randomize": ("origin", "dest", "id_column", "person"),
            "survey perturb-trajectories": ("lat", "lon", "trip", "order", "person"),
        }.items()
        for name in names
    },
    **{
        (release, "keep_columns"): "columns of the input declared public, checked against its header"
        for release in (
            "survey randomize",
            "survey perturb-points",
            "survey od-randomize",
            "survey perturb-trajectories",
        )
    },
    **{
        (release, "separator"): "a CSV field separator, the reader's to judge"
        for release in (
            "survey randomize",
            "survey perturb-points",
            "survey od-randomize",
            "survey perturb-trajectories",
        )
    },
    ("survey randomize", "categories"): "the declared list, parsed (empty or repeated names refused)",
    ("survey randomize", "categories_file"): "a file of the declared list, read and parsed",
    ("survey randomize", "aliases"): "a file of alias lines, read and parsed",
    ("survey perturb-points", "bbox"): "the outlier box, parsed by PointsSpec.box",
    ("survey od-randomize", "blocks_file"): "a file of block ids, read (at least 2 distinct)",
    ("sensing dp-map", "bbox"): "a public box, checked by options.check_box (min < max)",
    ("sensing pm-map", "bbox"): "a public box, checked by options.check_box (min < max)",
    (
        "sensing dp-map",
        "utility_epsilons",
    ): "a list of epsilons, each > 0, checked in DpMapOptions.__post_init__",
    **{
        (release, name): "an ISO date or date-time, parsed by options.parse_window"
        for release in ("sensing dp-map", "sensing pm-map")
        for name in ("start", "end")
    },
    **{
        (release, "value_column"): "a column of the input, checked against its header"
        for release in ("sensing dp-map", "sensing pm-map")
    },
    ("sensing pm-map", "vehicle_column"): "a column of the input, checked against its header",
    ("sensing query", "rect"): "4 numbers, checked in QueryOptions.__post_init__",
    ("sensing query", "select"): "4 numbers, checked in QueryOptions.__post_init__",
    ("sensing query", "window"): "a window of the grid file, checked against it",
    (
        "sensing pm-map",
        "window",
    ): "whole, season, day, week, hour or a number of minutes, parsed (and refused in one line) by window_length",
    ("sensing query", "cells"): "a file of cell ids, read and checked against the grid",
}

VALID: dict[str, dict[str, Any]] = {
    # keywords that make a valid spec, to which one bad value is added
    "counts release": {"epsilon": 1.0, "domain": {"days": ["2024-01-01"]}},
    "survey randomize": {"column": "model", "epsilon": 1.0},
    "survey perturb-points": {"lat": "lat", "lon": "lon", "scale_metres": 100.0},
    "survey od-randomize": {"origin": "from", "dest": "to", "blocks": 5, "epsilon": 1.0},
    "survey perturb-trajectories": {
        "lat": "lat",
        "lon": "lon",
        "trip": "trip",
        "epsilon": 1.0,
        "max_step_metres": 100.0,
    },
    **{
        f"sensing {command}": {
            "bbox": (22.45, 88.30, 22.65, 88.47),
            "start": "2024-01-15",
            "end": "2024-01-16",
        }
        for command in ("dp-map", "pm-map")
    },
    "sensing query": {"rect": (22.45, 88.30, 22.65, 88.47), "sigma2_min": 0.0, "sigma2_max": 800.0},
}


def _load(reference: str) -> Any:
    module, name = reference.split(":")
    return getattr(importlib.import_module(module), name)


def _options(release: str) -> tuple[DeclaredOption, ...]:
    return declared_options(_load(SPECS[release][0]))


def _command(release: str) -> Any:
    group, name = SPECS[release][2].split(" ")
    app = importlib.import_module(f"urbandp.{group}._cli").app
    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]


def _cases() -> list[tuple[str, DeclaredOption]]:
    return [(release, o) for release in SPECS for o in _options(release)]


def _ids(cases: list[tuple[str, DeclaredOption]]) -> list[str]:
    return [f"{release}: {o.name}" for release, o in cases]


@pytest.mark.parametrize("release", SPECS)
def test_every_option_is_a_flag_of_the_command_with_the_field_s_default_help_and_requiredness(
    release: str,
) -> None:
    params = {p.name: p for p in _command(release).params}
    for o in _options(release):
        assert o.name in params, (release, o.name)
        p = params[o.name]
        assert o.flag in p.opts, (release, o.name, p.opts)
        assert p.help == o.help, (release, o.name)
        assert p.required == o.required, (release, o.name)
        if not o.required:
            assert p.default == o.command_line_default, (release, o.name, p.default, o.default)
        if o.negatable:
            assert p.secondary_opts == ["--no-" + o.flag[2:]], (release, o.name)


@pytest.mark.parametrize("release", SPECS)
def test_the_command_declares_no_option_of_its_own_besides_the_run_s(release: str) -> None:
    names = {p.name for p in _command(release).params}
    own = names - {o.name for o in _options(release)}
    assert own <= RUN_OPTIONS, sorted(own - RUN_OPTIONS)


@pytest.mark.parametrize("release", SPECS)
def test_the_api_takes_every_option_with_the_field_s_default_and_no_other(release: str) -> None:
    keywords = inspect.signature(_load(SPECS[release][1])).parameters
    for o in _options(release):
        assert o.name in keywords, (release, o.name)
        expected = REQUIRED if o.required else o.default
        assert keywords[o.name].default == expected, (release, o.name)
    others = set(keywords) - {o.name for o in _options(release)}
    assert others <= API_RUN_KEYWORDS, sorted(others - API_RUN_KEYWORDS)


@pytest.mark.parametrize(("release", "option"), _cases(), ids=_ids(_cases()))
def test_every_option_declares_what_it_admits_or_says_why_not(release: str, option: DeclaredOption) -> None:
    assert option.help.strip(), (release, option.name)
    declared = option.rule() is not None
    assert declared != ((release, option.name) in ADMITS_ANY), (release, option.name)


def _outside(option: DeclaredOption) -> object:
    """A value the option's bounds or choices (or its type) do not admit."""
    if option.choices is not None:
        return "not-" + option.choices[0]
    if option.switch:
        return "no"
    step = 1 if option.integer else 0.5
    for sign, limit in option.limits:
        if sign in (">", "<"):
            return type(step)(limit)
        return type(step)(limit - step if sign == ">=" else limit + step)
    return math.nan


BOUNDED = [(r, o) for r, o in _cases() if o.rule() is not None]


def _defaults(model: Any) -> dict[str, Any]:
    return {n: f.default for n, f in model.model_fields.items() if not f.is_required()}


@pytest.mark.parametrize(("release", "option"), BOUNDED, ids=_ids(BOUNDED))
def test_a_value_outside_the_option_s_bounds_is_refused_in_one_line_naming_it(
    release: str, option: DeclaredOption
) -> None:
    spec = _load(SPECS[release][0])
    spec(**{**_defaults(spec), **VALID[release]})  # valid as it stands
    bad = _outside(option)
    with pytest.raises(InvalidParameterError) as caught:
        spec(**{**_defaults(spec), **VALID[release], option.name: bad})
    assert caught.value.parameters == (option.name,)
    why = f" ({option.why})" if option.why and option.limits else ""
    assert str(caught.value) == f"{option.name} must be {option.rule()}{why}, got {bad!r}"


def test_rules_say_the_numbers_they_admit() -> None:
    from urbandp.counts._options import CountsReleaseSpec

    by_name = {o.name: o for o in declared_options(CountsReleaseSpec)}
    assert by_name["epsilon"].rule() == "a finite number > 0"
    assert by_name["precision"].rule() == "an integer >= -9 and <= 15"
    assert by_name["budget_delta"].rule() == "a finite number >= 0 and < 1"
    assert by_name["threshold"].rule() == "a finite number"
    assert by_name["consistent"].rule() == "True or False"
    assert by_name["unit"].rule() == "one of event, card-day"


@pytest.mark.parametrize("release", SPECS)
def test_the_api_signature_types_every_option_as_its_field(release: str) -> None:
    """``help(ud.counts.release)`` shows each option with its type and default: the field's."""
    keywords = inspect.signature(_load(SPECS[release][1])).parameters
    for o in _options(release):
        assert keywords[o.name].annotation == o.type, (release, o.name)
        assert keywords[o.name].kind is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("release", SPECS)
def test_every_option_is_a_key_of_the_command_s_config_table(release: str) -> None:
    """``--config``'s table takes each option by its flag's name (``--id`` is ``id``)."""
    from urbandp._cli_config import config_keys

    keys = config_keys(_command(release))
    for o in _options(release):
        assert o.flag[2:].replace("-", "_") in keys, (release, o.name)


@pytest.mark.parametrize("release", SPECS)
def test_help_shows_every_option_with_its_default(release: str) -> None:
    from typer.testing import CliRunner

    from urbandp.cli import app

    result = CliRunner().invoke(app, [*SPECS[release][2].split(" "), "--help"], terminal_width=400)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    for o in _options(release):
        assert o.flag in text, (release, o.name)


def test_numpy_numbers_are_numbers() -> None:
    """A notebook's options often come out of numpy: ``np.int64(4)`` is an integer, ``np.float64(1.5)`` a number."""
    import numpy as np

    from urbandp.counts._options import CountsReleaseSpec

    defaults = _defaults(CountsReleaseSpec)
    spec = CountsReleaseSpec(
        **{**defaults, **VALID["counts release"], "max_events": np.int64(4), "epsilon": np.float64(1.5)}
    )
    assert spec.max_events == 4 and spec.epsilon == 1.5


def test_numbers_are_kept_as_python_numbers_however_large() -> None:
    """``top_k=10**400`` (no count is that large) is refused in one line; it once overflowed ``float()`` (exit 70), and ``np.float32`` epsilons reached
    the accountant's bisection, which never ended in float32; a whole float ``4.0`` for an integer is 4."""
    import numpy as np

    from urbandp.counts._options import CountsReleaseSpec
    from urbandp.survey._trajectory_release import TrajectoriesSpec

    defaults = _defaults(CountsReleaseSpec)
    base = {**defaults, **VALID["counts release"]}
    spec = CountsReleaseSpec(
        **{**base, "max_events": 4.0, "epsilon": np.float32(0.5), "top_k": 10**15, "top_k_epsilon": 1}
    )
    assert spec.max_events == 4 and type(spec.max_events) is int
    assert spec.epsilon == 0.5 and type(spec.epsilon) is float
    assert spec.top_k == 10**15 and type(spec.top_k_epsilon) is float
    with pytest.raises(
        InvalidParameterError, match=r"^top_k must be an integer >= 1, got an integer of 401 digits$"
    ):
        CountsReleaseSpec(**{**base, "top_k": 10**400, "top_k_epsilon": 1})
    with pytest.raises(
        InvalidParameterError, match=r"^budget_delta must be a finite number >= 0 and < 1, got "
    ):
        CountsReleaseSpec(**{**base, "budget_delta": 10**400})
    trips = {"lat": "lat", "lon": "lon", "trip": "trip", "max_step_metres": 100.0}
    with pytest.raises(InvalidParameterError) as caught:  # a required number given as None
        TrajectoriesSpec(**trips, epsilon=None)  # type: ignore[arg-type]
    assert str(caught.value) == "epsilon must be a finite number > 0, got None"


def test_an_integer_option_refuses_a_fraction_and_a_switch() -> None:
    from urbandp.counts._options import CountsReleaseSpec

    defaults = _defaults(CountsReleaseSpec)
    for bad in (1.5, True, "4"):
        with pytest.raises(InvalidParameterError, match=r"^max_events must be an integer >= 1, got"):
            CountsReleaseSpec(**{**defaults, **VALID["counts release"], "max_events": bad})


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--top-k", "3", "--top-k-epsilon", "-1"], "--top-k-epsilon must be a finite number > 0, got -1.0"),
        (["--unit", "rider"], "--unit must be one of event, card-day, got 'rider'"),
        (["--precision", "16"], "--precision must be an integer >= -9 and <= 15, got 16"),
    ],
)
def test_the_command_line_names_the_flag_of_a_value_out_of_bounds(
    flags: list[str], line: str, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from urbandp.cli import app

    events = tmp_path / "events.csv"
    events.write_text("mode,timestamp,tap,location\n")
    domain = tmp_path / "domain.json"
    domain.write_text('{"days": ["2024-01-01"]}')
    args = ["counts", "release", str(events), "--domain", str(domain), "--epsilon", "1"]
    result = CliRunner().invoke(app, [*args, *flags, "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == f"urbandp: error: {line}"


def test_a_negatable_switch_takes_its_off_form_and_errors_name_it_by_its_flag(tmp_path: Path) -> None:
    """``negatable=True`` gives ``--bbox-from-data-not-private/--no-...``; an error names the flag alone (the
    first build of the sensing flags printed ``--bbox-from-data-not-private/--no-bbox-from-data-not-private``)."""
    from typer.testing import CliRunner

    from urbandp.cli import app

    readings = tmp_path / "r.csv"
    readings.write_text("timestamp,lat,lon,pm25\n")
    args = ["sensing", "dp-map", str(readings), "--out", str(tmp_path / "o")]
    for off in ([], ["--no-bbox-from-data-not-private"]):
        result = CliRunner().invoke(app, [*args, *off])
        assert result.exit_code == 2, result.output
        assert result.stderr.strip() == (
            "urbandp: error: give a public --bbox (or --bbox-from-data-not-private, which is not DP)"
        )


# --- strict types for Python callers: a wrong type is refused naming the option, a reasonable spelling is taken --


def _counts(**given: Any) -> Any:
    from urbandp.counts._options import CountsReleaseSpec

    return CountsReleaseSpec(**{**VALID["counts release"], **given})


@pytest.mark.parametrize(
    ("given", "line"),
    [
        ({"consistent": "no"}, "consistent must be True or False, got 'no'"),
        ({"select_partitions": 1}, "select_partitions must be True or False, got 1"),
        ({"delta": "0.1"}, "delta must be a finite number, got '0.1'"),
        ({"epsilon": "4"}, "epsilon must be a finite number > 0, got '4'"),
        ({"epsilon": 10**400}, "epsilon must be a finite number > 0, got an integer of 401 digits"),
        ({"top_k_tap": 3}, "top_k_tap: 3 is not a value it takes"),
        ({"epsilonn": 1.0}, "epsilonn is not an option (did you mean epsilon?)"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_option(given: dict[str, Any], line: str) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        _counts(**given)
    assert str(caught.value) == line
    assert caught.value.parameters == tuple(given)


def test_the_api_refuses_an_unknown_keyword_naming_it_before_reading_data(tmp_path: Path) -> None:
    import urbandp as ud

    with pytest.raises(InvalidParameterError) as caught:
        ud.counts.release(tmp_path / "none.csv", epsilon_per_day=4, domain={"days": ["2024-01-01"]})
    assert str(caught.value) == "release() has no option epsilon_per_day (did you mean epsilon?)"
    with pytest.raises(InvalidParameterError) as caught:
        ud.survey.randomize(tmp_path / "none.csv", column="model", categoriess="a,b", epsilon=1)
    assert str(caught.value) == "randomize() has no option categoriess (did you mean categories?)"


def test_a_survey_number_too_large_for_a_float_is_refused_in_one_line(tmp_path: Path) -> None:
    import urbandp as ud

    with pytest.raises(InvalidParameterError) as caught:
        ud.survey.randomize(tmp_path / "none.csv", column="model", categories="a,b", epsilon=10**400)
    assert str(caught.value) == "epsilon must be a finite number > 0, got an integer of 401 digits"
    with pytest.raises(InvalidParameterError, match=r"^column: 3 is not a value it takes$"):
        ud.survey.randomize(tmp_path / "none.csv", column=3, categories="a,b", epsilon=1)


def test_a_list_is_taken_for_a_tuple_and_a_date_for_its_iso_text() -> None:
    from urbandp.sensing._options import DpMapOptions, PmMapOptions
    from urbandp.survey._points_release import PointsSpec

    points = PointsSpec(lat="lat", lon="lon", scale_metres=100.0, bbox=[44, -94, 46, -92])
    assert points.bbox == "44,-94,46,-92"
    assert points == PointsSpec(lat="lat", lon="lon", scale_metres=100.0, bbox="44,-94,46,-92")
    pm = PmMapOptions(
        bbox=[22.45, 88.30, 22.65, 88.47],
        start=dt.date(2024, 1, 15),
        end="2024-01-16",
    )
    assert pm.bbox == (22.45, 88.30, 22.65, 88.47) and pm.start == "2024-01-15"
    dp = DpMapOptions(bbox=(22.45, 88.30, 22.65, 88.47), utility_epsilons=[1, 2])
    assert dp.utility_epsilons == (1.0, 2.0)
    with pytest.raises(InvalidParameterError, match=r"^utility_epsilons: '1,2' is not a value it takes$"):
        DpMapOptions(bbox=(22.45, 88.30, 22.65, 88.47), utility_epsilons="1,2")


def test_help_of_an_api_function_shows_every_option_with_its_default() -> None:
    import pydoc

    import urbandp as ud

    text = pydoc.render_doc(ud.counts.release, renderer=pydoc.plaintext)
    for o in _options("counts release"):
        assert f"{o.name}: " in text, o.name
    assert "budget_delta: float = 1e-05" in text
    assert "max_events: int = 1" in text


def test_help_of_the_fleet_release_shows_every_option_with_the_default_the_code_applies() -> None:
    import urbandp as ud
    from urbandp.fleet._options import HatReleaseConfig
    from urbandp.fleet._options_flags import OPTION_NAMES, RecordOptions

    keywords = inspect.signature(ud.fleet.release).parameters
    for name in OPTION_NAMES:
        assert keywords[name].kind is inspect.Parameter.KEYWORD_ONLY, name
    assert keywords["speed_max"].default == HatReleaseConfig.model_fields["speed_max"].default
    assert keywords["resolution"].default == HatReleaseConfig.model_fields["resolution"].default
    assert keywords["speed_reject_above"].default == RecordOptions.model_fields["speed_reject_above"].default
    assert keywords["epsilon_per_day"].default is None and "session" in keywords


def test_the_api_s_keyword_types_are_generated_from_the_models() -> None:
    """``urbandp._option_types`` (the ``TypedDict`` each API function's ``**options`` is typed with, for type
    checkers and editors) is what ``python -m urbandp._option_types_gen`` writes from the models' fields: every
    option (or those a ``module:class:NAMES`` reference lists), its own or through the TypedDict it extends."""
    from urbandp import _option_types as option_types
    from urbandp import _option_types_gen as option_types_gen

    assert option_types_gen.main(["--check"]) == 0
    for name, reference in option_types_gen.MODELS.items():
        typed = getattr(option_types, name).__annotations__
        found, only = option_types_gen._load(reference)
        names = (
            [o.name for o in declared_options(found)] if isinstance(found, type) else [n for n, _ in found()]
        )
        wanted = [n for n in names if only is None or n in only]
        assert sorted(typed) == sorted(wanted) and len(typed) == len(wanted), name
    import urbandp as ud

    for typed_dict, function in [
        ("EstimateKeywords", ud.survey.estimate),
        ("OdEstimateKeywords", ud.survey.od_estimate),
    ]:
        keywords = set(inspect.signature(function).parameters) - {"data", "out", "overwrite"}
        assert set(getattr(option_types, typed_dict).__annotations__) == keywords
