"""Issue 12 part 3: cross-validation opt-in and reusing the fit, the grid as Parquet, `query` reading one window."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from urbandp.cli import app
from urbandp.errors import InputError
from urbandp.sensing import _gp as gp_module
from urbandp.sensing._grid import SquareGrid
from urbandp.sensing._interpolation import cross_validate, interpolate_windows
from urbandp.sensing._queries import read_grid_window
from urbandp.sensing._readings import read_readings

pytestmark = pytest.mark.system
runner = CliRunner()


def _run(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["sensing", *args])


@pytest.fixture(scope="module")
def readings_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "readings.csv"
    res = _run("synth", str(out), "--readings", "240", "--vehicles", "4", "--hours", "3", "--seed", "5")
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def interpolated(readings_csv: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("interp")
    res = _run("interpolate", str(readings_csv), "--out", str(out), "--cell-metres", "1000")
    assert res.exit_code == 0, res.output
    return out


def test_default_writes_parquet_one_row_group_per_window_and_no_cv(interpolated: Path) -> None:
    report = json.loads((interpolated / "report.json").read_text())
    assert "cross_validation" not in report  # opt-in now, as the plot
    assert not (interpolated / "grid.csv").exists() and not (interpolated / "map_mu_sigma2.png").exists()
    meta = pq.ParquetFile(interpolated / "grid.parquet").metadata
    cells = report["grid"]["cells"]
    windows = report["windows"]["windows_fitted"]
    assert windows == 3 and meta.num_rows == windows * cells and meta.num_row_groups == windows
    col = meta.schema.names.index("window")
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(col).statistics
        assert stats.has_min_max and stats.min == stats.max  # one window per row group: skippable by filter


def test_csv_on_request_holds_the_same_grid(readings_csv: Path, interpolated: Path, tmp_path: Path) -> None:
    res = _run(
        "interpolate",
        str(readings_csv),
        "--out",
        str(tmp_path),
        "--cell-metres",
        "1000",
        "--grid-format",
        "csv",
        "--plot",
    )
    assert res.exit_code == 0, res.output
    a = pl.read_parquet(interpolated / "grid.parquet")
    b = pl.read_csv(tmp_path / "grid.csv", schema_overrides={"window": pl.String})
    assert a.columns == b.columns == ["cell_id", "lat", "lon", "window", "mu", "sigma2"]
    assert a.select("cell_id", "window").equals(b.select("cell_id", "window"))
    np.testing.assert_allclose(a["mu"].to_numpy(), b["mu"].to_numpy(), rtol=1e-12)
    assert (tmp_path / "map_mu_sigma2.png").stat().st_size > 10_000
    bad = _run("interpolate", str(readings_csv), "--out", str(tmp_path / "x"), "--grid-format", "xlsx")
    assert bad.exit_code == 2 and "--grid-format must be one of parquet, csv" in bad.output


def test_query_reads_the_window_inside_the_rectangle_same_as_a_full_read(interpolated: Path) -> None:
    full = pl.read_parquet(interpolated / "grid.parquet")
    windows = full["window"].unique(maintain_order=True).to_list()
    lat0, lon0 = full["lat"].min(), full["lon"].min()
    rect = (lat0 + 0.05, lon0, lat0 - 0.001, lon0 + 0.04)  # diagonal vertices in either order
    w, ids, lat, lon, mu, s2 = read_grid_window(interpolated / "grid.parquet", windows[1], rect)
    assert (lat >= lat0 - 0.001).all() and (lat <= lat0 + 0.05).all() and (lon <= lon0 + 0.04).all()
    expected = full.filter(
        (pl.col("window") == windows[1])
        & pl.col("lat").is_between(lat0 - 0.001, lat0 + 0.05)
        & pl.col("lon").is_between(lon0, lon0 + 0.04)
    ).sort("cell_id")
    assert w == windows[1] and 0 < len(ids) < full.height // 3
    assert ids.tolist() == expected["cell_id"].to_list()
    np.testing.assert_array_equal(mu, expected["mu"].to_numpy())
    np.testing.assert_array_equal(s2, expected["sigma2"].to_numpy())
    assert read_grid_window(interpolated / "grid.parquet", None, rect)[0] == windows[0]
    with pytest.raises(InputError, match="not in"):
        read_grid_window(interpolated / "grid.parquet", "1999-01-01T00:00", rect)


def test_query_cli_on_parquet_and_csv_agree(interpolated: Path, tmp_path: Path) -> None:
    full = pl.read_parquet(interpolated / "grid.parquet")
    full.write_csv(tmp_path / "grid.csv")
    lat0, lon0 = full["lat"].min(), full["lon"].min()
    rect = f"{lat0},{lon0},{lat0 + 0.05},{lon0 + 0.05}"
    answers = []
    for path in (interpolated / "grid.parquet", tmp_path / "grid.csv"):
        res = _run(
            "query", str(path), "--rect", rect, "--alpha", "3", "--sigma2-min", "0", "--sigma2-max", "400"
        )
        assert res.exit_code == 0, res.output
        answers.append(json.loads(res.stdout.strip().splitlines()[0]))
    assert answers[0]["value"] == pytest.approx(answers[1]["value"], rel=1e-9)
    assert answers[0]["n_cells"] == answers[1]["n_cells"] > 3
    nowhere = _run(
        "query",
        str(interpolated / "grid.parquet"),
        "--rect",
        "1,1,2,2",
        "--sigma2-min",
        "0",
        "--sigma2-max",
        "1",
    )
    assert nowhere.exit_code == 2 and "--rect contains no cell centroid" in nowhere.output


def test_cv_reuses_the_fit_without_optimising(
    readings_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    readings, _ = read_readings(readings_csv, None, tmp_path / "q.csv", None)
    grid = SquareGrid.covering(readings.lat, readings.lon, 1000.0)
    results, _ = interpolate_windows(readings, grid)
    fitted = {r.window: r.hyperparameters for r in results}
    refit = cross_validate(readings, grid, folds=4)

    def no_optimisation(*_a: object, **_k: object) -> None:
        raise AssertionError("a fold was re-optimised although the window's hyper-parameters were given")

    monkeypatch.setattr(gp_module.ExactGP, "_optimise", no_optimisation)
    reused = cross_validate(readings, grid, folds=4, fitted=fitted)
    assert reused.held_out == refit.held_out == 240
    # both beat IDW on the smooth synthetic field; reuse is (slightly) optimistic, never wildly different
    assert reused.rmse_gp < reused.rmse_idw and refit.rmse_gp < refit.rmse_idw
    assert reused.rmse_gp == pytest.approx(refit.rmse_gp, rel=0.25)


def test_cli_cv_flag_and_refit(readings_csv: Path, tmp_path: Path) -> None:
    res = _run(
        "interpolate", str(readings_csv), "--out", str(tmp_path / "a"), "--cell-metres", "1000", "--cv"
    )
    assert res.exit_code == 0, res.output
    cv = json.loads((tmp_path / "a" / "report.json").read_text())["cross_validation"]
    assert cv["folds"] == 5 and cv["held_out"] == 240 and "reused" in cv["hyperparameters"]
    res = _run(
        "interpolate",
        str(readings_csv),
        "--out",
        str(tmp_path / "b"),
        "--cv-folds",
        "3",
        "--cv-refit",
        "--no-plot",
    )
    assert res.exit_code == 0, res.output
    cv = json.loads((tmp_path / "b" / "report.json").read_text())["cross_validation"]
    assert cv["folds"] == 3 and "re-optimised" in cv["hyperparameters"]


def test_mpc_server_reads_the_parquet_grid_like_the_csv(interpolated: Path, tmp_path: Path) -> None:
    from urbandp.mpc._server import ServerGrid

    full = pl.read_parquet(interpolated / "grid.parquet")
    full.write_csv(tmp_path / "grid.csv")
    second = full["window"].unique(maintain_order=True)[1]
    a = ServerGrid.read(interpolated / "grid.parquet", second)
    b = ServerGrid.read(tmp_path / "grid.csv", second)
    assert a.window == b.window == second and len(a.cell_id) == full.height // 3
    np.testing.assert_array_equal(a.cell_id, b.cell_id)
    np.testing.assert_allclose(a.sigma2, b.sigma2, rtol=1e-12)
