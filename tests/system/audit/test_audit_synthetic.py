"""Every attack run against urbandp's own count release and against the Data61 2016 method, on synthetic taps.

Releases here go through :func:`urbandp.counts._table_release._release_counts`; where a test needs a *seeded* release
(to make a statistical check reproducible) it injects a numpy noise source defined in this test file -- simulation
only, unreachable from the CLI.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from urbandp._privacy.report import write_privacy_json
from urbandp._synth.taps import CIRCULAR_QUAY_3, MANLY, generate_taps
from urbandp.audit._differencing_attack import differencing_attack
from urbandp.audit._tables import read_published_table
from urbandp.cli import app
from urbandp.counts import CountDomain, CountRelease, CountsReleaseSpec, PrivacyUnit
from urbandp.counts._aggregate import joint_from_events
from urbandp.counts._marginals import time_marginal
from urbandp.counts._table_release import _release_counts
from urbandp.counts._write import release_tables, write_tables

pytestmark = pytest.mark.system
RUN = CliRunner()
ROUTES = [f"ferry:{MANLY}>{CIRCULAR_QUAY_3}", f"ferry:{CIRCULAR_QUAY_3}>{MANLY}"]


class SeededNoiseForSimulation:
    """numpy noise with a seed: NOT private, for reproducible simulated releases in tests only."""

    is_private = False

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def laplace(self, values: np.ndarray, scale: float) -> np.ndarray:
        return np.asarray(values, float) + self.rng.laplace(0.0, scale, np.shape(values))

    def discrete_laplace(self, values: np.ndarray, scale: float) -> np.ndarray:
        a = math.exp(-1.0 / scale)  # two-sided geometric = difference of two geometrics
        shape = np.shape(values)
        return (
            np.asarray(values, np.int64) + self.rng.geometric(1 - a, shape) - self.rng.geometric(1 - a, shape)
        )

    def gaussian(self, values: np.ndarray, scale: float) -> np.ndarray:  # pragma: no cover - unused
        raise NotImplementedError

    discrete_gaussian = gaussian


def _write(rel: CountRelease, domain: CountDomain, out: Path) -> None:
    """The release's tables and privacy.json in the folder ``out``, where the audit commands read them."""
    out.mkdir()
    write_tables(release_tables(rel, domain), out, "csv")
    write_privacy_json(out, rel.privacy)


def cli(*args: str) -> dict[str, object]:
    res = RUN.invoke(app, list(args))
    assert res.exit_code == 0, res.output
    assert res.stdout.count("\n") == 1  # exactly one JSON object on stdout
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def world() -> tuple[CountDomain, np.ndarray]:
    s = generate_taps(trips_per_day=2000, ferry_trips_per_day=3000, days=7, seed=3)
    domain = CountDomain.from_json(s.domain)
    return domain, joint_from_events(s.events, domain, PrivacyUnit("event")).counts


def test_noise_scale_within_ten_percent_from_500_pairs(
    world: tuple[CountDomain, np.ndarray], tmp_path: Path
) -> None:
    """Seeded discrete-Laplace(3) release; MLE sd ~ 0.034 b for 500 pairs, so 10% is ~3 sd (and seeded)."""
    domain, raw = world
    rel = _release_counts(raw, domain, CountsReleaseSpec(noise_scale=3.0), noise=SeededNoiseForSimulation(1))
    _write(rel, domain, tmp_path / "rel")
    pairs = tmp_path / "pairs.csv"
    out = cli(
        "audit",
        "pairs",
        "--table",
        str(tmp_path / "rel" / "joint.csv"),
        "--route",
        ROUTES[0],
        "--route",
        ROUTES[1],
        "--out",
        str(pairs),
    )
    assert out["pairs"] >= 500 and out["pairs_with_a_missing_side"] == 0
    pl.read_csv(pairs).head(500).write_csv(pairs)
    res = cli(
        "audit",
        "noise-scale",
        "--pairs",
        str(pairs),
        "--model",
        "discrete",
        "--report",
        str(tmp_path / "audit"),
    )
    assert res["n_pairs"] == 500
    assert abs(float(res["scale"]) - 3.0) <= 0.3
    assert float(res["low"]) <= 3.0 <= float(res["high"])
    assert res["raw_equality_plausible"] is True
    assert (tmp_path / "audit" / "noise-scale.md").is_file() and (
        tmp_path / "audit" / "noise-scale.png"
    ).is_file()


