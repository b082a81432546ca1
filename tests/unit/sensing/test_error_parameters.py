"""Library errors of the sensing wing name the parameter as a Python caller names it (issue 31): the message has
no ``--flag``, ``err.parameters`` lists the keywords it names, and the command line's text (each parameter
renamed to its flag, :meth:`urbandp.errors.InputError.naming` with :func:`urbandp.errors.flag_of`) is the line
the commands printed before, byte for byte."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

import urbandp as ud
from urbandp.cli import app
from urbandp.errors import InputDataError, InputError, InvalidParameterError, flag_of
from urbandp.sensing._dp_map_mechanism import plan_dp_map
from urbandp.sensing._options import (
    DpMapOptions,
    InterpolateOptions,
    PmMapOptions,
    QueryOptions,
    check_box,
    parse_numbers,
    parse_utility_epsilons,
    parse_window,
    resolve_unit,
)
from urbandp.sensing._synth import write_synth_readings

RUN = CliRunner()
BOX = (22.49, 88.32, 22.60, 88.44)
DAY = {"start": "2024-01-15", "end": "2024-01-15"}
IN = Path("r.csv")


def _dp(**kw: Any) -> DpMapOptions:
    return DpMapOptions(**{"bbox": BOX, **DAY, **kw})


def _pm(**kw: Any) -> PmMapOptions:
    return PmMapOptions(**{"bbox": BOX, **DAY, **kw})


def _q(**kw: Any) -> QueryOptions:
    return QueryOptions(**{"rect": BOX, "sigma2_min": 0.0, "sigma2_max": 800.0, **kw})


def _in(**kw: Any) -> InterpolateOptions:
    return InterpolateOptions(**{"input_path": IN, "out": Path("o"), **kw})


# (call, the library's message, its parameters, the line the command line printed before issue 31; the bounds
# declared on the options' fields print the generic check's words: window_minutes, min_readings, cell_metres, rho)
CASES: list[tuple[Callable[[], object], str, tuple[str, ...], str]] = [
    (
        lambda: _dp(window_minutes=0),
        "window_minutes must be an integer >= 1, got 0",
        ("window_minutes",),
        "--window-minutes must be an integer >= 1, got 0",
    ),
    (
        lambda: _dp(kernel="foo"),
        "kernel must be one of matern32, matern52, rbf, got 'foo'",
        ("kernel",),
        "--kernel must be one of matern32, matern52, rbf, got 'foo'",
    ),
    (
        lambda: _dp(bbox=None),
        "give a public bbox (or bbox_from_data_not_private, which is not DP)",
        ("bbox", "bbox_from_data_not_private"),
        "give a public --bbox (or --bbox-from-data-not-private, which is not DP)",
    ),
    (
        lambda: _dp(min_readings=1),
        "min_readings must be an integer >= 2, got 1",
        ("min_readings",),
        "--min-readings must be an integer >= 2, got 1",
    ),
    (
        lambda: _dp(dataset="d", start=None, end=None),
        "dataset: without start/end and a public bbox the release is NOT differentially private (its window "
        "or box is read from the readings); it cannot be charged to a budget as DP spend",
        ("dataset", "start", "end", "bbox"),
        "--dataset: without --start/--end and a public --bbox the release is NOT differentially private (its "
        "window or box is read from the readings); it cannot be charged to a budget as DP spend",
    ),
    (
        lambda: _dp(end=None),
        "give both start and end (a public time window), or neither",
        ("start", "end"),
        "give both --start and --end (a public time window), or neither",
    ),
    (
        lambda: _dp(upper=0.5),
        "upper must be finite and >= sensitivity, got 0.5",
        ("upper", "sensitivity"),
        "--upper must be finite and >= --sensitivity, got 0.5",
    ),
    (
        lambda: _dp(utility_epsilons=(1.0, -2.0)),
        "utility_epsilons must all be positive finite numbers",
        ("utility_epsilons",),
        "--utility-epsilons must all be positive finite numbers",
    ),
    (
        lambda: _pm(max_readings_per_vehicle_window=0),
        "max_readings_per_vehicle_window must be an integer >= 1, got 0",
        ("max_readings_per_vehicle_window",),
        "--max-readings-per-vehicle-window must be an integer >= 1, got 0",
    ),
    (
        lambda: _pm(cell_metres=-1.0),
        "cell_metres must be a finite number > 0, got -1.0",
        ("cell_metres",),
        "--cell-metres must be a finite number > 0, got -1.0",
    ),
    (
        lambda: _q(sigma2_max=None),
        "give public bounds sigma2_min and sigma2_max with 0 <= min < max",
        ("sigma2_min", "sigma2_max"),
        "give public bounds --sigma2-min and --sigma2-max with 0 <= min < max",
    ),
    (
        lambda: _q(rho=0.0),
        "rho must be a finite number with 0.001 <= |rho| <= 1000 (the LogSumExp divides by it: a smaller one "
        "overflows the answer), got 0.0",
        ("rho",),
        "--rho must be a finite number with 0.001 <= |--rho| <= 1000 (the LogSumExp divides by it: a smaller one "
        "overflows the answer), got 0.0",
    ),
    (
        lambda: _q(type="range", theta=1.0),
        "type range needs theta2 > theta",
        ("type", "theta2", "theta"),
        "--type range needs --theta2 > --theta",
    ),
    (
        lambda: _q(select=BOX, cells=Path("c.txt")),
        "give at most one of select and cells",
        ("select", "cells"),
        "give at most one of --select and --cells",
    ),
    (
        lambda: _in(cv_folds=1),
        "cv_folds must be 0 (off) or at least 2, got 1",
        ("cv_folds",),
        "--cv-folds must be 0 (off) or at least 2, got 1",
    ),
    (
        lambda: _in(inducing=1),
        "inducing must be an integer >= 2, got 1",
        ("inducing",),
        "--inducing must be an integer >= 2, got 1",
    ),
    (
        lambda: _in(grid_format="x"),
        "grid_format must be one of parquet, csv, got 'x'",
        ("grid_format",),
        "--grid-format must be one of parquet, csv, got 'x'",
    ),
    (
        lambda: parse_utility_epsilons("1,,2"),
        "utility_epsilons must be comma-separated numbers, got '1,,2'",
        ("utility_epsilons",),
        "--utility-epsilons must be comma-separated numbers, got '1,,2'",
    ),
    (
        lambda: parse_window("2030-01-02", "2030-01-01"),
        "end (2030-01-01) must not be before start (2030-01-02)",
        ("start", "end"),
        "--end (2030-01-01) must not be before --start (2030-01-02)",
    ),
    (
        lambda: parse_window("2030-01-02", "nope"),
        "end must be an ISO date or date-time like 2023-04-25, got 'nope'",
        ("end",),
        "--end must be an ISO date or date-time like 2023-04-25, got 'nope'",
    ),
    (
        lambda: check_box((2, 2, 1, 1)),
        "bbox must be lat_min,lon_min,lat_max,lon_max with min < max",
        ("bbox",),
        "--bbox must be lat_min,lon_min,lat_max,lon_max with min < max",
    ),
    (
        lambda: parse_numbers("a,b,c,d", 4, "rect"),
        "rect needs 4 comma-separated numbers, got 'a,b,c,d'",
        ("rect",),
        "--rect needs 4 comma-separated numbers, got 'a,b,c,d'",
    ),
    (
        lambda: resolve_unit(_pm(unit="vehicle-window"), IN, ["lat", "lon", "time", "value"]),
        "unit vehicle-window needs vehicle ids: r.csv has no 'vehicle' column; name one with vehicle_column, "
        "or use unit reading",
        ("unit", "vehicle_column"),
        "--unit vehicle-window needs vehicle ids: r.csv has no 'vehicle' column; name one with "
        "--vehicle-column, or use --unit reading",
    ),
    (  # dp_map_mechanism
        lambda: plan_dp_map(10**6, 10**4, 1.0),
        "1000000 windows x 10000 cells need about 3.16e+10 noise draws (limit 2e+07); use a shorter start/end "
        "window, larger cell_metres or a larger epsilon",
        ("start", "end", "cell_metres", "epsilon"),
        "1000000 windows x 10000 cells need about 3.16e+10 noise draws (limit 2e+07); use a shorter "
        "--start/--end window, larger --cell-metres or a larger --epsilon",
    ),
]


@pytest.mark.parametrize(("call", "message", "parameters", "cli"), CASES, ids=["-".join(c[2]) for c in CASES])
def test_the_library_names_the_parameter_and_the_cli_line_is_unchanged(
    call: Callable[[], object], message: str, parameters: tuple[str, ...], cli: str
) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        call()
    err = caught.value
    assert str(err) == message and "--" not in str(err)
    assert err.parameters == parameters
    assert err.naming(flag_of) == cli


def test_an_english_word_is_not_renamed_into_a_flag() -> None:
    """Rephrased where the parameter was also a plain word of the message: one ``sensitivity``, one ``epsilon``."""
    with pytest.raises(InvalidParameterError) as caught:
        _dp(sensitivity=1e-9)
    assert (
        caught.value.naming(flag_of)
        == "--sensitivity must be a finite number >= 1e-06 (noise is drawn on a 2^-40 lattice, so a smaller one is rounded away), got 1e-09"
    )
    with pytest.raises(InvalidParameterError) as caught:
        plan_dp_map(1, 10, 1e-4)
    assert caught.value.parameters == ("epsilon",)
    assert caught.value.naming(flag_of) == (
        "--epsilon 0.0001 needs a bounded Laplace scale of at least 1e+04 on [0, 1]: at most one draw in 2e+04 "
        "lands in the domain and the output is practically uniform noise (no information); use a larger --epsilon"
    )


def test_synth_names_its_parameters(tmp_path: Path) -> None:
    with pytest.raises(
        InvalidParameterError, match=r"^need readings >= 2, vehicles >= 1 and hours >= 1$"
    ) as c:
        write_synth_readings(tmp_path / "r.csv", 1)
    assert c.value.parameters == ("readings", "vehicles", "hours")
    with pytest.raises(InvalidParameterError, match=r"^seed must be >= 0, got -1$") as c:
        write_synth_readings(tmp_path / "r.csv", 10, seed=-1)
    assert c.value.naming(flag_of) == "--seed must be >= 0, got -1"
    res = RUN.invoke(app, ["sensing", "synth", str(tmp_path / "s.csv"), "--hours", "9000"])
    assert res.exit_code == 2
    assert res.stderr.strip() == "urbandp: error: need --readings <= 10000000 and --hours <= 8784 (one year)"


@pytest.fixture(scope="module")
def readings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synth_readings(tmp_path_factory.mktemp("params") / "r.csv", 300)


def _refusal(call: Callable[[], object]) -> InputError:
    with pytest.raises(InputError) as caught:
        call()
    return caught.value


def test_the_releases_name_the_parameters_from_python(readings: Path, tmp_path: Path) -> None:
    """dp_map_release, pm_map_release, interpolate_tool and query_release, through the public API."""
    later = {"bbox": BOX, "start": "2030-01-01", "end": "2030-01-02"}
    err = _refusal(lambda: ud.sensing.dp_map(readings, **later))
    assert isinstance(err, InputDataError) and err.parameters == ("start", "end")
    assert str(err) == (
        "no usable reading inside start 2030-01-01 end 2030-01-02 (300 usable readings lie outside it)"
    )
    err = _refusal(lambda: ud.sensing.dp_map(readings, bbox=BOX, **DAY, cell_metres=1.0))
    assert str(err).endswith("cells is too large; use a larger cell_metres") and err.parameters == (
        "cell_metres",
    )
    err = _refusal(lambda: ud.sensing.dp_map(readings, bbox=BOX, **DAY, epsilon=1e-4))
    assert str(err).startswith("epsilon 0.0001 needs a bounded Laplace scale") and err.parameters == (
        "epsilon",
    )
    err = _refusal(lambda: ud.sensing.dp_map(readings, bbox=BOX, **DAY, utility_epsilons=(1e-4,)))
    assert str(err).startswith("utility_epsilons: epsilon 0.0001 needs") and err.parameters == (
        "utility_epsilons",
    )
    err = _refusal(lambda: ud.sensing.pm_map(readings, **later))
    assert str(err) == "no usable reading inside start 2030-01-01 end 2030-01-02"
    assert err.parameters == ("start", "end")
    err = _refusal(
        lambda: ud.sensing.pm_map(readings, bbox=BOX, start="2024-01-01", end="2025-01-01", window_minutes=1)
    )
    assert str(err).endswith(
        "is too many cells to noise; use larger cell_metres or window_minutes, or a shorter start/end"
    )
    assert err.parameters == ("cell_metres", "window_minutes", "start", "end")
    err = _refusal(lambda: ud.sensing.interpolate(readings, out=tmp_path / "i", cell_metres=1.0))
    assert str(err).endswith("cells is too large; use a larger cell_metres") and err.parameters == (
        "cell_metres",
    )
    grid = pl.DataFrame(
        {
            "cell_id": [0],
            "lat": [22.5],
            "lon": [88.4],
            "window": ["2024-01-15T08:00"],
            "mu": [1.0],
            "sigma2": [1.0],
        }
    )
    err = _refusal(
        lambda: ud.sensing.query(grid, rect=(0.0, 0.0, 0.001, 0.001), sigma2_min=0.0, sigma2_max=800.0)
    )
    assert isinstance(err, InputDataError) and str(err) == "rect contains no cell centroid"
    assert err.parameters == ("rect",)


def test_the_commands_name_the_flag_or_the_config_key(readings: Path, tmp_path: Path) -> None:
    """The same errors on the command line: the flag, or the key of the --config file the value came from."""
    box = ",".join(map(str, BOX))
    pm = ["sensing", "pm-map", str(readings), "--out", str(tmp_path / "p"), "--bbox", box]
    res = RUN.invoke(app, [*pm, "--start", "2030-01-01", "--end", "2030-01-02"])
    assert res.exit_code == 2
    assert (
        res.stderr.strip() == "urbandp: error: no usable reading inside --start 2030-01-01 --end 2030-01-02"
    )
    config = tmp_path / "c.toml"
    config.write_text('[sensing.pm-map]\nsmoother = "x"\n')
    res = RUN.invoke(app, [*pm, "--start", "2024-01-15", "--end", "2024-01-15", "--config", str(config)])
    assert res.stderr.strip() == (
        f"urbandp: error: smoother in {config} [sensing.pm-map] must be one of gp, idw, none, got 'x'"
    )
    query = ["sensing", "query", str(tmp_path / "g.csv"), "--rect", box, "--sigma2-min", "0"]
    pl.DataFrame(
        {"cell_id": [0], "lat": [22.5], "lon": [88.4], "window": ["w"], "mu": [1.0], "sigma2": [1.0]}
    ).write_csv(tmp_path / "g.csv")
    res = RUN.invoke(app, [*query, "--sigma2-max", "800", "--type", "count"])
    assert res.exit_code == 2 and res.stderr.strip() == "urbandp: error: --type count needs --theta"
    res = RUN.invoke(app, [*query, "--sigma2-max", "800", "--select", "1,2"])
    assert res.stderr.strip() == "urbandp: error: --select needs 4 comma-separated numbers, got '1,2'"
