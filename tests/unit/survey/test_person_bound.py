"""Surveys protected per person: a public bound on the trips released per person, the loss per person it gives,
the OD estimator's inverse of eq. (13) with intervals, and the clamping stretch of ``--bbox``.

GeoLife's busiest user made about 150 trips: at epsilon 6.44 per trip the loss per person was unbounded and not
stated. These tests pin the bound (which trips are kept, and that the choice reads only the person's own trips),
the composed loss (OpenDP's ``make_composition``), the estimator's exact arithmetic and its coverage on synthetic
trips whose truth is known.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import urbandp as ud
from urbandp._geodesy import WGS84
from urbandp._privacy.noise import ExactNoiseForTesting
from urbandp.errors import InvalidParameterError
from urbandp.survey._locations import BoundingBox
from urbandp.survey._trips import keep_per_person, od_epsilon, od_estimate, per_person_epsilon


def _exact() -> ud.Session:
    return ud.Session(noise=ExactNoiseForTesting(acknowledge_not_private=True))


def _trips() -> pl.DataFrame:
    """Person a made 6 trips (two identical), b 2, c 1; one trip names no person."""
    return pl.DataFrame(
        {
            "person": ["a", "a", "a", "a", "a", "a", "b", "b", "c", None],
            "o": ["1", "1", "2", "3", "4", "1", "2", "3", "4", "1"],
            "d": ["2", "2", "3", "4", "1", "3", "2", "1", "4", "1"],
        }
    )


def test_loss_per_person_is_the_composition_of_the_bound() -> None:
    """19 counties at p = 1/2: 5.8916 per trip (eq. 13), 4 trips per person compose to 23.5666 (OpenDP's map)."""
    assert od_epsilon(19, 0.5) == pytest.approx(5.8916442118257715, rel=1e-15)
    assert per_person_epsilon(19, 0.5, 4) == pytest.approx(23.56657684730309, rel=1e-15)
    assert per_person_epsilon(19, 0.5, 1) == pytest.approx(od_epsilon(19, 0.5), rel=1e-15)
    big = per_person_epsilon(2500, 0.5, 3)  # 6.25 M pairs: the same sum, without building the OpenDP map
    assert big == 3 * od_epsilon(2500, 0.5) and big == pytest.approx(3 * 15.65, abs=0.01)


def test_each_person_keeps_at_most_k_trips_chosen_from_their_own_trips() -> None:
    frame = _trips()
    key = ["o", "d", "n"]
    f = frame.with_columns(pl.int_range(pl.len()).over("person", "o", "d").alias("n"))
    kept = keep_per_person(f, "person", key, 2)
    per = f.filter(pl.Series(kept)).group_by("person").len().sort("person").rows()
    assert per == [("a", 2), ("b", 2), ("c", 1)]  # the trip without a person is not kept
    assert not kept[-1]
    # the choice reads only the person's own trips: other people's trips and the file order change nothing
    alone = f.filter(pl.col("person") == "a")
    kept_alone = keep_per_person(alone, "person", key, 2)
    assert (
        alone.filter(pl.Series(kept_alone))
        .sort("o", "d", "n")
        .equals(f.filter(pl.Series(kept) & (pl.col("person") == "a")).sort("o", "d", "n"))
    )
    rev = f.reverse()
    assert np.array_equal(keep_per_person(rev, "person", key, 2)[::-1], kept)
    # rows of one trip (trajectory points) are kept or dropped together
    points = pl.DataFrame({"person": ["a"] * 6, "trip": ["t1", "t1", "t2", "t2", "t3", "t3"]})
    mask = keep_per_person(points, "person", ["trip"], 2)
    assert mask.sum() == 4 and all(mask[i] == mask[i + 1] for i in (0, 2, 4))


def test_od_randomize_states_the_loss_per_person_and_drops_trips_over_the_bound() -> None:
    rel = ud.survey.od_randomize(
        _trips(), origin="o", dest="d", blocks=4, keep_probability=0.5, person="person",
        max_trips_per_person=3, session=_exact(),
    )  # fmt: skip
    priv = rel.privacy.to_dict()
    assert priv["unit"] == "person" and priv["differentially_private"] is False  # the exact test source
    assert priv["epsilon_per_trip"] == pytest.approx(2.8332133440562166, rel=1e-15)
    assert priv["epsilon"] == priv["epsilon_per_person"] == pytest.approx(8.499640032168651, rel=1e-15)
    assert (priv["max_trips_per_person"], priv["person_column"]) == (3, "person")
    assert rel.table.height == 3 + 2 + 1  # a: 3 of 6, b: 2, c: 1; the trip without a person is not released
    assert rel.owner["input_report.json"]["trips_dropped_over_max_trips_per_person"] == 3
    assert rel.owner["input_report.json"]["trips_dropped_missing_person"] == 1
    entry = priv["ledger"]["entries"][0]  # type: ignore[index]
    assert (entry["unit"], entry["epsilon"]) == ("person", priv["epsilon"])


def test_without_a_bound_the_loss_per_person_is_stated_unbounded() -> None:
    rel = ud.survey.od_randomize(
        _trips(), origin="o", dest="d", blocks=4, keep_probability=0.5, session=_exact()
    )
    priv = rel.privacy.to_dict()
    assert priv["unit"] == "trip" and priv["epsilon"] == priv["epsilon_per_trip"]
    assert priv.get("epsilon_per_person") is None
    assert str(priv["epsilon_per_person_reason"]).startswith("unbounded: no max_trips_per_person")
    assert rel.table.height == 10


@pytest.mark.parametrize("given", [{"person": "person"}, {"max_trips_per_person": 3}])
def test_person_and_bound_come_together(given: dict[str, object]) -> None:
    with pytest.raises(InvalidParameterError, match="give person and max_trips_per_person together") as err:
        ud.survey.od_randomize(_trips(), origin="o", dest="d", blocks=4, keep_probability=0.5, **given)  # type: ignore[arg-type]
    assert err.value.parameters == ("person", "max_trips_per_person")


def test_od_estimate_inverts_eq_13_exactly() -> None:
    """2 blocks (t = 4), p = 1/2, 4 trips all released as pair 0: b = 1/8, n_hat = (c - n b) / p."""
    est = od_estimate(np.zeros(4, dtype=np.int64), 2, 0.5)
    assert est["estimate"].tolist() == [7.0, -1.0, -1.0, -1.0]  # unbiased, unclipped; sums to n = 4
    a, b = 0.625, 0.125
    sd0 = math.sqrt(4 * a * (1 - a)) / 0.5  # plug-in n_hat clipped to [0, 4]: n_0 = 4
    sd1 = math.sqrt(4 * b * (1 - b)) / 0.5  # n_j = 0
    assert est["sd"].tolist() == pytest.approx([sd0, sd1, sd1, sd1], rel=1e-12)
    assert est["ci_low"][0] == pytest.approx(7 - 1.959963984540054 * sd0) and est["ci_high"][0] == 4.0


def test_od_estimate_intervals_cover_the_truth() -> None:
    """Coverage of the 95 % intervals on synthetic trips with known truth: 20 releases (OpenDP sampler) of 1,500
    trips over 6 blocks (36 pairs, skewed), p = 1/2. Expected about 0.95; required >= 0.9 over the 720 intervals
    (a binomial standard error of 0.008 at 0.95: the margin is six of them, so the test does not flake)."""
    rng = np.random.default_rng(7)  # the synthetic truth only; the release draws from OpenDP
    nb, n = 6, 1500
    weights = rng.dirichlet(np.full(nb * nb, 0.6))
    pairs = rng.choice(nb * nb, size=n, p=weights)
    truth = np.bincount(pairs, minlength=nb * nb)
    frame = pl.DataFrame({"o": (pairs // nb + 1).astype(str), "d": (pairs % nb + 1).astype(str)})
    covered = []
    for _ in range(20):
        rel = ud.survey.od_randomize(frame, origin="o", dest="d", blocks=nb, keep_probability=0.5)
        table = ud.survey.od_estimate(rel.table, origin="o", dest="d", blocks=nb, keep_probability=0.5)
        assert table.height == nb * nb and table.get_column("estimate").sum() == pytest.approx(n)
        lo, hi = table.get_column("ci_low").to_numpy(), table.get_column("ci_high").to_numpy()
        covered.append((lo <= truth) & (truth <= hi))
    coverage = float(np.mean(covered))
    assert coverage >= 0.9, coverage


def test_clamping_into_the_box_can_lengthen_a_distance() -> None:
    """Two points at 60 N two degrees of longitude apart (111.6 km), clamped into a box whose northern edge is
    46 N: 154.9 km (1.39x). privacy.json says so instead of claiming clamping never lengthens a distance."""
    lat, lon = BoundingBox(40.0, -10.0, 46.0, 10.0).clamp(np.array([60.0, 60.0]), np.array([0.0, 2.0]))
    before = WGS84.inv(0.0, 60.0, 2.0, 60.0)[2]
    after = WGS84.inv(lon[0], lat[0], lon[1], lat[1])[2]
    assert (round(before / 1000, 1), round(after / 1000, 1), round(after / before, 2)) == (111.6, 154.9, 1.39)
    homes = pl.DataFrame({"lat": [60.0, 45.0], "lon": [0.0, 1.0]})
    rel = ud.survey.perturb_points(homes, lat="lat", lon="lon", epsilon_per_metre=0.001, bbox="40,-10,46,10")
    rule = str(rel.privacy.to_dict()["bbox"]["rule"])  # type: ignore[index]
    assert "never lengthens" not in rule and "111.6 km" in rule and "154.9 km" in rule and "1.39x" in rule
    page = " ".join((Path(__file__).resolve().parents[3] / "docs" / "survey.md").read_text().split())
    assert (
        "(111.6 km)" in page and "154.9 km apart (1.39x)" in page and "never lengthens a distance" not in page
    )


def test_perturb_trajectories_keeps_at_most_k_trips_per_person(tmp_path: Path) -> None:
    from urbandp.survey._synth import write_survey

    write_survey(tmp_path, households=10, seed=0)
    points = pl.read_csv(tmp_path / "trajectories.csv").with_columns(
        pl.when(pl.col("trip") <= 4).then(pl.lit("a")).otherwise(pl.lit("b")).alias("person")
    )
    rel = ud.survey.perturb_trajectories(
        points, lat="lat", lon="lon", trip="trip", order="seq", epsilon=50, max_step_metres=1500, every=10,
        person="person", max_trips_per_person=2,
    )  # fmt: skip
    assert rel.table.get_column("trip").n_unique() == 3  # a: 2 of its 4 trips, b: its one trip
    priv = rel.privacy.to_dict()
    assert (priv["unit"], priv["max_trips_per_person"], priv["person_column"]) == ("person", 2, "person")
    assert str(priv["epsilon_per_person"]).startswith("at most 2 x epsilon_per_trip")
    assert rel.owner["input_report.json"]["rows_over_max_trips_per_person_or_without_person"] == 2 * 60


def test_a_bound_whose_loss_per_person_passes_the_limit_is_refused() -> None:
    """At p = 1/2 over 25 blocks (6.44 per trip) K = 15 gives 96.6 per person; K = 16 gives 103 > 100: refused,
    naming the bound (the survey commands have no --allow-meaningless-epsilon to point at)."""
    options: dict[str, object] = {"origin": "o", "dest": "d", "blocks": 25, "keep_probability": 0.5}
    options["person"] = "person"
    rel = ud.survey.od_randomize(_trips(), max_trips_per_person=15, **options)  # type: ignore[arg-type]
    assert rel.privacy.epsilon == pytest.approx(96.59025556650155, rel=1e-15)
    with pytest.raises(
        InvalidParameterError, match=r"max_trips_per_person x epsilon per trip \(16 x 6.439\)"
    ) as e:
        ud.survey.od_randomize(_trips(), max_trips_per_person=16, **options)  # type: ignore[arg-type]
    assert "use a smaller max_trips_per_person" in str(e.value) and "allow_meaningless" not in str(e.value)
    assert e.value.parameters == ("max_trips_per_person",)
