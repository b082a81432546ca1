"""The sensing planner: public figures -> the readings a cell gets and whether its DP mean is informative."""

from __future__ import annotations

import math

import pytest
from urbandp_process import assert_refused, run_urbandp

from urbandp.errors import InputError
from urbandp.sensing._options import PlanOptions, parse_windows
from urbandp.sensing._planner import plan_sensing, plan_text, window_option

KOLKATA = (22.45, 88.30, 22.65, 88.47)  # 414 cells of 1 km


def test_cell_figures_follow_the_release_noise() -> None:
    rows, best = plan_sensing(PlanOptions(
        bbox=KOLKATA, readings_per_day=414.0, share_visited=1.0, epsilon=4.0,
        cell_metres=(1000.0,), windows=(1.0, 30.0),
    ))  # fmt: skip
    day, month = rows
    assert day.cells == 414 and day.readings_per_cell == pytest.approx(1.0, rel=1e-12)
    # count scale 2/4, sum scale 250/4 (Laplace sd sqrt(2) b): (2 x 62.5^2 + (50 - 125)^2 x 2 x 0.5^2) / n^2
    assert day.privacy_noise_sd == pytest.approx(math.sqrt(7812.5 + 2812.5), rel=1e-9)
    assert month.privacy_noise_sd == pytest.approx(math.sqrt(10625.0) / 30.0, rel=1e-9)
    assert month.sampling_sd == pytest.approx(25.0 / math.sqrt(30.0), rel=1e-12)
    assert not day.informative and month.informative and best == month


def test_kolkata_autumn_season_informative_daily_not() -> None:
    """About 295 readings a day over 108 of the 414 cells (autumn 2023): as measured, the daily map at epsilon 4
    is not informative and the season map is."""
    rows, best = plan_sensing(PlanOptions(
        bbox=KOLKATA, readings_per_day=13843 / 47, share_visited=108 / 414, epsilon=4.0,
        cell_metres=(1000.0,), windows=(1.0, 47.0),
    ))  # fmt: skip
    assert [r.informative for r in rows] == [False, True] and best is rows[1]
    assert window_option(47.0) == "window_minutes=67680" and window_option(7.0) == 'window="week"'
    # the library's recommendation names pm_map's parameters; the command shows them as flags (below)
    text = plan_text(rows, best, 4.0)
    assert text.splitlines()[-1].startswith("plan: window_minutes=67680 cell_metres=1000 (the shortest")
    assert "--" not in text and set(text.parameters) == {"window", "window_minutes", "cell_metres"}


def test_bad_figures_are_refused() -> None:
    with pytest.raises(InputError, match="share_visited"):
        PlanOptions(bbox=KOLKATA, readings_per_day=10, share_visited=0.0, epsilon=1)
    with pytest.raises(InputError, match="windows"):
        parse_windows("hour,fortnight")


def test_plan_command() -> None:
    res = run_urbandp(
        "sensing", "plan", "--bbox", ",".join(map(str, KOLKATA)), "--readings-per-day", "295",
        "--share-visited", "0.26", "--epsilon", "4",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.splitlines()[-1].startswith("plan: --window week --cell-metres 1000 ")
    bad = run_urbandp(
        "sensing", "plan", "--bbox", "1,2,3,4", "--readings-per-day", "5", "--share-visited", "2"
    )
    assert_refused(bad, "--share-visited")


def test_plan_flags_are_the_fields_of_plan_options() -> None:
    import typer

    from urbandp._release_options import declared_options
    from urbandp.sensing._cli import app

    params = {p.name: p for p in typer.main.get_command(app).commands["plan"].params}  # type: ignore[attr-defined]
    declared = declared_options(PlanOptions)
    assert list(params) == [o.name for o in declared]
    for o in declared:
        assert o.flag in params[o.name].opts and params[o.name].help == o.help, o.name
        assert params[o.name].default == (None if o.required else o.command_line_default), o.name


@pytest.mark.parametrize(
    ("given", "line"),
    [
        ({"windows": (1.0, 0.0)}, "windows must be numbers > 0, got '1,0'"),
        ({"cell_metres": ()}, "cell_metres must be numbers > 0, got ''"),
        ({"readings_per_day": math.inf}, "readings_per_day must be a finite number > 0, got inf"),
        ({"level": 300.0}, "level must be in [0, clip], got 300.0"),
    ],
)
def test_bad_python_figures_are_refused_naming_them(given: dict[str, object], line: str) -> None:
    with pytest.raises(InputError) as caught:
        PlanOptions(**{"bbox": KOLKATA, "readings_per_day": 10.0, "share_visited": 0.5, **given})  # type: ignore[arg-type]
    assert str(caught.value) == line and caught.value.parameters[0] == next(iter(given))


def test_plan_command_names_the_flag_of_a_bad_figure() -> None:
    res = run_urbandp(
        "sensing", "plan", "--bbox", "1,2,3,4", "--readings-per-day", "5", "--share-visited", "0.5",
        "--cell-metres", "500,-1",
    )  # fmt: skip
    assert_refused(res, "--cell-metres must be numbers > 0, got '500,-1'", others="none")
