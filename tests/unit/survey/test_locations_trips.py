"""Point perturbation, escape analysis, OD trips and SSD."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from urbandp.survey import _escape as escape
from urbandp.survey import _locations as locations
from urbandp.survey import _ssd as ssd
from urbandp.survey import _trips as trips


def test_planar_laplace_radius_is_gamma2_and_angle_uniform() -> None:
    """Radius ~ Gamma(2, 1/epsilon) (Andres et al. 2013); KS p-value threshold 1e-7 per test (OpenDP draws are
    unseeded: a chance failure 2e-7 a run; a radius law 20% off its scale gives p < 1e-30 at n = 4,000)."""
    eps = 0.02
    east, north = locations.planar_laplace_offsets(4000, eps)
    r = np.hypot(east, north)
    assert stats.kstest(r, stats.gamma(2, scale=1 / eps).cdf).pvalue > 1e-7
    assert stats.kstest(np.arctan2(north, east), stats.uniform(-math.pi, 2 * math.pi).cdf).pvalue > 1e-7
    # and it is not Exponential(1/eps) (what a single |Laplace| would give): the test can fail
    assert stats.kstest(r, stats.expon(scale=1 / eps).cdf).pvalue < 1e-6


def test_per_axis_epsilon_per_metre_from_opendp() -> None:
    cost = locations.perturbation_epsilon(None, 200.0)
    assert cost["epsilon_per_metre"] == pytest.approx(1 / 200.0, rel=1e-9)


def test_bbox_is_the_reports_twin_cities_box() -> None:
    box = locations.BoundingBox.parse("44.1,-94.3,46.1,-91.0")
    lat, lon = box.clamp(np.array([44.97, 50.0]), np.array([-93.2, -93.2]))
    assert (lat.tolist(), lon.tolist()) == ([44.97, 46.1], [-93.2, -93.2])


def test_escape_grows_with_bn_and_collapses_across_n() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.random(4000), rng.random(4000)
    bns = [0.03, 0.3, 3.0]
    res = escape.sweep(x, y, [10, 25, 50], bns, layouts=("uniform",), runs=4, seed=1)
    by_n: dict[int, list[float]] = {}
    for r in res:
        by_n.setdefault(r.n, []).append(r.escape_share)
    for shares in by_n.values():
        assert shares == sorted(shares) and shares[-1] > 0.9 and shares[0] < 0.1
    for i in range(len(bns)):  # collapse: same b*N, same escape share whatever N (Monte Carlo spread ~0.01)
        col = [by_n[n][i] for n in by_n]
        assert max(col) - min(col) < 0.03
    # while at a fixed b (not b*N) the shares differ widely across N
    fixed_b = [escape.grid_escape(x, y, n, 0.006, runs=2).escape_share for n in (10, 50)]
    assert fixed_b[1] - fixed_b[0] > 0.3


def test_polygon_escape_with_shapely() -> None:
    from shapely.geometry import box

    polys = [box(0, 0, 1, 1), box(1, 0, 2, 1)]
    rng = np.random.default_rng(0)
    x, y = rng.random(2000) * 2, rng.random(2000)
    small = escape.polygon_escape(x, y, polys, 0.001, runs=2)
    large = escape.polygon_escape(x, y, polys, 0.3, runs=2)
    assert small.escape_share < 0.01 < 0.3 < large.escape_share


def test_od_epsilon_worked_numbers() -> None:
    assert round(trips.od_epsilon(2500, 0.5)) == 16
    assert round(trips.od_epsilon(19, 0.5)) == 6


def test_od_randomize_keeps_about_p_and_histogram_joint_preserves_better() -> None:
    rng = np.random.default_rng(0)
    o = rng.integers(0, 19, 20_000)
    d = (o + rng.integers(0, 3, 20_000)) % 19
    ro, rd = trips.od_randomize(o, d, 19, 0.5)
    kept = trips.utility(o, d, ro, rd, 19)["share_trips_kept"]
    expected = 0.5 + 0.5 / 361
    # OpenDP's bits are unseeded: 5 binomial sd (6e-7 a run; 4 sd failed 6e-5); a keep share 0.05 off is 14 sd
    assert abs(kept - expected) < 5 * math.sqrt(expected * (1 - expected) / o.size)
    ind = trips.utility(o, d, *trips.histogram_block_reporting(o, d, 0.5, joint=False), 19)
    joint = trips.utility(o, d, *trips.histogram_block_reporting(o, d, 0.5, joint=True), 19)
    assert joint["tv_joint"] < ind["tv_joint"] - 0.1
    assert ind["tv_from"] < 0.05 and ind["tv_to"] < 0.05


def test_ssd_keeps_endpoints_and_bounded_steps() -> None:
    t = np.linspace(0, 1, 30)
    xy = np.column_stack([t * 2000, np.sin(t * 6) * 300])
    out = ssd.perturb_trip(xy, epsilon=40.0, max_step=150.0)
    assert np.array_equal(out[0], xy[0]) and np.array_equal(out[-1], xy[-1])
    assert np.hypot(*np.diff(out[:-1], axis=0).T).max() <= 150.0 + 1e-9
    assert ssd.ssd_epsilon(4.0, 10) == {"per_point": 3.0, "per_trip": 30.0}
