"""A query's DP squared error comes with its scale (the noise's sd and a 95% interval), never a bare number; and
`sensing query` and `mpc serve` take the same default --sigma2-min."""

from __future__ import annotations

import inspect
import json
import math
import warnings
from pathlib import Path

import pytest
from urbandp_process import run_urbandp

import urbandp as ud
from urbandp.sensing._options import QueryOptions
from urbandp.sensing._queries import describe_error2, error2_interval
from urbandp.sensing._synth import write_synth_readings

BBOX = (22.49, 88.32, 22.60, 88.44)


def test_interval_of_a_noisy_squared_error() -> None:
    # Laplace scale 10: sd sqrt(2) x 10; the 95% half-width is 10 ln 20 = 29.957...
    s = error2_interval(0.0, 10.0, 0.0, 100.0)
    assert s["error2_noise_sd"] == pytest.approx(14.142135623730951, rel=1e-15)
    assert s["error2_interval95"] == [0.0, pytest.approx(29.957322735539908, rel=1e-15)]
    assert s["error2_range"] == [0.0, 100.0] and s["error2_informative"] is True
    line = describe_error2(0.0, s)
    assert line == (
        "DP squared error 0 (noise sd 14.14; the true squared error lies in [0, 29.96] with 95% confidence)"
    )
    # noise wider than the whole public range: said in words, not as a precise-looking number
    wide = error2_interval(40.0, 100.0, 0.0, 80.0)
    assert wide["error2_interval95"] == [0.0, 80.0] and wide["error2_informative"] is False
    assert "says nothing of the error" in describe_error2(40.0, wide)


def test_query_without_sigma2_min_states_the_error_scale(tmp_path: Path) -> None:
    readings = write_synth_readings(tmp_path / "r.csv", 300, 4, 2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ud.sensing.interpolate(readings, out=tmp_path / "interp", cell_metres=1000.0, bbox=BBOX)
    res = run_urbandp(
        "sensing", "query", str(tmp_path / "interp" / "grid.parquet"), "--rect", ",".join(map(str, BBOX)),
        "--alpha", "1", "--sigma2-max", "800", "--out", str(tmp_path / "a.json"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert "DP squared error" in res.stderr and "noise sd" in res.stderr and "95% confidence" in res.stderr
    answer = json.loads((tmp_path / "a.json").read_text())
    n = answer["cells_selected"]
    # average: range [0, 800 / n], sensitivity 800 / n at epsilon 1 -> Laplace scale 800 / n
    assert answer["error2_range"] == [0.0, pytest.approx(800.0 / n, rel=1e-12)]
    assert answer["error2_noise_sd"] == pytest.approx(math.sqrt(2) * 800.0 / n, rel=1e-9)
    low, high = answer["error2_interval95"]
    assert 0.0 <= low <= answer["noisy_error2"] <= high <= 800.0 / n


def test_sensing_query_and_mpc_serve_share_the_sigma2_min_default() -> None:
    from urbandp.mpc._cli import serve

    default = inspect.signature(serve).parameters["sigma2_min"].default.default  # typer.Option's default
    assert default == QueryOptions.model_fields["sigma2_min"].default == 0.0
