"""Zero-skipping and differencing attacks: paper numbers, decisions, and the Opal ferry example."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from urbandp.audit._differencing_attack import differencing_attack
from urbandp.audit._laplace_math import LaplaceSum, theorem5_halfwidth
from urbandp.audit._tables import PublishedTable, read_published_table
from urbandp.audit._zero_skipping_attack import (
    detection_probability,
    paper_detection_figure,
    zero_skipping_attack,
)


def test_theorem1_numbers_from_the_report() -> None:
    """Section 3: p ~ 1.4, t = 18: 'about 0.000002' (individual), '0.005' (group of 12)."""
    assert paper_detection_figure(1, 18, 1.4) == math.exp(-17 / 1.4) / 2.8
    assert round(paper_detection_figure(1, 18, 1.4), 6) == 0.000002
    assert round(paper_detection_figure(12, 18, 1.4), 3) == 0.005
    # exact probability of the distinguishing event; the report's '0.00004' for g = 5 matches this one
    assert detection_probability(5, 18, 1.4) == pytest.approx(4.64e-5, rel=1e-2)
    assert detection_probability(1, 18, 1.4) == 0.5 * math.exp(-17 / 1.4)


def test_zero_skipping_decisions() -> None:
    opal_like = np.array([34.0, 120.0, 19.0, 5000.0])
    d61 = zero_skipping_attack(opal_like, threshold=18, method="data61-2016", scale=1.4)
    assert d61["vulnerable"] is True
    assert d61["delta_lower_bound_theorem1"] == math.exp(-17 / 1.4) / 2.8
    unknown = zero_skipping_attack(opal_like, threshold=18, method="unknown", scale=None)
    assert unknown["zeros_may_be_skipped"] is True and unknown["delta_lower_bound_theorem1"] is None
    noisy_small = np.array([-3.0, 2.0, 40.0, np.nan])
    assert (
        zero_skipping_attack(noisy_small, threshold=18, method="unknown", scale=2.0)["zeros_may_be_skipped"]
        is False
    )
    ours = zero_skipping_attack(
        opal_like,
        threshold=18,
        method="auto",
        scale=2.0,
        privacy={"method": "urbandp", "zeros_perturbed": True, "epsilon": 0.5},
    )
    assert ours["vulnerable"] is False and ours["delta_lower_bound_exact"] == 0.0
    assert ours["max_likelihood_ratio_per_unit"] == math.exp(0.5)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_opal_secret_ferry_example(tmp_path: Path) -> None:
    """Section 4.1 / Appendix E: Manly 91 + Circular Quay 41 in the joint, 150 in the time-only table."""
    joint = read_published_table(
        _write(
            tmp_path / "j.csv",
            "mode,date,tap,time,loc,count\nferry,20160812,off,00:00,Manly Wharf,91\n"
            "ferry,20160812,off,00:00,Circular Quay No. 3 Wharf,41\n",
        )
    )
    marginal = read_published_table(
        _write(tmp_path / "m.csv", "mode,date,tap,time,count\nferry,20160812,off,00:00,150\n")
    )
    res = differencing_attack(joint, marginal, scale=1.4, alpha=0.05)
    (cell,) = res["cells"]
    assert cell["estimate"] == 18.0 and cell["n_noise_terms"] == 3
    a = LaplaceSum([1.4] * 3).central_halfwidth(0.05)
    # published counts are rounded integers: each of the 3 terms may be off by 1/2
    assert (cell["low"], cell["high"]) == (18.0 - a - 1.5, 18.0 + a + 1.5)
    assert a == pytest.approx(6.956, abs=1e-3)  # vs Theorem 5's 1.4 ln 5 = 2.25
    assert res["theorem5_halfwidth_three_terms"] == theorem5_halfwidth(1.4, 0.05)
    assert res["gain_beyond_noise"] is True


def test_junk_lines_are_quarantined(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "t.csv",
        "mode,date,tap,loc,count\nbus,20160814,on,2095,3317\nbus,20160814,on,2094,x\n"
        '<?xml version="1.0" encoding="utf-8"?>\n<result>Downloaded</result>\n',
    )
    pub = read_published_table(path)
    assert pub.table.height == 1 and pub.table.columns == ["mode", "day", "tap", "location", "count"]
    assert pub.quarantine["line"].to_list() == [3, 4, 5]
    assert "not a number" in pub.quarantine["reason"][0]


def test_parquet_tables_are_read_with_aliases(tmp_path: Path) -> None:
    import polars as pl

    path = tmp_path / "t.parquet"
    pl.DataFrame(
        {"mode": ["bus"], "date": [20160814], "tap": ["on"], "loc": ["2095"], "count": [3317]}
    ).write_parquet(path)
    pub = read_published_table(path)
    assert pub.table.columns == ["mode", "day", "tap", "location", "count"]
    assert pub.table["count"].to_list() == [3317.0] and pub.quarantine.height == 0


def _tables(joint_counts: np.ndarray, marginal_counts: np.ndarray) -> tuple[PublishedTable, PublishedTable]:
    """One joint cell per marginal group (a daily table against its location marginal: nothing hidden)."""
    import polars as pl

    keys = {"mode": ["bus"] * joint_counts.size, "location": [str(i) for i in range(joint_counts.size)]}
    empty = pl.DataFrame({"line": [], "raw": [], "reason": []})
    joint = pl.DataFrame({**keys, "day": ["2016-08-08"] * joint_counts.size, "count": joint_counts})
    marginal = pl.DataFrame({**keys, "count": marginal_counts})
    return PublishedTable(joint, empty, None), PublishedTable(marginal, empty, None)


def test_groups_flagged_by_noise_alone_are_no_gain() -> None:
    """4,000 groups, nothing hidden, independent Laplace(1.4) noise on both tables (numpy: a simulation only):
    about alpha/2 of the groups or fewer have an interval above 0 (the rounding allowance makes it fewer), which
    is what noise alone gives, so no gain is claimed; hide 30 in a tenth of the groups and it is."""
    rng = np.random.default_rng(5)
    truth = rng.integers(100, 5000, 4000).astype(float)
    joint = np.rint(truth + rng.laplace(0, 1.4, truth.size))
    marginal = np.rint(truth + rng.laplace(0, 1.4, truth.size))
    res = differencing_attack(*_tables(joint, marginal), scale=1.4, alpha=0.05)
    flagged = res["groups_with_recoverable_hidden_count"]
    assert isinstance(flagged, int) and 0 < flagged <= 4000 * 0.025
    assert res["expected_flagged_by_noise_alone_at_most"] == pytest.approx(100.0)
    assert res["gain_beyond_noise"] is False and "no evidence of hidden counts" in str(res["finding"])
    hidden = np.where(np.arange(truth.size) % 10 == 0, 30.0, 0.0)
    res = differencing_attack(*_tables(joint, marginal + hidden), scale=1.4, alpha=0.05)
    assert res["gain_beyond_noise"] is True and res["groups_with_recoverable_hidden_count"] > 400
    assert float(res["p_value_noise_alone"]) < 1e-12  # type: ignore[arg-type]


def test_the_three_reports_are_written_by_one_method() -> None:
    from urbandp.audit._api import AuditResult, DifferencingResult, NoiseScaleResult, ZeroSkippingResult

    results = (NoiseScaleResult, ZeroSkippingResult, DifferencingResult)
    assert all(r.write_report is AuditResult.write_report for r in results)
    assert [r.REPORT[0] for r in results] == ["noise-scale", "zero-skipping", "differencing"]