def test_every_attack_against_urbandp_release(world: tuple[CountDomain, np.ndarray], tmp_path: Path) -> None:
    domain, raw = world
    config = CountsReleaseSpec(noise_scale=3.0, suppress_below=10, sampling="dense")
    rel = _release_counts(raw, domain, config)  # OpenDP noise, as the CLI does
    _write(rel, domain, tmp_path / "rel")
    joint = str(tmp_path / "rel" / "joint.csv")
    pairs = cli("audit", "pairs", "--table", joint, "--route", ROUTES[0], "--out", str(tmp_path / "p.csv"))
    assert (
        pairs["pairs_with_a_missing_side"] > 0 and "biased" in pairs["warning"]
    )  # suppression selects pairs
    zs = cli("audit", "zero-skipping", "--table", joint, "--threshold", "10", "--report", str(tmp_path / "a"))
    assert zs["vulnerable"] is False and zs["zeros_may_be_skipped"] is False
    assert zs["delta_lower_bound_exact"] == 0.0
    assert zs["max_likelihood_ratio_per_unit"] == pytest.approx(math.exp(1 / 3))
    diff = cli(
        "audit",
        "differencing",
        "--joint",
        joint,
        "--marginal",
        str(tmp_path / "rel" / "time.csv"),
        "--max-cells",
        "100000",
        "--report",
        str(tmp_path / "a"),
    )
    assert diff["gain_beyond_noise"] is False
    # each estimate is exactly the sum of the noisy values the DP joint already held for the hidden cells
    hidden = time_marginal(np.where(rel.suppressed, rel.joint, 0.0), domain)
    days, taps, bins, modes = domain.days, domain.taps, domain.bins, domain.modes
    cells = diff["cells"]
    assert len(cells) > 100
    for c in cells:
        expect = hidden[
            days.index(c["day"]), taps.index(c["tap"]), bins.index(c["bin"]), modes.index(c["mode"])
        ]
        assert c["estimate"] == expect
    for name in ("zero-skipping.md", "zero-skipping.png", "differencing.md", "differencing.png"):
        assert (tmp_path / "a" / name).is_file()


def test_every_attack_against_data61_release(world: tuple[CountDomain, np.ndarray], tmp_path: Path) -> None:
    domain, raw = world
    rel = _release_counts(raw, domain, CountsReleaseSpec(method="data61-2016", noise_scale=1.4))
    _write(rel, domain, tmp_path / "rel")
    joint = str(tmp_path / "rel" / "joint.csv")
    zs = cli("audit", "zero-skipping", "--table", joint, "--threshold", "18")
    assert zs["vulnerable"] is True and zs["declared_method"] == "data61-2016"
    assert zs["delta_lower_bound_theorem1"] == math.exp(-17 / 1.4) / 2.8
    diff = cli("audit", "differencing", "--joint", joint, "--marginal", str(tmp_path / "rel" / "time.csv"))
    assert diff["gain_beyond_noise"] is True and diff["groups_with_recoverable_hidden_count"] > 0


def test_differencing_interval_coverage_over_simulated_data61_releases(
    world: tuple[CountDomain, np.ndarray],
) -> None:
    """20 seeded Data61 releases; true hidden total of each (mode, day, tap, bin) group is known.

    Groups whose published joint cells all have raw counts >= t + 10 p are used (for them the chance that noise
    decided visibility is <= exp(-10)/2, so visible cells' noise is not selected). Coverage of the 95% intervals
    is compared with Binomial(N, 0.95): it must be >= 0.95 - 3 sd. (With the rounding allowance it is higher.)
    """
    domain, raw = world
    p, t = 1.4, 18.0
    truth_time = time_marginal(raw, domain)
    hits = total = 0
    for seed in range(20):
        rel = _release_counts(
            raw,
            domain,
            CountsReleaseSpec(method="data61-2016", noise_scale=p),
            noise=SeededNoiseForSimulation(100 + seed),
        )
        tables = release_tables(rel, domain)
        with tempfile.TemporaryDirectory() as d:
            tables["joint"].write_csv(Path(d) / "j.csv")
            tables["time"].write_csv(Path(d) / "t.csv")
            res = differencing_attack(
                read_published_table(Path(d) / "j.csv"),
                read_published_table(Path(d) / "t.csv"),
                scale=p,
                include_all=True,
                max_cells=10**6,
            )
        visible = rel.joint > 0
        vis_raw_sum = time_marginal(np.where(visible, raw, 0), domain)
        for c in res["cells"]:
            i = (domain.days.index(c["day"]), domain.taps.index(c["tap"]), domain.bins.index(c["bin"]))
            m = domain.modes.index(c["mode"])
            places = domain.place_mode_index() == m
            if np.where(visible[i][places], raw[i][places], 10**9).min() < t + 10 * p:
                continue
            hidden_truth = truth_time[i][m] - vis_raw_sum[i][m]
            total += 1
            hits += c["low"] <= hidden_truth <= c["high"]
    print(f"coverage {hits}/{total} = {hits / total:.4f}")
    assert total > 500
    assert hits / total >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / total)
