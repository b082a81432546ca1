"""Issue 31, survey wing: a library error names the parameter as a Python caller types it (``keep_probability``,
``survey_date``; never a ``--flag``) and lists it in ``err.parameters``; renamed by :func:`urbandp.errors.flag_of`
it is the command line's text, byte for byte (tests/system/survey/test_survey_cli.py runs the commands)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import urbandp as ud
from urbandp.errors import InputError, InvalidParameterError, flag_of

VEHICLES = pl.DataFrame({"household": ["1", "2", "3"], "fuel": ["gas"] * 3, "model": ["A", "B", "C"]})
TRIPS = pl.DataFrame({"from": ["1", "2"], "to": ["2", "1"]})
HOMES = pl.DataFrame({"lat": [44.95, 44.96], "lon": [-93.25, -93.26]})
TRAJECTORY = pl.DataFrame(
    {"trip": ["1"] * 4, "seq": [0, 1, 2, 3], "lat": [44.950, 44.951, 44.952, 44.953], "lon": [-93.25] * 4}
)


def _rr(**kw: Any) -> Callable[[], object]:
    return lambda: ud.survey.randomize(VEHICLES, column="model", **kw)


def _od(**kw: Any) -> Callable[[], object]:
    return lambda: ud.survey.od_randomize(TRIPS, origin="from", dest="to", **kw)


def _points(**kw: Any) -> Callable[[], object]:
    return lambda: ud.survey.perturb_points(HOMES, lat="lat", lon="lon", **kw)


def _ssd(**kw: Any) -> Callable[[], object]:
    options: dict[str, Any] = {"epsilon": 1.0, "max_step_metres": 500.0, **kw}
    return lambda: ud.survey.perturb_trajectories(TRAJECTORY, lat="lat", lon="lon", trip="trip", **options)


def _session_with_dataset(tmp: Path) -> ud.Session:
    return ud.Session(store=str(tmp / "budget.sqlite"), dataset="travel")


AB = {"categories": "A,B"}
BIG = "is above 100 per {}: the noise would protect nobody; use a smaller epsilon"
# (call, the library's message, its parameters); the command line shows the message with each parameter renamed
# by flag_of (``keep_probability`` -> ``--keep-probability``): CLI_TEXT
CASES: dict[str, tuple[Callable[[], object], str, tuple[str, ...]]] = {
    "rr report-replacement p": (
        _rr(**AB, method="report-replacement"),
        "method report-replacement needs p in [0, 1)",
        ("method", "p"),
    ),
    "rr theta needs 2": (
        _rr(categories="A,B,C", theta=0.5),
        "theta (binary RR) needs exactly 2 declared categories and no within",
        ("theta", "within"),
    ),
    "rr theta range": (
        _rr(**AB, theta=1.5),
        "theta must be a finite number > 0 and < 1, got 1.5",
        ("theta",),
    ),
    "rr epsilon > 0": (
        _rr(**AB, epsilon=-1.0),
        "epsilon must be a finite number > 0, got -1.0",
        ("epsilon",),
    ),
    "rr epsilon sane": (_rr(**AB, epsilon=1000.0), "epsilon 1000 " + BIG.format("respondent"), ("epsilon",)),
    "rr method": (
        _rr(**AB, epsilon=1.0, method="xx"),
        "method must be one of krr, report-replacement, got 'xx'",
        ("method",),
    ),
    "rr epsilon or theta": (_rr(**AB), "give exactly one of epsilon or theta", ("epsilon", "theta")),
    "estimate epsilon or theta": (
        lambda: ud.survey.estimate(VEHICLES, column="model", **AB),
        "give exactly one of epsilon or theta",
        ("epsilon", "theta"),
    ),
    "rr categories": (
        _rr(epsilon=1.0),
        "give exactly one of categories or categories_file",
        ("categories", "categories_file"),
    ),
    "rr within": (
        _rr(**AB, within="fuel", epsilon=1.0),
        "within needs categories_file with lines 'group,category'",
        ("within", "categories_file"),
    ),
    "rr sampler": (
        _rr(**AB, epsilon=1.0, sampler="zz"),
        "sampler must be one of opendp, os, got 'zz'",
        ("sampler",),
    ),
    "rr budget_epsilon": (
        _rr(**AB, epsilon=1.0, budget_epsilon=-2.0),
        "budget_epsilon must be a finite number > 0, got -2.0",
        ("budget_epsilon",),
    ),
    "od blocks": (
        _od(keep_probability=0.5),
        "give exactly one of blocks_file or blocks",
        ("blocks_file", "blocks"),
    ),
    "od keep_probability or epsilon": (
        _od(blocks=3),
        "give exactly one of keep_probability or epsilon",
        ("keep_probability", "epsilon"),
    ),
    "od keep_probability range": (
        _od(blocks=3, keep_probability=1.5),
        "keep_probability must be a finite number >= 0 and < 1, got 1.5",
        ("keep_probability",),
    ),
    "od epsilon > 0": (
        _od(blocks=3, epsilon=-3.0),
        "epsilon must be a finite number > 0, got -3.0",
        ("epsilon",),
    ),
    "od epsilon sane": (_od(blocks=3, epsilon=1000.0), "epsilon 1000 " + BIG.format("trip"), ("epsilon",)),
    "od method": (
        _od(blocks=3, keep_probability=0.5, method="zz"),
        "method must be one of rr, histogram, histogram-joint, got 'zz'",
        ("method",),
    ),
    "points bbox": (
        _points(epsilon_per_metre=0.01, bbox="1,2,3"),
        "bbox: bounding box needs four numbers: min_lat,min_lon,max_lat,max_lon",
        ("bbox",),
    ),
    "points one mechanism": (
        _points(),
        "give exactly one of epsilon_per_metre or scale_metres",
        ("epsilon_per_metre", "scale_metres"),
    ),
    "points epsilon_per_metre": (
        _points(epsilon_per_metre=-1.0),
        "epsilon_per_metre must be a finite number > 0, got -1.0",
        ("epsilon_per_metre",),
    ),
    "points scale_metres": (
        _points(scale_metres=0.0),
        "scale_metres must be a finite number > 0, got 0.0",
        ("scale_metres",),
    ),
    "points budget_metres": (
        _points(scale_metres=10.0, budget_metres=0.0),
        "budget_metres must be a finite number > 0, got 0.0",
        ("budget_metres",),
    ),
    "points epsilon sane": (  # "epsilon" is a word here (the API has no epsilon for points): not renamed
        _points(epsilon_per_metre=1.0),
        "epsilon per metre x budget_metres (1000 m) = 1000 " + BIG.format("respondent"),
        ("budget_metres",),
    ),
    "ssd epsilon > 0": (_ssd(epsilon=-1.0), "epsilon must be a finite number > 0, got -1.0", ("epsilon",)),
    "ssd max_step_metres": (
        _ssd(max_step_metres=0.0),
        "max_step_metres must be a finite number > 0, got 0.0",
        ("max_step_metres",),
    ),
    "ssd work bound": (
        _ssd(epsilon=1e-5),
        "epsilon 1e-05 makes the SSD draws practically uniform (no information left) and needs up to "
        "240,000,200 Laplace draws per point (limit 25,000); use epsilon 0.097 or more",
        ("epsilon",),
    ),
    "ssd every": (_ssd(every=0), "every must be an integer >= 1, got 0", ("every",)),
    "ssd clash": (  # perturb_trajectories has no id_column: the advice names only keep_columns
        _ssd(keep_columns="lat"),
        "lat: a column cannot be both perturbed and copied through unchanged (remove it from keep_columns)",
        ("keep_columns",),
    ),
    "rr clash": (
        _rr(**AB, epsilon=1.0, keep_columns="model"),
        "model: a column cannot be both perturbed and copied through unchanged (remove it from "
        "id_column/keep_columns)",
        ("id_column", "keep_columns"),
    ),
}

# What ``urbandp survey ...`` printed for these errors before issue 31 and still prints (byte-identical), where the
# command's flag is flag_of(parameter); ``id_column`` is ``--id`` (the CLI maps it, see the system test).
CLI_TEXT = {
    "rr report-replacement p": "--method report-replacement needs --p in [0, 1)",
    "rr theta needs 2": "--theta (binary RR) needs exactly 2 declared categories and no --within",
    "rr epsilon sane": "--epsilon 1000 is above 100 per respondent: the noise would protect nobody; "
    "use a smaller --epsilon",
    "rr within": "--within needs --categories-file with lines 'group,category'",
    "od keep_probability or epsilon": "give exactly one of --keep-probability or --epsilon",
    "points epsilon sane": "epsilon per metre x --budget-metres (1000 m) = 1000 is above 100 per respondent: "
    "the noise would protect nobody; use a smaller epsilon",
    "ssd work bound": "--epsilon 1e-05 makes the SSD draws practically uniform (no information left) and needs "
    "up to 240,000,200 Laplace draws per point (limit 25,000); use --epsilon 0.097 or more",
    "rr budget_epsilon": "--budget-epsilon must be a finite number > 0, got -2.0",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_library_error_names_the_parameter(case: str) -> None:
    call, message, parameters = CASES[case]
    with pytest.raises(InvalidParameterError) as caught:
        call()
    assert str(caught.value) == message and "--" not in message
    assert caught.value.parameters == parameters
    if case in CLI_TEXT:  # renamed to flags, the command line's text
        assert caught.value.naming(flag_of) == CLI_TEXT[case]


def test_a_dataset_needs_a_valid_survey_date(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        ud.survey.randomize(
            VEHICLES, column="model", **AB, epsilon=1.0, session=_session_with_dataset(tmp_path)
        )
    text = "dataset needs survey_date YYYY-MM-DD (the day the answers were collected)"
    assert str(caught.value) == text and caught.value.parameters == ("dataset", "survey_date")
    assert (
        caught.value.naming(flag_of)
        == "--dataset needs --survey-date YYYY-MM-DD (the day the answers were collected)"
    )
    assert not (tmp_path / "budget.sqlite").exists()  # refused before the store is opened
    with pytest.raises(InvalidParameterError) as caught:
        ud.survey.randomize(
            VEHICLES,
            column="model",
            **AB,
            epsilon=1.0,
            survey_date="5/1/21",
            session=_session_with_dataset(tmp_path),
        )
    assert str(caught.value) == "survey_date must be a date YYYY-MM-DD, got '5/1/21'"
    assert caught.value.parameters == ("survey_date",)


def test_no_usable_trajectory_names_max_step_metres_not_every() -> None:
    """ "every step" is English here: only ``max_step_metres`` is renamed (``--every`` is another option)."""
    with pytest.raises(InputError) as caught:
        _ssd(max_step_metres=1.0)()
    assert str(caught.value) == (
        "no trajectory of data is usable: each needs >= 3 points and every step <= max_step_metres"
    )
    assert caught.value.parameters == ("max_step_metres",)
    assert caught.value.naming(flag_of).endswith("every step <= --max-step-metres")
