"""The threshold ``--dry-run`` recommends holds: over 20 releases the noise-only cells are at most what it states.

Synthetic counts over a public domain of 28,800 cells, 300 of them non-zero (far above any threshold here), card-day
unit of k = 4 events at epsilon 1 (noise scale 4). A published cell whose raw count is 0 is counted from the data
owner's report (``published_cells_with_raw_zero``), never from the release. The number drawn per release is
Binomial(Z, P(X >= t)) over the Z raw-zero cells, so over 20 releases its sum is Binomial(20 Z, P). OpenDP's noise
takes no seed: the bounds below are that law's exact quantiles at 1e-7 and 1 - 1e-7 (a false failure under 3e-7 of
runs; normal bounds of 5 sd failed about 7e-6 of runs, the law being skewed at a mean of 19, and the lower one was
below 0).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats
from urbandp_process import owner_report

import urbandp as ud
from urbandp.counts._options import CountsReleaseSpec

pytestmark = pytest.mark.system
DAYS = [f"2016-08-{d:02d}" for d in range(1, 31)]
PLACES = [f"stop {i}" for i in range(5)]
DOMAIN = {"days": DAYS, "taps": ["on", "off"], "bin_minutes": 15, "places": {"bus": PLACES}}
CELLS = 30 * 2 * 96 * 5
NON_ZERO = 300
CARD = {"input_kind": "counts", "unit": "card-day", "max_events": 4, "epsilon": 1.0}


def _counts(root: Path) -> Path:
    rng = np.random.default_rng(3)
    cells = rng.choice(CELLS, NON_ZERO, replace=False)
    day, rest = np.divmod(cells, 2 * 96 * 5)
    tap, rest = np.divmod(rest, 96 * 5)
    b, place = np.divmod(rest, 5)
    path = root / "counts.csv"
    pl.DataFrame(
        {
            "mode": "bus",
            "day": [DAYS[i] for i in day],
            "tap": [("on", "off")[i] for i in tap],
            "bin": [f"{m // 60:02d}:{m % 60:02d}" for m in b * 15],
            "location": [PLACES[i] for i in place],
            "count": rng.integers(200, 2000, NON_ZERO),
        }
    ).write_csv(path)
    return path


def _noise_only(data: Path, out: Path, threshold: int) -> int:
    ud.counts.release(data, domain=DOMAIN, suppress_below=threshold, out=out, **CARD)  # type: ignore[arg-type]
    report = owner_report(out)
    assert report["non_zero_cells"] == NON_ZERO
    return int(report["published_cells_with_raw_zero"])


def test_noise_only_cells_over_20_releases_at_most_what_the_recommendation_states(tmp_path: Path) -> None:
    plan = ud.counts.dry_run(CountsReleaseSpec(domain=DOMAIN, **CARD))  # type: ignore[arg-type]
    advice = plan["suppression_advice"]
    assert isinstance(advice, dict) and advice["cells"] == CELLS and advice["noise_scale"] == 4.0
    t, stated = int(advice["recommended_suppress_below"]), float(advice["expected_noise_only_cells_at_most"])
    a = math.exp(-1 / 4)
    assert t == 39 and stated == pytest.approx(CELLS * a**t / (1 + a), rel=1e-12) and stated <= 1.0
    assert CELLS * a ** (t - 1) / (1 + a) > 1.0  # the smallest such threshold
    data = _counts(tmp_path)
    drawn = [_noise_only(data, tmp_path / f"rel{i}", t) for i in range(20)]
    zeros = CELLS - NON_ZERO
    assert sum(drawn) <= stats.binom.isf(1e-7, 20 * CELLS, stated / CELLS)  # at most what it states: 45
    assert sum(drawn) >= stats.binom.ppf(1e-7, 20 * zeros, a**t / (1 + a))  # and it is the law drawn: 1
    # the README's threshold 18 on this domain: the release states (and draws) about 180 noise-only cells
    rel18 = _noise_only(data, tmp_path / "at18", 18)
    suppression = json.loads((tmp_path / "at18" / "privacy.json").read_text())["suppression"]
    assert suppression["threshold_for_at_most_one_noise_only_cell"] == t
    p18 = a**18 / (1 + a)  # 178 expected
    assert stats.binom.ppf(1e-7, zeros, p18) <= rel18 <= stats.binom.isf(1e-7, zeros, p18)  # 113 to 251
    assert suppression["expected_noise_only_cells_at_most"] == pytest.approx(
        CELLS * a**18 / (1 + a), rel=1e-12
    )


def test_the_readme_recipe_uses_the_threshold_the_tool_recommends() -> None:
    """The README's count recipe (card-day, k = 4, epsilon 1 on `counts synth`'s domain) states the dry run's
    recommendation and uses it: one figure, from the code."""
    import re

    from urbandp._synth.taps import generate_taps

    domain = generate_taps(trips_per_day=0, ferry_trips_per_day=0, days=7, seed=0).domain
    plan = ud.counts.dry_run(CountsReleaseSpec(domain=domain, unit="card-day", max_events=4, epsilon=1.0))
    advice = plan["suppression_advice"]
    assert isinstance(advice, dict)
    t = advice["recommended_suppress_below"]
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    recipe = readme.split("urbandp counts synth --out taps/")[1].split("```")[0]
    assert (
        re.findall(r"--suppress-below (\d+)", recipe) == [str(t)]
        and f"recommended_suppress_below {t}" in recipe
    )
    assert t == 42


def test_the_command_states_the_advice_before_reading_data(tmp_path: Path) -> None:
    """``--dry-run`` reads no data (the input is an empty file) and prints the advice and, with a threshold, the
    ``suppression`` object the release would state: the same figures as the library's."""
    from urbandp_process import run_urbandp

    from urbandp._outputs import write_json

    domain = tmp_path / "domain.json"
    write_json(domain, DOMAIN)
    (tmp_path / "empty.csv").write_text("")
    res = run_urbandp("counts", "release", str(tmp_path / "empty.csv"), "--domain", str(domain),
                      "--input-kind", "counts", "--unit", "card-day", "--max-events", "4", "--epsilon", "1",
                      "--suppress-below", "18", "--out", str(tmp_path / "o"), "--dry-run")  # fmt: skip
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    assert plan["suppression_advice"]["recommended_suppress_below"] == 39
    assert plan["suppression"]["threshold_for_at_most_one_noise_only_cell"] == 39
    a = math.exp(-1 / 4)
    assert plan["suppression"]["expected_noise_only_cells_at_most"] == pytest.approx(CELLS * a**18 / (1 + a))
    assert not (tmp_path / "o").exists()
    assert res.stderr == (
        "urbandp: advice: --suppress-below 39 keeps the expected noise-only cells at most 1 (0.94 over 28,800 "
        "cells at noise scale 4, unit card-day (at most 4 events))\n"
    )


def test_the_advice_names_the_config_key_when_the_threshold_came_from_the_file(tmp_path: Path) -> None:
    """The advice is one library text with its parameter; the command renames it to the flag (above) or, for a
    threshold read from ``--config``, to the file's key, with the value as TOML writes it."""
    from typer.testing import CliRunner

    from urbandp._outputs import write_json
    from urbandp.cli import app

    domain, config = tmp_path / "domain.json", tmp_path / "c.toml"
    write_json(domain, DOMAIN)
    (tmp_path / "empty.csv").write_text("")
    config.write_text("[counts.release]\nsuppress_below = 18\n")
    res = CliRunner().invoke(app, ["counts", "release", str(tmp_path / "empty.csv"), "--domain", str(domain),
                                   "--input-kind", "counts", "--unit", "card-day", "--max-events", "4", "--epsilon",
                                   "1", "--config", str(config), "--out", str(tmp_path / "o"), "--dry-run"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert res.stderr == (
        f"urbandp: advice: suppress_below in {config} [counts.release] = 39 keeps the expected noise-only cells at "
        "most 1 (0.94 over 28,800 cells at noise scale 4, unit card-day (at most 4 events))\n"
    )
