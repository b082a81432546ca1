"""`sensing interpolate` on extreme readings writes no inf or nan (issue 30: models.csv held value_sd inf)."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
from urbandp_process import run_urbandp

pytestmark = pytest.mark.system


def _readings(tmp_path: Path, scale: float, every: int) -> Path:
    """The synthetic readings, every ``every``-th value multiplied by ``scale``."""
    path = tmp_path / "sens.csv"
    made = run_urbandp("sensing", "synth", str(path), "--readings", "300", "--vehicles", "4", "--hours", "2")
    assert made.returncode == 0, made.stderr
    frame = pl.read_csv(path)
    scaled = frame.with_row_index("i").with_columns(
        pl.when(pl.col("i") % every == 0)
        .then(pl.col("value") * scale)
        .otherwise(pl.col("value"))
        .alias("value")
    )
    out = tmp_path / f"sens-{scale:g}.csv"
    scaled.drop("i").write_csv(out)
    return out


def _all_finite(models: pl.DataFrame) -> bool:
    return all(
        math.isfinite(v) for c in models.columns if models[c].dtype.is_numeric() for v in models[c].to_list()
    )


@pytest.mark.parametrize(("scale", "every", "quarantined"), [(1e300, 3, 100), (1e97, 1, 0)])
def test_extreme_readings_are_quarantined_or_modelled_finitely(
    tmp_path: Path, scale: float, every: int, quarantined: int
) -> None:
    """Beyond +-1e100 a reading is quarantined with its reason; below, the models stay finite (1e97 x 300)."""
    data = _readings(tmp_path, scale, every)
    out = tmp_path / "interp"
    res = run_urbandp("sensing", "interpolate", str(data), "--out", str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    models = pl.read_csv(out / "models.csv")
    assert models.height > 0 and _all_finite(models), models
    # interpolate is not a release (a fit of the true readings): its quarantine sits in its own folder
    q = pl.read_csv(out / "quarantine.csv") if quarantined else None
    if q is not None:
        assert q.height == quarantined and set(q["reason"]) == {
            "value beyond +-1e+100 (no sensor reads it; its square would overflow the model)"
        }
